#pragma once
#include <QStringList>
#include <QWidget>
#include <string>
#include <vector>

#include "train/RunConfig.h"

class QLabel;
class QListWidget;
class QListWidgetItem;

namespace strata::ui {

// The replica devices: every logical CPU device (one per core, plus extra
// logical ones that share cores so replica counts can be tried on small
// machines) and the GPUs the engine reports. Shows the replica count and
// the per-replica batch the global batch splits into.
class DevicesPanel : public QWidget {
  Q_OBJECT
public:
  explicit DevicesPanel(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;
  QStringList selectedDevices() const;
  void setSelectedDevices(const QStringList& devices);
  int replicaCount() const { return static_cast<int>(selectedDevices().size()); }
  QString summary() const;

public slots:
  void setStrategy(const QString& name);
  void setGlobalBatch(qint64 batch);
  // ParameterServer as mpirun processes: every worker process trains on one
  // device, so one is chosen, as for OneDevice.
  void setParameterServerProcesses(bool on);

signals:
  void edited();

private:
  void onItemChanged(QListWidgetItem* item);
  void updateSummary();
  // One device at most: OneDevice, or parameter-server worker processes.
  bool singleDevice() const;

  QListWidget* list_;
  QLabel* notes_;  // why there is no GPU; a bad simulated-device setting
  QLabel* summary_;
  QString strategy_ = "one_device";
  qint64 global_batch_ = 0;
  bool ps_processes_ = false;
  bool updating_ = false;
};

}  // namespace strata::ui
