#pragma once
#include <QWidget>

#include "MultiWorkerLaunch.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace strata::ui {

// The launch settings of a run across processes, shown under the strategy
// list when MultiWorkerMirrored is chosen, or ParameterServer as processes:
// worker processes, the hosts or a hostfile, oversubscription. The devices
// tab picks each worker's replica devices (strata-run --devices). One panel
// for both, so the hosts typed for one strategy serve the other.
class MultiWorkerPanel : public QWidget {
  Q_OBJECT
public:
  explicit MultiWorkerPanel(QWidget* parent = nullptr);
  MultiWorkerOptions options() const;
  void setOptions(const MultiWorkerOptions& options);
  QSpinBox* processesBox() const { return processes_; }
  QLineEdit* hostsEdit() const { return hosts_; }
  QLineEdit* hostfileEdit() const { return hostfile_; }
  // 0: a multi-worker run (every rank a worker); else a parameter-server run
  // with that many servers, which mpirun starts as ranks of their own.
  void setParameterServers(int servers);
  QString noteText() const;

signals:
  void edited();

private:
  QSpinBox* processes_;
  QLineEdit* hosts_;
  QLineEdit* hostfile_;
  QCheckBox* oversubscribe_;
  QLabel* title_;
  QLabel* note_;
  int servers_ = 0;
};

}  // namespace strata::ui
