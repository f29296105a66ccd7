#include "DatasetPanel.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <filesystem>

#include "ChartTicker.h"
#include "data/FashionMnist.h"

namespace strata::ui {

namespace {
constexpr int kSamples = 12;
QSpinBox* spin(QWidget* parent, int lo, int hi) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  return s;
}
}  // namespace

QWidget* DatasetPanel::pathRow(QLineEdit*& edit, const QString& filter, bool directory) {
  auto* row = new QWidget(this);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  edit = new QLineEdit(row);
  auto* browse = new QPushButton(tr("…"), row);
  browse->setFixedWidth(32);
  h->addWidget(edit, 1);
  h->addWidget(browse);
  QLineEdit* target = edit;
  connect(browse, &QPushButton::clicked, this, [this, target, filter, directory] {
    const QString path = directory ? QFileDialog::getExistingDirectory(this, tr("Choose a folder"), target->text())
                                   : QFileDialog::getOpenFileName(this, tr("Choose a file"), target->text(), filter);
    if (path.isEmpty()) return;
    target->setText(path);
    Q_EMIT edited();
  });
  connect(edit, &QLineEdit::textEdited, this, [this] { Q_EMIT edited(); });
  connect(edit, &QLineEdit::textChanged, this, &DatasetPanel::sourceChanged);  // typed or chosen
  return row;
}

DatasetPanel::DatasetPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  layout->addLayout(form);
  kind_ = new QComboBox(this);
  kind_->setObjectName("datasetKind");
  kind_->addItem(tr("Fashion-MNIST"), "fashion_mnist");
  kind_->addItem(tr("IDX files"), "idx");
  kind_->addItem(tr("CSV"), "csv");
  kind_->addItem(tr("Synthetic blobs"), "synthetic");
  form->addRow(new QLabel(tr("<b>Dataset</b>"), this));
  form->addRow(tr("Source"), kind_);

  // Each source's rows are rows of this one form, shown with their source,
  // so every field starts at one x and no source leaves the empty height of
  // another's rows (a stack of pages took its tallest page's height).
  const QString idx_filter = tr("IDX files (*-ubyte *-ubyte.gz *.idx *.gz);;All files (*)");
  const QString csv_filter = tr("CSV files (*.csv *.csv.gz);;All files (*)");
  source_rows_.resize(static_cast<size_t>(kind_->count()));
  auto row = [&](const char* source, const QString& label, QWidget* field) {
    form->addRow(label, field);
    source_rows_[static_cast<size_t>(kind_->findData(source))].push_back(field);
  };
  {  // Fashion-MNIST
    row("fashion_mnist", tr("Folder"), pathRow(fashion_dir_, {}, true));
    fashion_dir_->setPlaceholderText(tr("automatic (%1)").arg(QString::fromLatin1(kFashionMnistDefaultDir)));
    fashion_dir_->setObjectName("fashionFolder");
    fashion_status_ = new QLabel(this);
    fashion_status_->setObjectName("fashionStatus");
    fashion_status_->setWordWrap(true);
    row("fashion_mnist", QString(), fashion_status_);
  }
  {  // IDX
    row("idx", tr("Train images"), pathRow(train_images_, idx_filter, false));
    row("idx", tr("Train labels"), pathRow(train_labels_, idx_filter, false));
    row("idx", tr("Test images"), pathRow(test_images_, idx_filter, false));
    row("idx", tr("Test labels"), pathRow(test_labels_, idx_filter, false));
  }
  {  // CSV
    row("csv", tr("Train CSV"), pathRow(train_csv_, csv_filter, false));
    row("csv", tr("Test CSV"), pathRow(test_csv_, csv_filter, false));
    label_column_ = spin(this, -1, 100000);
    label_column_->setSpecialValueText(tr("last column"));
    header_ = new QComboBox(this);
    header_->addItem(tr("detect"), "auto");
    header_->addItem(tr("yes"), "yes");
    header_->addItem(tr("no"), "no");
    row("csv", tr("Label column"), label_column_);
    row("csv", tr("Header row"), header_);
  }
  {  // synthetic
    syn_examples_ = spin(this, 2, 100000000);
    syn_features_ = spin(this, 1, 1000000);
    syn_classes_ = spin(this, 2, 100000);
    syn_examples_->setObjectName("syntheticExamples");
    row("synthetic", tr("Examples"), syn_examples_);
    row("synthetic", tr("Features"), syn_features_);
    row("synthetic", tr("Classes"), syn_classes_);
  }
  form_ = form;
  validation_split_ = new QDoubleSpinBox(this);
  validation_split_->setRange(0.0, 0.9);
  validation_split_->setSingleStep(0.05);
  validation_split_->setSpecialValueText(tr("none (validate on the test split)"));
  standardize_ = new QCheckBox(tr("Standardise features (train-split mean and std)"), this);
  form->addRow(tr("Validation split"), validation_split_);
  form->addRow(QString(), standardize_);

  auto* preview_box = new QGroupBox(tr("Preview"), this);
  auto* pv = new QVBoxLayout(preview_box);
  auto* refresh = new QPushButton(tr("Load preview"), preview_box);
  refresh->setObjectName("previewButton");
  info_ = new QLabel(tr("No preview loaded."), preview_box);
  info_->setObjectName("previewInfo");
  info_->setWordWrap(true);
  info_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  samples_box_ = new QWidget(preview_box);
  samples_ = new QGridLayout(samples_box_);
  samples_->setSpacing(2);
  balance_ = new QCustomPlot(preview_box);
  balance_->setObjectName("classBalance");
  balance_->setMinimumHeight(120);
  balance_->yAxis->setLabel(tr("examples"));
  balance_->xAxis->setLabel(tr("class"));
  pv->addWidget(refresh, 0, Qt::AlignLeft);
  pv->addWidget(info_);
  pv->addWidget(samples_box_);
  pv->addWidget(balance_, 1);
  pv->addStretch();  // takes the height while the chart is hidden
  balance_->hide();
  layout->addWidget(preview_box, 1);

  connect(refresh, &QPushButton::clicked, this, &DatasetPanel::refreshPreview);
  connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
    onKindChanged();
    sourceChanged();
    if (!loading_) Q_EMIT edited();
  });
  auto changed = [this] {
    if (loading_) return;
    announceKnownShape();
    sourceChanged();
    Q_EMIT edited();
  };
  for (auto* s : {label_column_, syn_examples_, syn_features_, syn_classes_}) connect(s, &QSpinBox::valueChanged, this, changed);
  connect(header_, &QComboBox::currentIndexChanged, this, changed);
  connect(validation_split_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(standardize_, &QCheckBox::toggled, this, changed);
  connect(&watcher_, &QFutureWatcher<Preview>::finished, this, &DatasetPanel::showPreview);
  onKindChanged();
}

DatasetPanel::~DatasetPanel() {
  // The loader reads only its own copy of the config, but its result would
  // land in a deleted panel: wait for it.
  watcher_.waitForFinished();
}

void DatasetPanel::sourceChanged() {
  updateFashionStatus();
  if (loading_) return;
  ++generation_;
  clearPreview();
  info_->setText(tr("The data settings changed: <b>Load preview</b> shows the data they give."));
}

void DatasetPanel::clearPreview() {
  while (auto* item = samples_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  balance_->clearPlottables();
  // Hidden until a preview has counts to show: empty axes read as a
  // dataset without examples.
  balance_->hide();
  preview_rows_ = -1;
}

void DatasetPanel::onKindChanged() {
  for (size_t source = 0; source < source_rows_.size(); ++source)
    for (QWidget* field : source_rows_[source])
      form_->setRowVisible(field, static_cast<int>(source) == kind_->currentIndex());
  updateFashionStatus();
  announceKnownShape();
}

void DatasetPanel::updateFashionStatus() {
  if (kind_->currentData() != "fashion_mnist") return;
  const std::string dir = fashion_mnist_dir(fashion_dir_->text().toStdString());
  const bool found = std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz");
  fashion_status_->setText(found ? tr("Found in %1").arg(QString::fromStdString(dir))
                                 : tr("<span style='color:#b00'>Not found in %1: install the Debian package "
                                      "dataset-fashion-mnist or choose the folder.</span>").arg(QString::fromStdString(dir)));
}

void DatasetPanel::announceKnownShape() {
  // Shapes known without reading the data; IDX and CSV wait for the preview.
  const QString kind = kind_->currentData().toString();
  if (kind == "fashion_mnist") Q_EMIT inputChanged(Shape{28, 28, 1}, 10);
  else if (kind == "synthetic") Q_EMIT inputChanged(Shape{syn_features_->value()}, syn_classes_->value());
}

void DatasetPanel::setConfig(const RunConfig& config) {
  loading_ = true;
  loaded_ = config;
  base_dir_ = config.base_dir;
  seed_ = config.training.seed;
  const DatasetConfig& d = config.dataset;
  const int idx = kind_->findData(QString::fromStdString(d.kind));
  kind_->setCurrentIndex(idx < 0 ? 0 : idx);
  fashion_dir_->setText(QString::fromStdString(d.path));
  train_images_->setText(QString::fromStdString(d.train_images));
  train_labels_->setText(QString::fromStdString(d.train_labels));
  test_images_->setText(QString::fromStdString(d.test_images));
  test_labels_->setText(QString::fromStdString(d.test_labels));
  train_csv_->setText(QString::fromStdString(d.train_csv));
  test_csv_->setText(QString::fromStdString(d.test_csv));
  label_column_->setValue(d.label_column);
  header_->setCurrentIndex(std::max(0, header_->findData(QString::fromStdString(d.header))));
  syn_examples_->setValue(static_cast<int>(d.synthetic_examples));
  syn_features_->setValue(static_cast<int>(d.synthetic_features));
  syn_classes_->setValue(d.synthetic_classes);
  validation_split_->setValue(d.validation_split);
  standardize_->setChecked(d.standardize);
  loading_ = false;
  onKindChanged();
  refreshPreview();
}

void DatasetPanel::applyTo(RunConfig& config) const {
  DatasetConfig& d = config.dataset;
  d.kind = kind_->currentData().toString().toStdString();
  d.path = fashion_dir_->text().toStdString();
  d.train_images = train_images_->text().toStdString();
  d.train_labels = train_labels_->text().toStdString();
  d.test_images = test_images_->text().toStdString();
  d.test_labels = test_labels_->text().toStdString();
  d.train_csv = train_csv_->text().toStdString();
  d.test_csv = test_csv_->text().toStdString();
  d.label_column = label_column_->value();
  d.header = header_->currentData().toString().toStdString();
  d.synthetic_examples = syn_examples_->value();
  d.synthetic_features = syn_features_->value();
  d.synthetic_classes = syn_classes_->value();
  d.validation_split = validation_split_->value();
  d.standardize = standardize_->isChecked();
}

bool DatasetPanel::previewBusy() const { return watcher_.isRunning() || pending_; }
QString DatasetPanel::previewError() const { return preview_error_; }

void DatasetPanel::refreshPreview() {
  if (watcher_.isRunning()) {
    pending_ = true;  // one more load once this one lands, with the newest settings
    return;
  }
  RunConfig c = loaded_;
  applyTo(c);
  info_->setText(tr("Loading…"));
  const std::string base = base_dir_;
  const uint64_t seed = seed_;
  watcher_.setFuture(QtConcurrent::run([c, base, seed, generation = generation_]() -> Preview {
    Preview p;
    p.generation = generation;
    try {
      p.data = load_data(c.dataset, seed, base);
    } catch (const std::exception& e) {
      p.error = QString::fromStdString(e.what());
    }
    return p;
  }));
}

void DatasetPanel::showPreview() {
  const Preview p = watcher_.result();
  if (pending_) {
    pending_ = false;
    refreshPreview();
    return;
  }
  if (p.generation != generation_) return;  // loaded with settings since changed
  preview_error_ = p.error;
  clearPreview();
  if (!p.error.isEmpty()) {
    preview_rows_ = -1;
    info_->setText(tr("<span style='color:#b00'>%1</span>").arg(p.error.toHtmlEscaped()));
    Q_EMIT previewReady();
    return;
  }
  const Dataset& train = *p.data.train;
  preview_rows_ = train.size();
  info_->setText(tr("%1<br>%2 training rows, %3 validation rows · example shape %4 · %5 classes")
                     .arg(QString::fromStdString(p.data.description).toHtmlEscaped())
                     .arg(train.size())
                     .arg(p.data.validation ? p.data.validation->size() : 0)
                     .arg(QString::fromStdString(train.example_shape().str()))
                     .arg(train.num_classes()));
  const Shape& shape = train.example_shape();
  const bool images = train.is_uint8() && shape.rank() == 3 && shape[2] == 1;
  samples_box_->setVisible(images);
  if (images) {
    const bool fashion = kind_->currentData() == "fashion_mnist";
    const int h = static_cast<int>(shape[0]), w = static_cast<int>(shape[1]);
    for (int i = 0; i < kSamples && i < train.size(); ++i) {
      auto px = train.pixels(i);
      QImage img(px.data(), w, h, w, QImage::Format_Grayscale8);
      const int label = train.labels()[static_cast<size_t>(i)];
      auto* cell = new QLabel(samples_box_);
      cell->setPixmap(QPixmap::fromImage(img.copy()).scaled(w * 2, h * 2));
      cell->setToolTip(fashion ? QString::fromLatin1(fashion_mnist_class_name(label)) : QString::number(label));
      auto* caption = new QLabel(cell->toolTip(), samples_box_);
      caption->setAlignment(Qt::AlignHCenter);
      QFont f = caption->font();
      f.setPointSizeF(f.pointSizeF() * 0.8);
      caption->setFont(f);
      samples_->addWidget(cell, (i / 6) * 2, i % 6, Qt::AlignHCenter);
      samples_->addWidget(caption, (i / 6) * 2 + 1, i % 6, Qt::AlignHCenter);
    }
  }
  auto* bars = new QCPBars(balance_->xAxis, balance_->yAxis);
  const auto counts = train.class_counts();
  QVector<double> keys, values;
  for (size_t c = 0; c < counts.size(); ++c) {
    keys << static_cast<double>(c);
    values << static_cast<double>(counts[c]);
  }
  bars->setData(keys, values);
  bars->setBrush(QColor(70, 110, 170));
  bars->setPen(Qt::NoPen);
  // One tick per class where they fit (no class 2.5), whole counts with
  // SI suffixes as on the training charts ("6k").
  if (counts.size() <= 20) {
    auto classes = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t c = 0; c < counts.size(); ++c) classes->addTick(static_cast<double>(c), QString::number(c));
    balance_->xAxis->setTicker(classes);
  } else {
    balance_->xAxis->setTicker(QSharedPointer<ChartTicker>::create(true));
  }
  balance_->yAxis->setTicker(QSharedPointer<ChartTicker>::create(true));
  balance_->rescaleAxes();
  // Headroom above the tallest bar, so a balanced set's bars do not touch the frame.
  balance_->yAxis->setRange(0, std::max(1.0, balance_->yAxis->range().upper * 1.08));
  balance_->xAxis->setRange(-0.7, static_cast<double>(counts.size()) - 0.3);
  balance_->show();
  balance_->replot();
  Q_EMIT inputChanged(shape, train.num_classes());
  Q_EMIT previewReady();
}

}  // namespace strata::ui
