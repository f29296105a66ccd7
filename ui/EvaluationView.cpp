#include "EvaluationView.h"

#include "project/WeightExport.h"

#include <algorithm>

#include <QComboBox>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QScreen>
#include <QShortcut>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "MessagePresenter.h"

namespace strata::ui {

namespace {
constexpr int kSamples = 32;
constexpr int kGridColumns = 8;
const QColor kWrong(200, 30, 30);

// A grey-level image scaled up so a 28x28 digit is readable.
QPixmap sample_pixmap(const SamplePrediction& s) {
  QImage img(s.cols, s.rows, QImage::Format_Grayscale8);
  for (int r = 0; r < s.rows; ++r)
    std::copy_n(s.pixels.data() + static_cast<size_t>(r) * static_cast<size_t>(s.cols), s.cols, img.scanLine(r));
  return QPixmap::fromImage(img.scaled(s.cols * 2, s.rows * 2));
}
}  // namespace

EvaluationView::EvaluationView(QWidget* parent)
    : QWidget(parent),
      picker_(new QComboBox(this)),
      export_(new QPushButton(tr("Export weights…"), this)),
      summary_(new QLabel(this)),
      confusion_(new QTableWidget(this)),
      per_class_(new QTableWidget(this)),
      samples_(new QTableWidget(this)) {
  setObjectName("evaluationView");
  setWindowTitle(tr("Evaluate checkpoint — Strata"));
  picker_->setObjectName("checkpointPicker");
  confusion_->setObjectName("confusionMatrix");
  per_class_->setObjectName("perClassAccuracy");
  samples_->setObjectName("sampleGrid");
  export_->setObjectName("exportWeights");
  export_->setToolTip(tr("Write the selected checkpoint's weights as one .safetensors file "
                         "(PyTorch, JAX and numpy read it with the safetensors package)"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  for (auto* t : {confusion_, per_class_, samples_}) t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  confusion_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  per_class_->setColumnCount(2);
  per_class_->setHorizontalHeaderLabels({tr("Class"), tr("Accuracy")});
  per_class_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  per_class_->verticalHeader()->hide();
  samples_->horizontalHeader()->hide();
  samples_->verticalHeader()->hide();
  samples_->setIconSize(QSize(56, 56));

  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Checkpoint"), this));
  bar->addWidget(picker_, 1);
  bar->addWidget(export_);
  layout->addLayout(bar);
  layout->addWidget(summary_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  auto* left = new QWidget(split);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(new QLabel(tr("<b>Confusion matrix</b> (rows: true class, columns: predicted)"), left));
  left_layout->addWidget(confusion_, 2);
  left_layout->addWidget(per_class_, 1);
  auto* right = new QWidget(split);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addWidget(new QLabel(tr("<b>Test samples</b>: predicted (true); wrong ones in red"), right));
  right_layout->addWidget(samples_);
  layout->addWidget(split, 1);
  // Room for the matrix, the per-class table and four rows of samples, as
  // far as the screen allows.
  const QRect screen = QGuiApplication::primaryScreen() ? QGuiApplication::primaryScreen()->availableGeometry() : QRect();
  resize(screen.isValid() ? QSize(std::min(1320, screen.width()), std::min(900, screen.height())) : QSize(1320, 900));
  // Closes like any document window: the platform's Close keys (each of
  // them; one QKeySequence holds only the first), Ctrl+W, Esc.
  QList<QKeySequence> keys = QKeySequence::keyBindings(QKeySequence::Close);
  for (const QKeySequence& k : {QKeySequence(Qt::CTRL | Qt::Key_W), QKeySequence(Qt::Key_Escape)})
    if (!keys.contains(k)) keys << k;
  for (const QKeySequence& k : keys) new QShortcut(k, this, this, &QWidget::close);

  connect(picker_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!filling_ && i >= 0) evaluateCheckpoint(i);
  });
  connect(export_, &QPushButton::clicked, this, &EvaluationView::exportWeights);
  connect(&eval_watch_, &QFutureWatcherBase::finished, this, [this] {
    result_ = eval_watch_.result();
    showResult();
    setBusy(false, {});
    Q_EMIT evaluated();
  });
  connect(&export_watch_, &QFutureWatcherBase::finished, this, [this] {
    const QString error = export_watch_.result();
    const QString path = export_watch_.property("path").toString();
    setBusy(false, {});
    // The "Exporting to …" line gives way to the evaluation's summary and
    // what became of the export.
    const QString done = error.isEmpty() ? tr("Weights exported to %1.").arg(path) : tr("Export failed: %1").arg(error);
    showResult();
    summary_->setText((result_ ? summary_->text() + "<br>" : QString()) + done.toHtmlEscaped());
    if (!error.isEmpty() && presenter_) presenter_->error(this, tr("Cannot export weights"), error);
    Q_EMIT exported(path, error);
  });
  setBusy(false, {});
}

EvaluationView::~EvaluationView() {
  // The workers only touch their own copies, but must not outlive the view's
  // watchers.
  eval_watch_.waitForFinished();
  export_watch_.waitForFinished();
}

void EvaluationView::setRun(const RunConfig& config, const QString& run_dir) {
  config_ = config;
  run_dir_ = run_dir;
  checkpoints_ = list_checkpoints(run_dir.toStdString());
  filling_ = true;
  picker_->clear();
  for (const auto& c : checkpoints_) {
    QString text = tr("%1 · step %2 · epoch %3").arg(QFileInfo(QString::fromStdString(c.dir)).fileName()).arg(c.step).arg(c.epoch);
    // A mid-epoch checkpoint carries the last finished epoch's figure: say
    // which epoch it is from rather than pass it off as this one's.
    if (c.val_accuracy) {
      text += tr(" · val acc %1").arg(*c.val_accuracy, 0, 'f', 3);
      if (c.val_epoch > 0 && c.val_epoch != c.epoch) text += tr(" (epoch %1)").arg(c.val_epoch);
    }
    picker_->addItem(text, QString::fromStdString(c.dir));
  }
  filling_ = false;
  setWindowTitle(tr("Evaluate %1 — Strata").arg(QFileInfo(run_dir).fileName()));
  if (checkpoints_.empty()) {
    result_.reset();
    showResult();
    summary_->setText(tr("This run has no checkpoint."));
    return;
  }
  evaluateCheckpoint(0);
}

void EvaluationView::evaluateCheckpoint(int index) {
  if (index < 0 || index >= static_cast<int>(checkpoints_.size()) || busy()) return;
  if (picker_->currentIndex() != index) {
    filling_ = true;
    picker_->setCurrentIndex(index);
    filling_ = false;
  }
  const std::string dir = checkpoints_[static_cast<size_t>(index)].dir;
  setBusy(true, tr("Evaluating %1 on the test split…").arg(QString::fromStdString(dir)));
  // Data loading and the forward passes take seconds on real data sets: a
  // pool thread does them and the watcher brings the result back.
  eval_watch_.setFuture(QtConcurrent::run([config = config_, dir]() -> std::shared_ptr<CheckpointEvaluation> {
    auto out = std::make_shared<CheckpointEvaluation>();
    try {
      *out = evaluate_checkpoint(config, dir, kSamples);
    } catch (const std::exception& e) {
      out->checkpoint = dir;
      out->error = std::string("error: ") + e.what();
    }
    return out;
  }));
}

void EvaluationView::exportWeights() {
  if (checkpoint().isEmpty() || !presenter_) return;
  const QString suggested = QFileInfo(run_dir_).absolutePath() + "/" + QString::fromStdString(config_.name) + "-" +
                            QFileInfo(checkpoint()).fileName() + ".safetensors";
  QString path = presenter_->saveFileName(this, tr("Export weights"), suggested, tr("safetensors (*.safetensors)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += ".safetensors";
  exportWeightsTo(path);
}

void EvaluationView::exportWeightsTo(const QString& path) {
  if (checkpoint().isEmpty() || busy()) return;
  setBusy(true, tr("Exporting to %1…").arg(path));
  export_watch_.setProperty("path", path);
  export_watch_.setFuture(QtConcurrent::run([config = config_, dir = checkpoint().toStdString(), out = path.toStdString()]() -> QString {
    try {
      export_checkpoint_weights(config, dir, out);
      return {};
    } catch (const std::exception& e) {
      return QString::fromStdString(e.what());
    }
  }));
}

QString EvaluationView::summaryText() const { return summary_->text(); }

// Until the watcher's finished handler has shown the result, not merely until
// the pool thread is done: the view is busy until the user sees the outcome.
bool EvaluationView::busy() const { return busy_; }
int EvaluationView::checkpointCount() const { return static_cast<int>(checkpoints_.size()); }
QString EvaluationView::checkpoint() const { return picker_->currentData().toString(); }

QString EvaluationView::errorText() const {
  return result_ ? QString::fromStdString(result_->error) : QString();
}

bool EvaluationView::sampleMarkedWrong(int i) const {
  const QTableWidgetItem* item = samples_->item(i / kGridColumns, i % kGridColumns);
  return item && item->data(Qt::UserRole).toBool();
}

void EvaluationView::setBusy(bool busy, const QString& what) {
  busy_ = busy;
  picker_->setEnabled(!busy);
  export_->setEnabled(!busy && !checkpoint().isEmpty());
  if (busy) summary_->setText(what);
}

void EvaluationView::showResult() {
  confusion_->clear();
  per_class_->setRowCount(0);
  samples_->clear();
  if (!result_) return;
  if (!errorText().isEmpty()) {
    summary_->setText(QStringLiteral("<span style='color:#b00'>%1</span>").arg(errorText().toHtmlEscaped()));
    return;
  }
  const auto& e = result_->evaluation;
  summary_->setText(tr("%1: test loss %2 · accuracy %3 · %4 examples (on %5)")
                        .arg(QFileInfo(QString::fromStdString(result_->checkpoint)).fileName())
                        .arg(e.loss, 0, 'g', 5)
                        .arg(e.accuracy, 0, 'f', 4)
                        .arg(e.examples)
                        .arg(QString::fromStdString(result_->device)));
  const int n = static_cast<int>(e.confusion.size());
  QStringList names;
  for (const auto& c : result_->class_names) names << QString::fromStdString(c);
  confusion_->setRowCount(n);
  confusion_->setColumnCount(n);
  // Rows "3 · Dress", columns "3" (hover: "Dress"): the numbers tie each
  // predicted column to its true-class row without names too wide for columns.
  for (int c = 0; c < n; ++c) {
    const QString name = c < names.size() ? names[c] : QString();
    confusion_->setVerticalHeaderItem(c, new QTableWidgetItem(name.isEmpty() ? QString::number(c)
                                                                              : QStringLiteral("%1 · %2").arg(c).arg(name)));
    auto* column = new QTableWidgetItem(QString::number(c));
    column->setToolTip(tr("predicted %1").arg(name));
    confusion_->setHorizontalHeaderItem(c, column);
  }
  // Heat map: each cell's shade is its share of the row (the true class), so
  // a weak class reads as well as a strong one.
  for (int r = 0; r < n; ++r) {
    int64_t row_sum = 0;
    for (auto v : e.confusion[static_cast<size_t>(r)]) row_sum += v;
    for (int c = 0; c < n; ++c) {
      const int64_t v = e.confusion[static_cast<size_t>(r)][static_cast<size_t>(c)];
      auto* item = new QTableWidgetItem(QString::number(v));
      item->setTextAlignment(Qt::AlignCenter);
      const double share = row_sum > 0 ? static_cast<double>(v) / static_cast<double>(row_sum) : 0.0;
      const int fade = static_cast<int>(255 - 200 * share);
      item->setBackground(r == c ? QColor(fade, 255, fade) : QColor(255, fade, fade));
      confusion_->setItem(r, c, item);
    }
  }
  const auto per_class = e.per_class_accuracy();
  per_class_->setRowCount(static_cast<int>(per_class.size()));
  for (size_t c = 0; c < per_class.size(); ++c) {
    per_class_->setItem(static_cast<int>(c), 0, new QTableWidgetItem(names.value(static_cast<int>(c))));
    per_class_->setItem(static_cast<int>(c), 1, new QTableWidgetItem(QString::number(per_class[c], 'f', 4)));
  }
  const int count = static_cast<int>(result_->samples.size());
  samples_->setColumnCount(kGridColumns);
  samples_->setRowCount((count + kGridColumns - 1) / kGridColumns);
  for (int i = 0; i < count; ++i) {
    const auto& s = result_->samples[static_cast<size_t>(i)];
    const bool wrong = s.predicted != s.label;
    auto* item = new QTableWidgetItem(QStringLiteral("%1\n(%2)").arg(names.value(s.predicted), names.value(s.label)));
    if (!s.pixels.empty()) item->setIcon(QIcon(sample_pixmap(s)));
    item->setTextAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    item->setToolTip(tr("predicted %1, true %2").arg(names.value(s.predicted), names.value(s.label)));
    item->setData(Qt::UserRole, wrong);
    if (wrong) {
      item->setForeground(kWrong);
      item->setBackground(QColor(255, 225, 225));
    }
    samples_->setItem(i / kGridColumns, i % kGridColumns, item);
  }
  samples_->resizeColumnsToContents();
  samples_->resizeRowsToContents();
}

}  // namespace strata::ui
