#pragma once
#include <QWidget>

#include "train/RunConfig.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLineEdit;
class QSpinBox;

namespace strata::ui {

// How the run moves its learning rate and when it stops or saves, as Keras
// users set them: the learning-rate schedule (its rows show for the type
// that uses them), early stopping and reduce-on-plateau (each a checkable
// group), and the checkpoint settings.
class SchedulePanel : public QWidget {
  Q_OBJECT
public:
  explicit SchedulePanel(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;

  QComboBox* scheduleBox() const { return type_; }
  QGroupBox* earlyStoppingGroup() const { return early_; }
  QGroupBox* plateauGroup() const { return plateau_; }

signals:
  void edited();

private:
  void updateScheduleRows();

  QComboBox* type_;
  QDoubleSpinBox *warmup_, *step_factor_, *decay_rate_;
  QSpinBox* step_every_;
  QLineEdit* cosine_min_lr_;
  QWidget *step_rows_, *exponential_rows_, *cosine_rows_;
  QGroupBox* early_;
  QComboBox* early_monitor_;
  QSpinBox* early_patience_;
  QLineEdit* early_min_delta_;
  QGroupBox* plateau_;
  QComboBox* plateau_monitor_;
  QDoubleSpinBox* plateau_factor_;
  QSpinBox *plateau_patience_, *plateau_cooldown_;
  QLineEdit *plateau_min_delta_, *plateau_min_lr_;
  QCheckBox *every_epoch_, *keep_best_;
  QSpinBox *every_steps_, *keep_;
  RunConfig loaded_;  // the fields of hidden rows survive a round trip
  bool loading_ = false;
};

}  // namespace strata::ui
