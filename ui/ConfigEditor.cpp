#include "ConfigEditor.h"

#include <QScrollArea>
#include <QVBoxLayout>

#include "DatasetPanel.h"
#include "DevicesPanel.h"
#include "ModelPanel.h"
#include "SchedulePanel.h"
#include "StrategyPanel.h"
#include "TrainingPanel.h"

namespace strata::ui {

namespace {
QWidget* scrolled(QWidget* w) {
  auto* area = new QScrollArea;
  area->setWidget(w);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  return area;
}
}  // namespace

ConfigEditor::ConfigEditor(QWidget* parent)
    : QTabWidget(parent),
      strategy_(new StrategyPanel),
      devices_(new DevicesPanel),
      dataset_(new DatasetPanel),
      model_(new ModelPanel),
      training_(new TrainingPanel),
      schedule_(new SchedulePanel) {
  setObjectName("configEditor");
  // The strategy panel takes the height its rows need (it grows when the
  // parameter-server or mpirun settings show) and the device list the rest;
  // a short window scrolls the page rather than clip a row.
  auto* run_page = new QWidget;
  auto* run_layout = new QVBoxLayout(run_page);
  run_layout->setContentsMargins(0, 0, 0, 0);
  run_layout->addWidget(strategy_, 0);
  run_layout->addWidget(devices_, 1);
  addTab(scrolled(run_page), tr("Strategy && devices"));
  addTab(scrolled(dataset_), tr("Dataset"));
  addTab(model_, tr("Model"));
  addTab(scrolled(training_), tr("Training"));
  addTab(scrolled(schedule_), tr("Schedule"));

  connect(strategy_, &StrategyPanel::strategyChanged, devices_, &DevicesPanel::setStrategy);
  connect(strategy_, &StrategyPanel::parameterServerProcessesChanged, devices_, &DevicesPanel::setParameterServerProcesses);
  connect(training_, &TrainingPanel::globalBatchChanged, devices_, &DevicesPanel::setGlobalBatch);
  connect(dataset_, &DatasetPanel::inputChanged, model_, &ModelPanel::setInput);
  auto forward = [this] {
    if (!loading_) Q_EMIT edited();
  };
  connect(strategy_, &StrategyPanel::edited, this, forward);
  connect(devices_, &DevicesPanel::edited, this, forward);
  connect(dataset_, &DatasetPanel::edited, this, forward);
  connect(model_, &ModelPanel::edited, this, forward);
  connect(training_, &TrainingPanel::edited, this, forward);
  connect(schedule_, &SchedulePanel::edited, this, forward);
}

void ConfigEditor::setConfig(const RunConfig& config) {
  loading_ = true;
  base_ = config;
  // Order matters: devices need the strategy, and the model needs the
  // dataset's input shape before it checks itself.
  strategy_->setConfig(config);
  devices_->setConfig(config);
  training_->setConfig(config);
  schedule_->setConfig(config);
  dataset_->setConfig(config);
  model_->setConfig(config);
  loading_ = false;
}

RunConfig ConfigEditor::config() const {
  RunConfig c = base_;
  strategy_->applyTo(c);
  devices_->applyTo(c);
  dataset_->applyTo(c);
  model_->applyTo(c);
  training_->applyTo(c);
  schedule_->applyTo(c);
  return c;
}

void ConfigEditor::setLocked(bool locked) {
  locked_ = locked;
  for (int i = 0; i < count(); ++i) widget(i)->setEnabled(!locked);
}

}  // namespace strata::ui
