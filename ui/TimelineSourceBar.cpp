#include "TimelineSourceBar.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>

#include "TimelineFile.h"

namespace strata::ui {

TimelineSourceBar::TimelineSourceBar(int steps_shown, QWidget* parent)
    : QWidget(parent),
      open_(new QPushButton(tr("Open trace…"))),
      live_(new QPushButton(tr("Live"))),
      source_(new QLabel),
      first_step_(new QSpinBox),
      steps_box_(new QSpinBox) {
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(4, 2, 4, 2);
  open_->setObjectName("openTraceButton");
  open_->setToolTip(tr("Show a trace file: a run folder's trace.json, or ranks merged with strata-run --merge-traces"));
  live_->setObjectName("liveTimelineButton");
  live_->setToolTip(tr("Show the running (or last) run's steps again"));
  source_->setObjectName("timelineSource");
  source_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  first_step_->setObjectName("timelineFirstStep");
  first_step_->setPrefix(tr("from step "));
  first_step_->setToolTip(tr("The first of the file's steps drawn"));
  steps_box_->setObjectName("timelineStepsShown");
  steps_box_->setRange(1, 100'000);
  steps_box_->setValue(steps_shown);
  steps_box_->setSuffix(tr(" steps"));
  steps_box_->setToolTip(tr("How many steps are drawn (live: the last ones)"));
  // Typed numbers apply on Enter (or leaving the box), not at each digit:
  // a long file is redrawn once.
  first_step_->setKeyboardTracking(false);
  steps_box_->setKeyboardTracking(false);
  row->addWidget(open_);
  row->addWidget(live_);
  row->addWidget(source_, 1);
  row->addWidget(first_step_);
  row->addWidget(steps_box_);
  connect(open_, &QPushButton::clicked, this, &TimelineSourceBar::openTraceRequested);
  connect(live_, &QPushButton::clicked, this, &TimelineSourceBar::liveRequested);
  connect(steps_box_, &QSpinBox::valueChanged, this, &TimelineSourceBar::stepsShownChanged);
  connect(first_step_, &QSpinBox::valueChanged, this, [this](int step) { Q_EMIT firstStepChanged(step); });
}

void TimelineSourceBar::showSource(const TimelineFile* file) {
  live_->setVisible(file != nullptr);
  first_step_->setVisible(file != nullptr);
  source_text_ = file ? file->description() : tr("live");
  source_path_ = file ? file->path() : QString();
  updateLabel();
  if (!file) return;
  const QSignalBlocker quiet(first_step_);
  first_step_->setRange(static_cast<int>(file->lowestStep()), static_cast<int>(file->highestStep()));
  first_step_->setValue(static_cast<int>(file->firstStep()));
}

void TimelineSourceBar::showReading(const QString& path) {
  reading_ = path;
  updateLabel();
}

void TimelineSourceBar::updateLabel() {
  const bool reading = !reading_.isEmpty();
  source_->setText(reading ? tr("reading %1…").arg(QFileInfo(reading_).fileName()) : source_text_);
  source_->setToolTip(reading ? reading_ : source_path_);
  // Greyed when live: a hint, the chart says the rest.
  source_->setEnabled(reading || !source_path_.isEmpty());
}

void TimelineSourceBar::setStepsShown(int n) {
  if (steps_box_->value() == n) return;
  const QSignalBlocker quiet(steps_box_);
  steps_box_->setValue(n);
}

QString TimelineSourceBar::sourceText() const { return source_->text(); }

}  // namespace strata::ui
