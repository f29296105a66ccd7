#pragma once
#include <QFutureWatcher>
#include <QWidget>
#include <memory>
#include <vector>

#include "core/Shape.h"
#include "train/DataSource.h"
#include "train/RunConfig.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QFormLayout;
class QCustomPlot;

namespace strata::ui {

// The dataset: Fashion-MNIST (found automatically), IDX files, CSV (with the
// label column) or synthetic blobs, plus a preview loaded off the UI thread:
// sample images with their labels, row counts and the class balance.
class DatasetPanel : public QWidget {
  Q_OBJECT
public:
  explicit DatasetPanel(QWidget* parent = nullptr);
  ~DatasetPanel() override;
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;
  QComboBox* kindBox() const { return kind_; }
  // Loads the preview in the background; `previewReady` tells when done.
  void refreshPreview();
  bool previewBusy() const;
  QString previewError() const;
  qint64 previewRows() const { return preview_rows_; }

signals:
  // Per-example input shape and class count, once known (the model editor
  // checks shapes against it).
  void inputChanged(const strata::Shape& example_shape, int classes);
  void previewReady();
  void edited();

private:
  struct Preview {
    LoadedData data;
    QString error;
    int generation = 0;  // of the settings it was loaded with
  };
  QWidget* pathRow(QLineEdit*& edit, const QString& filter, bool directory);
  void onKindChanged();
  // The Fashion-MNIST "found" line, for the folder as it reads now.
  void updateFashionStatus();
  // The source or its reading changed: the "found" line follows, and the
  // preview of the old settings goes (a load in flight is ignored).
  void sourceChanged();
  void clearPreview();
  void showPreview();
  void announceKnownShape();

  QComboBox* kind_;
  QFormLayout* form_;
  std::vector<std::vector<QWidget*>> source_rows_;  // per entry of kind_: the fields of its rows
  QLineEdit *fashion_dir_, *train_images_, *train_labels_, *test_images_, *test_labels_, *train_csv_, *test_csv_;
  QLabel* fashion_status_;
  QSpinBox *label_column_, *syn_examples_, *syn_features_, *syn_classes_;
  QComboBox* header_;
  QDoubleSpinBox* validation_split_;
  QCheckBox* standardize_;
  QLabel* info_;
  QGridLayout* samples_;
  QWidget* samples_box_;
  QCustomPlot* balance_;
  QFutureWatcher<Preview> watcher_;
  bool pending_ = false;
  int generation_ = 0;  // bumped by every source change
  bool loading_ = false;
  std::string base_dir_;
  uint64_t seed_ = 42;
  QString preview_error_;
  qint64 preview_rows_ = -1;
  RunConfig loaded_;
};

}  // namespace strata::ui
