#pragma once
#include <QWidget>

#include "train/RunConfig.h"

class QCheckBox;
class QSpinBox;

namespace strata::ui {

// The settings of a ParameterServer run, shown under the strategy list when
// it is chosen: how many parameter servers hold the variables, how many
// rounds a worker may run ahead (the staleness bound; unbounded = fully
// asynchronous) and the smallest piece a variable is split into. The
// workers are the Devices tab's replica devices. Saved in the project.
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

signals:
  void edited();

private:
  QSpinBox* servers_;
  QCheckBox* unbounded_;
  QSpinBox* staleness_;
  QSpinBox* min_shard_bytes_;
};

}  // namespace strata::ui
