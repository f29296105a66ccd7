#pragma once
#include <QFutureWatcher>
#include <QWidget>
#include <memory>
#include <vector>

#include "CheckpointEvaluation.h"
#include "train/RunConfig.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace strata::ui {

class MessagePresenter;

// Evaluates a run's checkpoint on the test split, off the UI thread: the
// confusion matrix as a heat map (rows true, columns predicted), per-class
// accuracy, and a grid of test samples with predicted / true labels, wrong
// ones in red. Also exports the checkpoint's weights as .safetensors.
class EvaluationView : public QWidget {
  Q_OBJECT
public:
  explicit EvaluationView(QWidget* parent = nullptr);
  ~EvaluationView() override;
  // Not owned; dialogs (export path, errors) go through it.
  void setPresenter(MessagePresenter* presenter) { presenter_ = presenter; }
  // Lists the run's checkpoints and evaluates the newest.
  void setRun(const RunConfig& config, const QString& run_dir);
  void evaluateCheckpoint(int index);
  // Asks for a file (through the presenter) and writes the selected
  // checkpoint's weights there, off the UI thread.
  void exportWeights();
  void exportWeightsTo(const QString& path);

  bool busy() const;
  int checkpointCount() const;
  QString checkpoint() const;
  const CheckpointEvaluation* result() const { return result_.get(); }
  QTableWidget* confusionTable() const { return confusion_; }
  QTableWidget* sampleGrid() const { return samples_; }
  // The grid cell of sample i is marked wrong (red).
  bool sampleMarkedWrong(int i) const;
  QString errorText() const;
  // The line above the tables: the evaluation's figures, or what is going on.
  QString summaryText() const;

signals:
  void evaluated();
  void exported(const QString& path, const QString& error);

private:
  void showResult();
  void setBusy(bool busy, const QString& what);

  MessagePresenter* presenter_ = nullptr;
  RunConfig config_;
  QString run_dir_;
  std::vector<CheckpointEntry> checkpoints_;
  QComboBox* picker_;
  QPushButton* export_;
  QLabel* summary_;
  QTableWidget* confusion_;
  QTableWidget* per_class_;
  QTableWidget* samples_;
  QFutureWatcher<std::shared_ptr<CheckpointEvaluation>> eval_watch_;
  QFutureWatcher<QString> export_watch_;
  bool busy_ = false;  // setBusy()
  std::shared_ptr<CheckpointEvaluation> result_;
  bool filling_ = false;
};

}  // namespace strata::ui
