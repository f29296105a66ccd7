#pragma once
#include <QString>
#include <QWidget>
#include <cstdint>

class QLabel;
class QPushButton;
class QSpinBox;

namespace strata::ui {

class TimelineFile;

// The row above the Timeline tab's chart: where its spans come from (live
// or a trace file, with Open trace… and Live to switch) and which steps are
// drawn (from which of a file's steps, how many). It only shows and asks;
// the panel holds the spans and decides.
class TimelineSourceBar : public QWidget {
  Q_OBJECT
public:
  explicit TimelineSourceBar(int steps_shown, QWidget* parent = nullptr);

  // Live when `file` is null: Live and "from step" hide, the label says live.
  void showSource(const TimelineFile* file);
  // While `path` is read (TraceLoader) the label says so; an empty path
  // gives the label back to the source shown.
  void showReading(const QString& path);
  // Sets the step count box without signalling stepsShownChanged.
  void setStepsShown(int n);
  QString sourceText() const;

Q_SIGNALS:
  void openTraceRequested();
  void liveRequested();
  void stepsShownChanged(int n);
  void firstStepChanged(int64_t step);

private:
  void updateLabel();

  QString source_text_, source_path_;  // what the label says when no file is being read
  QString reading_;
  QPushButton* open_;
  QPushButton* live_;
  QLabel* source_;
  QSpinBox* first_step_;
  QSpinBox* steps_box_;
};

}  // namespace strata::ui
