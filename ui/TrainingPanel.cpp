#include "TrainingPanel.h"

#include "FormFields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSpinBox>

namespace strata::ui {


TrainingPanel::TrainingPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  epochs_ = int_field(1, 100000, "epochs", this);
  batch_ = int_field(1, 1 << 20, "globalBatch", this);
  optimizer_ = new QComboBox(this);
  optimizer_->setObjectName("optimizer");
  optimizer_->addItem("Adam", "adam");
  optimizer_->addItem("SGD", "sgd");
  lr_ = number_field("learningRate", this);
  // The project's name: the window title, run history and exported files.
  name_ = new QLineEdit(this);
  name_->setObjectName("projectName");
  form->addRow(tr("Project name"), name_);
  form->addRow(new QLabel(tr("<b>Training</b>"), this));
  form->addRow(tr("Epochs"), epochs_);
  form->addRow(tr("Global batch"), batch_);
  form->addRow(tr("Optimizer"), optimizer_);
  form->addRow(tr("Learning rate"), lr_);

  // The optimizers' own rows are rows of this form, shown or hidden with
  // the optimizer, so their fields line up with every other field (a nested
  // form had a label column of its own).
  momentum_ = new QDoubleSpinBox(this);
  momentum_->setRange(0.0, 0.999);
  momentum_->setDecimals(3);
  momentum_->setSingleStep(0.05);
  nesterov_ = new QCheckBox(tr("Nesterov"), this);
  form->addRow(tr("Momentum"), momentum_);
  form->addRow(QString(), nesterov_);
  sgd_rows_ = {momentum_, nesterov_};

  beta1_ = new QDoubleSpinBox(this);
  beta2_ = new QDoubleSpinBox(this);
  for (auto* b : {beta1_, beta2_}) {
    b->setRange(0.0, 0.99999);
    b->setDecimals(5);
    b->setSingleStep(0.001);
  }
  epsilon_ = number_field("epsilon", this);
  form->addRow(tr("β₁"), beta1_);
  form->addRow(tr("β₂"), beta2_);
  form->addRow(tr("ε"), epsilon_);
  adam_rows_ = {beta1_, beta2_, epsilon_};
  form_ = form;

  seed_ = new QLineEdit(this);
  seed_->setObjectName("seed");
  seed_->setValidator(new QRegularExpressionValidator(QRegularExpression("[0-9]{1,19}"), seed_));
  threads_ = int_field(0, 1024, "threads", this);
  threads_->setSpecialValueText(tr("all cores"));
  max_steps_ = int_field(0, 1 << 30, "maxSteps", this);
  max_steps_->setSpecialValueText(tr("whole dataset"));
  prefetch_ = int_field(0, 64, "prefetch", this);
  shuffle_ = new QCheckBox(tr("Shuffle every epoch"), this);
  drop_remainder_ = new QCheckBox(tr("Drop the last partial batch"), this);
  form->addRow(tr("Seed"), seed_);
  form->addRow(tr("CPU threads"), threads_);
  form->addRow(tr("Steps per epoch (max)"), max_steps_);
  form->addRow(tr("Prefetch batches"), prefetch_);
  form->addRow(QString(), shuffle_);
  form->addRow(QString(), drop_remainder_);
  record_timeline_ = new QCheckBox(tr("Record the step timeline"), this);
  record_timeline_->setObjectName("recordTimeline");
  record_timeline_->setToolTip(
      tr("Where each replica's step time goes: data, forward, backward, collectives, optimizer.\n"
         "Shown live in the Timeline tab; a saved project's run folder gets trace.json,\n"
         "which opens in Perfetto (ui.perfetto.dev) and chrome://tracing."));
  form->addRow(QString(), record_timeline_);
  device_lanes_ = new QComboBox(this);
  device_lanes_->setObjectName("deviceLanes");
  device_lanes_->addItem(tr("in bursts of 20 steps"), int(trace::DeviceLanes::Sampled));
  device_lanes_->addItem(tr("in every step"), int(trace::DeviceLanes::EveryStep));
  device_lanes_->addItem(tr("off (the host's lanes only)"), int(trace::DeviceLanes::Off));
  device_lanes_->setToolTip(
      tr("What each GPU ran, timed by events in its stream, on a lane under its replica's.\n"
         "Bursts of 20 steps come four times a second at most.\n"
         "Each timed step costs the GPU a few microseconds: on steps of a fraction of a\n"
         "millisecond, bursts keep that under a percent; every step shows them all."));
  device_lanes_->setEnabled(false);
  connect(record_timeline_, &QCheckBox::toggled, device_lanes_, &QWidget::setEnabled);
  form->addRow(tr("GPU device lanes"), device_lanes_);
  form->addRow(tr("Loss"), new QLabel(tr("sparse categorical cross-entropy (from logits)"), this));

  auto changed = [this] {
    if (!loading_) Q_EMIT edited();
  };
  for (auto* s : {epochs_, batch_, threads_, max_steps_, prefetch_})
    connect(s, &QSpinBox::valueChanged, this, changed);
  for (auto* d : {momentum_, beta1_, beta2_}) connect(d, &QDoubleSpinBox::valueChanged, this, changed);
  for (auto* e : {lr_, epsilon_, name_, seed_}) connect(e, &QLineEdit::textEdited, this, changed);
  for (auto* c : {nesterov_, shuffle_, drop_remainder_}) connect(c, &QCheckBox::toggled, this, changed);
  connect(optimizer_, &QComboBox::currentIndexChanged, this, [this, changed] {
    updateOptimizerRows();
    changed();
  });
  connect(batch_, &QSpinBox::valueChanged, this, [this](int v) { Q_EMIT globalBatchChanged(v); });
  updateOptimizerRows();
}

void TrainingPanel::updateOptimizerRows() {
  const QString type = optimizer_->currentData().toString();
  for (QWidget* field : sgd_rows_) form_->setRowVisible(field, type == "sgd");
  for (QWidget* field : adam_rows_) form_->setRowVisible(field, type == "adam");
}

void TrainingPanel::setConfig(const RunConfig& config) {
  loading_ = true;
  loaded_ = config;
  const TrainingConfig& t = config.training;
  name_->setText(QString::fromStdString(config.name));
  epochs_->setValue(t.epochs);
  batch_->setValue(static_cast<int>(t.batch_size));
  const int idx = optimizer_->findData(QString::fromStdString(t.optimizer.type));
  optimizer_->setCurrentIndex(idx < 0 ? 0 : idx);
  lr_->setText(QString::number(t.optimizer.learning_rate, 'g', 6));
  momentum_->setValue(t.optimizer.momentum);
  nesterov_->setChecked(t.optimizer.nesterov);
  beta1_->setValue(t.optimizer.beta_1);
  beta2_->setValue(t.optimizer.beta_2);
  epsilon_->setText(QString::number(t.optimizer.epsilon, 'g', 6));
  seed_->setText(QString::number(t.seed));
  threads_->setValue(t.threads);
  max_steps_->setValue(static_cast<int>(t.max_steps_per_epoch));
  prefetch_->setValue(t.prefetch);
  shuffle_->setChecked(t.shuffle);
  drop_remainder_->setChecked(t.drop_remainder);
  updateOptimizerRows();
  loading_ = false;
  Q_EMIT globalBatchChanged(t.batch_size);
}

void TrainingPanel::applyTo(RunConfig& config) const {
  // An emptied name field keeps the name the project had.
  const QString name = name_->text().trimmed();
  config.name = name.isEmpty() ? loaded_.name : name.toStdString();
  TrainingConfig& t = config.training;
  t.loss = loaded_.training.loss;
  t.from_logits = loaded_.training.from_logits;
  t.epochs = epochs_->value();
  t.batch_size = batch_->value();
  t.optimizer.type = optimizer_->currentData().toString().toStdString();
  bool ok = false;
  const float lr = lr_->text().toFloat(&ok);
  t.optimizer.learning_rate = ok ? lr : loaded_.training.optimizer.learning_rate;
  t.optimizer.momentum = static_cast<float>(momentum_->value());
  t.optimizer.nesterov = nesterov_->isChecked();
  config.trace.enabled = record_timeline_->isChecked();
  config.trace.device_lanes = static_cast<trace::DeviceLanes>(device_lanes_->currentData().toInt());
  t.optimizer.beta_1 = static_cast<float>(beta1_->value());
  t.optimizer.beta_2 = static_cast<float>(beta2_->value());
  const float eps = epsilon_->text().toFloat(&ok);
  t.optimizer.epsilon = ok ? eps : loaded_.training.optimizer.epsilon;
  const qulonglong seed = seed_->text().toULongLong(&ok);
  t.seed = ok ? seed : loaded_.training.seed;
  t.threads = threads_->value();
  t.max_steps_per_epoch = max_steps_->value();
  t.prefetch = prefetch_->value();
  t.shuffle = shuffle_->isChecked();
  t.drop_remainder = drop_remainder_->isChecked();
}

}  // namespace strata::ui
