#pragma once
#include <QWidget>

#include "train/RunConfig.h"

class QCheckBox;
class QLabel;
class QRadioButton;
class QSpinBox;

namespace strata::ui {

// The settings of a ParameterServer run, shown under the strategy list when
// it is chosen: how many parameter servers hold the variables, how many
// rounds a worker may run ahead (the staleness bound; unbounded = fully
// asynchronous) and the smallest piece a variable is split into; saved in
// the project. Also where the run goes — worker threads in this process (one
// per device on the Devices tab) or mpirun ranks (the strategy panel then
// shows the processes and hosts) — which, like every launch setting, is not.
class ParameterServerSettings : public QWidget {
  Q_OBJECT
public:
  explicit ParameterServerSettings(QWidget* parent = nullptr);
  // Loading is not an edit: no edited() while the values are set.
  void setConfig(const StrategyConfig& config);
  void applyTo(StrategyConfig& config) const;
  QSpinBox* serversBox() const { return servers_; }
  QCheckBox* unboundedBox() const { return unbounded_; }
  QSpinBox* stalenessBox() const { return staleness_; }
  QSpinBox* minShardBytesBox() const { return min_shard_bytes_; }

  // Launch: in this process (the default) or as mpirun ranks. The mpirun
  // choice is disabled, with `reason` as its tooltip, when reason is not
  // empty (no MPI build, no mpirun).
  void setProcessesUnavailableReason(const QString& reason);
  bool acrossProcesses() const;
  void setAcrossProcesses(bool on);
  QRadioButton* inProcessButton() const { return in_process_; }
  QRadioButton* processesButton() const { return processes_; }

signals:
  // A project setting changed.
  void edited();
  // The launch choice changed (not a project edit).
  void acrossProcessesChanged(bool on);

private:
  QSpinBox* servers_;
  QCheckBox* unbounded_;
  QSpinBox* staleness_;
  QSpinBox* min_shard_bytes_;
  QRadioButton* in_process_;
  QRadioButton* processes_;
  QLabel* note_;
};

}  // namespace strata::ui
