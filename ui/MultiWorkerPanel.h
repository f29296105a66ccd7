#pragma once
#include <QWidget>

#include "MultiWorkerLaunch.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace strata::ui {

// The launch settings of a multi-worker run, shown under the strategy list
// when MultiWorkerMirrored is chosen: processes (mpirun -np), the hosts or a
// hostfile, oversubscription. The devices tab picks each worker's replica
// devices (strata-run --devices).
class MultiWorkerPanel : public QWidget {
  Q_OBJECT
public:
  explicit MultiWorkerPanel(QWidget* parent = nullptr);
  MultiWorkerOptions options() const;
  void setOptions(const MultiWorkerOptions& options);
  QSpinBox* processesBox() const { return processes_; }
  QLineEdit* hostsEdit() const { return hosts_; }
  QLineEdit* hostfileEdit() const { return hostfile_; }

signals:
  void edited();

private:
  QSpinBox* processes_;
  QLineEdit* hosts_;
  QLineEdit* hostfile_;
  QCheckBox* oversubscribe_;
  QLabel* note_;
};

}  // namespace strata::ui
