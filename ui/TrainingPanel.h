#pragma once
#include <QWidget>
#include <vector>

#include "train/RunConfig.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLineEdit;
class QSpinBox;
class QWidget;

namespace strata::ui {

// Hyper-parameters: epochs, global batch, optimizer and its settings,
// learning rate, seed and the loop's options. The optimizer-specific rows
// show only for the optimizer that uses them.
class TrainingPanel : public QWidget {
  Q_OBJECT
public:
  explicit TrainingPanel(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;

  QSpinBox* epochsBox() const { return epochs_; }
  QSpinBox* batchBox() const { return batch_; }
  QSpinBox* maxStepsBox() const { return max_steps_; }
  QComboBox* optimizerBox() const { return optimizer_; }
  QLineEdit* learningRateEdit() const { return lr_; }
  QLineEdit* nameEdit() const { return name_; }
  QLineEdit* seedEdit() const { return seed_; }

signals:
  void globalBatchChanged(qint64 batch);
  void edited();

private:
  void updateOptimizerRows();

  QSpinBox *epochs_, *batch_, *threads_, *max_steps_, *prefetch_;
  // Text: a seed is 64-bit and a spin box holds 31 bits, so a project's
  // seed 123456789012 came back truncated and was saved so.
  QLineEdit* seed_;
  QComboBox* optimizer_;
  QLineEdit* lr_;  // text, so 1e-4 and 0.0003 both read naturally
  QLineEdit* name_;
  QDoubleSpinBox *momentum_, *beta1_, *beta2_;
  QLineEdit* epsilon_;
  QCheckBox *nesterov_, *shuffle_, *drop_remainder_;
  // A run option, not a project setting: kept when another project is opened, never saved.
  QCheckBox* record_timeline_;
  QComboBox* device_lanes_;  // with it: GPUs' device lanes sampled, in every step, or off
  QFormLayout* form_;
  std::vector<QWidget*> sgd_rows_, adam_rows_;  // each field's row is shown with its optimizer
  RunConfig loaded_;  // keeps fields this panel does not edit (loss, from_logits)
  bool loading_ = false;
};

}  // namespace strata::ui
