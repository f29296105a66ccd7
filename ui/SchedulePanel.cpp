#include "SchedulePanel.h"

#include "FormFields.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

namespace strata::ui {

namespace {
template <typename W>
W* named(W* w, const char* name) {
  w->setObjectName(name);
  return w;
}
// " epoch" after 1, " epochs" otherwise ("1 epochs" reads wrong).
QSpinBox* epochs(int lo, const char* name) {
  auto* s = int_field(lo, 100000, name);
  auto suffix = [s](int v) { s->setSuffix(v == 1 ? QObject::tr(" epoch") : QObject::tr(" epochs")); };
  QObject::connect(s, &QSpinBox::valueChanged, s, suffix);
  suffix(s->value());
  return s;
}
QDoubleSpinBox* fraction(double lo, double hi, double step, const char* name) {
  auto* s = named(new QDoubleSpinBox, name);
  s->setRange(lo, hi);
  s->setDecimals(3);
  s->setSingleStep(step);
  return s;
}
QComboBox* monitor(const char* name) {
  auto* c = named(new QComboBox, name);
  for (const char* m : {"val_loss", "val_accuracy", "loss", "accuracy"}) c->addItem(m, m);
  return c;
}
QWidget* rows(QFormLayout*& form) {
  auto* w = new QWidget;
  form = new QFormLayout(w);
  form->setContentsMargins(0, 0, 0, 0);
  return w;
}
double read(const QLineEdit* e, double fallback) {
  bool ok = false;
  const double v = e->text().toDouble(&ok);
  return ok ? v : fallback;
}
void select(QComboBox* box, const std::string& value) {
  const int i = box->findData(QString::fromStdString(value));
  box->setCurrentIndex(i < 0 ? 0 : i);
}
}  // namespace

SchedulePanel::SchedulePanel(QWidget* parent) : QWidget(parent) {
  auto* page = new QVBoxLayout(this);

  auto* schedule = new QGroupBox(tr("Learning-rate schedule"), this);
  auto* form = new QFormLayout(schedule);
  type_ = named(new QComboBox, "lrSchedule");
  type_->addItem(tr("Constant"), "constant");
  type_->addItem(tr("Step decay"), "step");
  type_->addItem(tr("Exponential decay"), "exponential");
  type_->addItem(tr("Cosine decay"), "cosine");
  warmup_ = fraction(0, 1e4, 0.5, "warmupEpochs");
  warmup_->setDecimals(2);
  warmup_->setSpecialValueText(tr("none"));
  warmup_->setSuffix(tr(" epochs"));
  warmup_->setToolTip(tr("Ramp the rate up linearly from near 0 over these epochs first"));
  form->addRow(tr("Schedule"), type_);
  form->addRow(tr("Warm-up"), warmup_);
  QFormLayout* f = nullptr;
  step_rows_ = rows(f);
  step_every_ = epochs(1, "stepEvery");
  step_factor_ = fraction(0.001, 1, 0.05, "stepFactor");
  f->addRow(tr("Every"), step_every_);
  f->addRow(tr("Multiply by"), step_factor_);
  form->addRow(step_rows_);
  exponential_rows_ = rows(f);
  decay_rate_ = fraction(0.001, 1, 0.01, "decayRate");
  f->addRow(tr("Decay per epoch"), decay_rate_);
  form->addRow(exponential_rows_);
  cosine_rows_ = rows(f);
  cosine_min_lr_ = number_field("cosineMinLr");
  f->addRow(tr("Final rate"), cosine_min_lr_);
  form->addRow(cosine_rows_);
  page->addWidget(schedule);

  early_ = named(new QGroupBox(tr("Early stopping")), "earlyStopping");
  early_->setCheckable(true);
  form = new QFormLayout(early_);
  early_monitor_ = monitor("earlyStoppingMonitor");
  early_patience_ = epochs(1, "earlyStoppingPatience");
  early_min_delta_ = number_field("earlyStoppingMinDelta");
  form->addRow(tr("Monitor"), early_monitor_);
  form->addRow(tr("Patience"), early_patience_);
  form->addRow(tr("Smallest improvement"), early_min_delta_);
  page->addWidget(early_);

  plateau_ = named(new QGroupBox(tr("Reduce learning rate on plateau")), "reduceOnPlateau");
  plateau_->setCheckable(true);
  form = new QFormLayout(plateau_);
  plateau_monitor_ = monitor("plateauMonitor");
  plateau_factor_ = fraction(0.001, 0.999, 0.05, "plateauFactor");
  plateau_patience_ = epochs(1, "plateauPatience");
  plateau_cooldown_ = epochs(0, "plateauCooldown");
  plateau_min_delta_ = number_field("plateauMinDelta");
  plateau_min_lr_ = number_field("plateauMinLr");
  form->addRow(tr("Monitor"), plateau_monitor_);
  form->addRow(tr("Multiply by"), plateau_factor_);
  form->addRow(tr("Patience"), plateau_patience_);
  form->addRow(tr("Cooldown"), plateau_cooldown_);
  form->addRow(tr("Smallest improvement"), plateau_min_delta_);
  form->addRow(tr("Lowest rate"), plateau_min_lr_);
  page->addWidget(plateau_);

  auto* checkpoints = new QGroupBox(tr("Checkpoints"), this);
  form = new QFormLayout(checkpoints);
  every_epoch_ = named(new QCheckBox(tr("At the end of every epoch")), "checkpointEveryEpoch");
  every_steps_ = int_field(0, 1 << 30, "checkpointEverySteps");
  every_steps_->setSpecialValueText(tr("off"));
  every_steps_->setSuffix(tr(" steps"));
  keep_ = int_field(1, 1000000, "checkpointKeep");
  keep_best_ = named(new QCheckBox(tr("Also keep the best (highest validation accuracy)")), "checkpointKeepBest");
  form->addRow(QString(), every_epoch_);
  form->addRow(tr("Every N steps"), every_steps_);
  form->addRow(tr("Keep the newest"), keep_);
  form->addRow(QString(), keep_best_);
  form->addRow(new QLabel(tr("A checkpoint is also written when a run stops or ends."), checkpoints));
  page->addWidget(checkpoints);
  page->addStretch(1);

  auto changed = [this] {
    if (!loading_) Q_EMIT edited();
  };
  for (auto* s : {step_every_, early_patience_, plateau_patience_, plateau_cooldown_, every_steps_, keep_})
    connect(s, &QSpinBox::valueChanged, this, changed);
  for (auto* d : {warmup_, step_factor_, decay_rate_, plateau_factor_}) connect(d, &QDoubleSpinBox::valueChanged, this, changed);
  for (auto* e : {cosine_min_lr_, early_min_delta_, plateau_min_delta_, plateau_min_lr_})
    connect(e, &QLineEdit::textEdited, this, changed);
  for (auto* g : {early_, plateau_}) connect(g, &QGroupBox::toggled, this, changed);
  for (auto* c : {every_epoch_, keep_best_}) connect(c, &QCheckBox::toggled, this, changed);
  for (auto* c : {early_monitor_, plateau_monitor_}) connect(c, &QComboBox::currentIndexChanged, this, changed);
  connect(type_, &QComboBox::currentIndexChanged, this, [this, changed] {
    updateScheduleRows();
    changed();
  });
  updateScheduleRows();
}

void SchedulePanel::updateScheduleRows() {
  const QString type = type_->currentData().toString();
  step_rows_->setVisible(type == "step");
  exponential_rows_->setVisible(type == "exponential");
  cosine_rows_->setVisible(type == "cosine");
}

void SchedulePanel::setConfig(const RunConfig& config) {
  loading_ = true;
  loaded_ = config;
  const TrainingConfig& t = config.training;
  const LrScheduleConfig& s = t.lr_schedule;
  select(type_, s.type);
  warmup_->setValue(s.warmup_epochs);
  step_every_->setValue(s.every_epochs);
  step_factor_->setValue(s.factor);
  decay_rate_->setValue(s.decay_rate);
  cosine_min_lr_->setText(QString::number(s.min_lr, 'g', 6));
  const EarlyStoppingConfig& e = t.early_stopping;
  early_->setChecked(e.enabled);
  select(early_monitor_, e.monitor);
  early_patience_->setValue(e.patience);
  early_min_delta_->setText(QString::number(e.min_delta, 'g', 6));
  const ReduceLrOnPlateauConfig& p = t.reduce_lr_on_plateau;
  plateau_->setChecked(p.enabled);
  select(plateau_monitor_, p.monitor);
  plateau_factor_->setValue(p.factor);
  plateau_patience_->setValue(p.patience);
  plateau_cooldown_->setValue(p.cooldown);
  plateau_min_delta_->setText(QString::number(p.min_delta, 'g', 6));
  plateau_min_lr_->setText(QString::number(p.min_lr, 'g', 6));
  const CheckpointConfig& k = t.checkpoint;
  every_epoch_->setChecked(k.every_epoch);
  every_steps_->setValue(static_cast<int>(k.every_steps));
  keep_->setValue(k.keep);
  keep_best_->setChecked(k.keep_best);
  updateScheduleRows();
  loading_ = false;
}

void SchedulePanel::applyTo(RunConfig& config) const {
  TrainingConfig& t = config.training;
  const TrainingConfig& was = loaded_.training;
  LrScheduleConfig& s = t.lr_schedule;
  s.type = type_->currentData().toString().toStdString();
  s.warmup_epochs = warmup_->value();
  s.every_epochs = step_every_->value();
  s.factor = step_factor_->value();
  s.decay_rate = decay_rate_->value();
  s.min_lr = read(cosine_min_lr_, was.lr_schedule.min_lr);
  EarlyStoppingConfig& e = t.early_stopping;
  e.enabled = early_->isChecked();
  e.monitor = early_monitor_->currentData().toString().toStdString();
  e.patience = early_patience_->value();
  e.min_delta = read(early_min_delta_, was.early_stopping.min_delta);
  ReduceLrOnPlateauConfig& p = t.reduce_lr_on_plateau;
  p.enabled = plateau_->isChecked();
  p.monitor = plateau_monitor_->currentData().toString().toStdString();
  p.factor = plateau_factor_->value();
  p.patience = plateau_patience_->value();
  p.cooldown = plateau_cooldown_->value();
  p.min_delta = read(plateau_min_delta_, was.reduce_lr_on_plateau.min_delta);
  p.min_lr = read(plateau_min_lr_, was.reduce_lr_on_plateau.min_lr);
  CheckpointConfig& k = t.checkpoint;
  k.every_epoch = every_epoch_->isChecked();
  k.every_steps = every_steps_->value();
  k.keep = keep_->value();
  k.keep_best = keep_best_->isChecked();
}

}  // namespace strata::ui
