#pragma once
#include <QTabWidget>

#include "train/RunConfig.h"

namespace strata::ui {

class DatasetPanel;
class DevicesPanel;
class ModelPanel;
class SchedulePanel;
class StrategyPanel;
class TrainingPanel;

// The configuration side of the window: the strategy, devices, dataset,
// model, training and schedule panels as tabs, wired to each other (the strategy
// limits the device choice, the global batch splits over the replicas, the
// dataset's shape checks the model). Turns a RunConfig into panel state and
// back; fields no panel edits survive the round trip.
class ConfigEditor : public QTabWidget {
  Q_OBJECT
public:
  explicit ConfigEditor(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  RunConfig config() const;
  // While a run is going the configuration cannot change; the tabs stay
  // browsable.
  void setLocked(bool locked);
  bool locked() const { return locked_; }

  StrategyPanel* strategyPanel() const { return strategy_; }
  DevicesPanel* devicesPanel() const { return devices_; }
  DatasetPanel* datasetPanel() const { return dataset_; }
  ModelPanel* modelPanel() const { return model_; }
  TrainingPanel* trainingPanel() const { return training_; }
  SchedulePanel* schedulePanel() const { return schedule_; }

signals:
  void edited();

private:
  StrategyPanel* strategy_;
  DevicesPanel* devices_;
  DatasetPanel* dataset_;
  ModelPanel* model_;
  TrainingPanel* training_;
  SchedulePanel* schedule_;
  RunConfig base_;  // the loaded config: name, base_dir and unedited fields
  bool loading_ = false;
  bool locked_ = false;
};

}  // namespace strata::ui
