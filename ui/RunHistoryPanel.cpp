#include "RunHistoryPanel.h"

#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "RunHistory.h"
#include "SettingsDiff.h"
#include "SettingsDiffDialog.h"
#include "project/RunNotes.h"

namespace strata::ui {

namespace {
constexpr int kDirRole = Qt::UserRole;
constexpr int kResumableRole = Qt::UserRole + 1;
constexpr int kCheckpointRole = Qt::UserRole + 2;
constexpr int kSortRole = Qt::UserRole + 3;
constexpr int kShownRole = Qt::UserRole + 4;  // the name or tags last shown, to tell an edit from a check

// Sorts by a number (kSortRole) rather than by its text; missing figures
// (NaN) sort below every number.
class NumberItem final : public QTableWidgetItem {
public:
  NumberItem(const QString& text, double key) : QTableWidgetItem(text) { setData(kSortRole, key); }
  bool operator<(const QTableWidgetItem& other) const override {
    const double a = data(kSortRole).toDouble(), b = other.data(kSortRole).toDouble();
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
    return a < b;
  }
};

QTableWidgetItem* number(std::optional<double> v, int decimals) {
  return new NumberItem(v ? QString::number(*v, 'f', decimals) : QStringLiteral("—"),
                        v ? *v : std::numeric_limits<double>::quiet_NaN());
}

QString tags_text(const std::vector<std::string>& tags) {
  QStringList out;
  for (const auto& t : tags) out << QString::fromStdString(t);
  return out.join(", ");
}

nlohmann::json config_json(const QString& run_dir) {
  std::ifstream in((run_dir + "/config.json").toStdString());
  return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
}
}  // namespace

RunHistoryPanel::RunHistoryPanel(QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(this)), note_(new QLabel(this)), notes_label_(new QLabel(this)),
      notes_(new QPlainTextEdit(this)) {
  auto* layout = new QVBoxLayout(this);
  table_->setObjectName("runTable");
  table_->setColumnCount(ColumnCount);
  table_->setHorizontalHeaderLabels({tr("Run"), tr("Started"), tr("Status"), tr("Strategy"), tr("Epochs"), tr("Steps"),
                                     tr("Batch"), tr("Optimizer"), tr("LR"), tr("Schedule"), tr("Loss"), tr("Val acc"),
                                     tr("Best val acc"), tr("Tags")});
  table_->horizontalHeaderItem(Name)->setToolTip(tr("Double-click to rename; check to overlay the run on the charts"));
  table_->horizontalHeaderItem(Tags)->setToolTip(tr("Double-click to edit, comma-separated"));
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  // Newest first until the user sorts by another column (the header keeps
  // the choice across refreshes).
  table_->horizontalHeader()->setSortIndicator(Started, Qt::DescendingOrder);
  table_->setSortingEnabled(true);
  // Room for a few runs however the window divides its height.
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + 4 * table_->verticalHeader()->defaultSectionSize() +
                           table_->horizontalScrollBar()->sizeHint().height() + 4);
  note_->setWordWrap(true);
  notes_->setObjectName("runNotes");
  notes_->setPlaceholderText(tr("Notes about the selected run: what you changed, what you saw"));
  notes_->installEventFilter(this);  // saved when the editor loses focus
  // A few lines; the table keeps the height (longer notes scroll).
  notes_->setMaximumHeight(notes_->fontMetrics().lineSpacing() * 4 + 12);

  auto* refresh_button = new QPushButton(tr("Refresh"), this);
  resume_ = new QPushButton(tr("Resume"), this);
  resume_->setObjectName("resumeRun");
  evaluate_ = new QPushButton(tr("Evaluate…"), this);
  evaluate_->setObjectName("evaluateRun");
  evaluate_->setToolTip(tr("Confusion matrix, per-class accuracy and test samples for a checkpoint of the selected run; "
                           "export its weights"));
  timeline_ = new QPushButton(tr("Timeline"), this);
  timeline_->setObjectName("openRunTimeline");
  compare_ = new QPushButton(tr("Compare settings…"), this);
  compare_->setObjectName("compareRuns");
  compare_->setToolTip(tr("Select two runs (Ctrl+click) to see their settings side by side"));

  auto* notes_box = new QWidget(this);
  auto* notes_layout = new QVBoxLayout(notes_box);
  notes_layout->setContentsMargins(0, 0, 0, 0);
  notes_layout->addWidget(notes_label_);
  notes_layout->addWidget(notes_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(notes_box);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(note_);
  layout->addWidget(split, 1);
  auto* buttons = new QHBoxLayout;
  for (auto* b : {refresh_button, resume_, evaluate_, timeline_, compare_}) buttons->addWidget(b);
  buttons->addStretch();
  layout->addLayout(buttons);

  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    updateButtons();
    showNotesOf(currentRunDir());
  });
  connect(table_, &QTableWidget::itemChanged, this, &RunHistoryPanel::onItemChanged);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (canResume(table_->currentRow())) Q_EMIT resumeRequested(currentRunDir());
  });
  connect(evaluate_, &QPushButton::clicked, this, [this] {
    if (!currentRunDir().isEmpty()) Q_EMIT evaluateRequested(currentRunDir());
  });
  connect(timeline_, &QPushButton::clicked, this, [this] {
    if (!currentRunDir().isEmpty()) Q_EMIT timelineRequested(QDir(currentRunDir()).filePath("trace.json"));
  });
  connect(compare_, &QPushButton::clicked, this, &RunHistoryPanel::compareSelected);
  connect(refresh_button, &QPushButton::clicked, this, &RunHistoryPanel::refresh);
  refresh();
}

void RunHistoryPanel::setProject(const QString& project_path) {
  saveNotes();
  project_ = project_path;
  refresh();
}

void RunHistoryPanel::refresh() {
  saveNotes();
  // Overlays and the selection stay across a refresh (a finished run is
  // added at the top).
  QStringList checked;
  const QString current = currentRunDir();
  for (int i = 0; i < table_->rowCount(); ++i)
    if (table_->item(i, Name)->checkState() == Qt::Checked) checked << runDir(i);
  filling_ = true;
  table_->setSortingEnabled(false);
  table_->clearContents();
  table_->setRowCount(0);
  QStringList unreadable;
  if (project_.isEmpty()) {
    note_->setText(tr("Save the project to keep its runs: they are stored beside the project file."));
  } else {
    const auto runs = list_runs(project_.toStdString());
    note_->setText(runs.empty() ? tr("No runs yet. Runs are stored in %1.").arg(QString::fromStdString(runs_folder_for(project_.toStdString())))
                                : tr("Check a run to overlay it on the charts; select two to compare their settings."));
    table_->setRowCount(static_cast<int>(runs.size()));
    for (int row = 0; row < static_cast<int>(runs.size()); ++row) {
      const RunRecord& r = runs[static_cast<size_t>(row)];
      if (!r.notes_error.empty()) unreadable << QString::fromStdString(r.notes_error);
      const QString dir = QString::fromStdString(r.dir);
      auto* name = new QTableWidgetItem(QString::fromStdString(r.display_name()));
      name->setData(kDirRole, dir);
      name->setData(kResumableRole, r.resumable());
      name->setData(kCheckpointRole, r.has_checkpoint);
      name->setData(kShownRole, name->text());
      name->setToolTip(dir + (r.summary.empty() ? QString() : "\n" + QString::fromStdString(r.summary)));
      name->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable | Qt::ItemIsEditable);
      name->setCheckState(checked.contains(dir) ? Qt::Checked : Qt::Unchecked);
      auto* tags = new QTableWidgetItem(tags_text(r.notes.tags));
      tags->setData(kShownRole, tags->text());
      tags->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable);
      const QString strategy = QString::fromStdString(r.strategy);
      QTableWidgetItem* cells[ColumnCount] = {
          name,
          new QTableWidgetItem(QString::fromStdString(r.name)),
          new QTableWidgetItem(QString::fromStdString(r.status_text())),
          new QTableWidgetItem(strategy),
          number(static_cast<double>(r.epochs_completed), 0),
          number(static_cast<double>(r.steps), 0),
          r.batch_size ? number(static_cast<double>(r.batch_size), 0) : number(std::nullopt, 0),
          new QTableWidgetItem(QString::fromStdString(r.optimizer)),
          new NumberItem(r.learning_rate > 0 ? QString::number(r.learning_rate, 'g', 6) : QStringLiteral("—"),
                         r.learning_rate),
          new QTableWidgetItem(QString::fromStdString(r.lr_schedule)),
          number(r.final_loss, 4),
          number(r.final_val_accuracy, 4),
          number(r.best_val_accuracy, 4),
          tags};
      for (int c = 0; c < ColumnCount; ++c) {
        if (c != Name && c != Tags) cells[c]->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        table_->setItem(row, c, cells[c]);
      }
    }
  }
  table_->setSortingEnabled(true);
  for (int i = 0; i < table_->rowCount(); ++i)
    if (runDir(i) == current) table_->selectRow(i);
  filling_ = false;
  updateButtons();
  showNotesOf(currentRunDir());
  if (!unreadable.isEmpty()) Q_EMIT problem(tr("Run notes not read"), unreadable.join("\n"));
}

template <typename Change>
bool RunHistoryPanel::editNotes(const QString& run_dir, Change change) {
  try {
    RunNotes n = read_run_notes(run_dir.toStdString());
    change(n);
    write_run_notes(run_dir.toStdString(), n);
    return true;
  } catch (const std::exception& e) {
    Q_EMIT problem(tr("Cannot save the run's notes"), QString::fromStdString(e.what()));
    return false;
  }
}

void RunHistoryPanel::onItemChanged(QTableWidgetItem* item) {
  if (filling_) return;
  QTableWidgetItem* name = table_->item(item->row(), Name);
  if (!name) return;
  const QString dir = name->data(kDirRole).toString();
  if (item->column() == Name && item->text() != item->data(kShownRole).toString()) {
    // Renamed. An emptied name gives the folder's back.
    const QString given = item->text().trimmed();
    if (editNotes(dir, [&](RunNotes& n) { n.name = given.toStdString(); })) {
      filling_ = true;
      item->setText(given.isEmpty() ? QFileInfo(dir).fileName() : given);
      item->setData(kShownRole, item->text());
      filling_ = false;
    }
    return;
  }
  if (item->column() == Tags && item->text() != item->data(kShownRole).toString()) {
    const auto tags = parse_tags(item->text().toStdString());
    if (editNotes(dir, [&](RunNotes& n) { n.tags = tags; })) {
      filling_ = true;
      item->setText(tags_text(tags));
      item->setData(kShownRole, item->text());
      filling_ = false;
    }
    return;
  }
  if (item->column() == Name) Q_EMIT overlayToggled(dir, item->checkState() == Qt::Checked);
}

void RunHistoryPanel::showNotesOf(const QString& run_dir) {
  if (run_dir == notes_dir_) return;
  saveNotes();
  notes_dir_ = run_dir;
  QString text;
  if (!run_dir.isEmpty()) {
    try {
      text = QString::fromStdString(read_run_notes(run_dir.toStdString()).notes);
    } catch (const std::exception&) {
      // Reported by refresh(); the editor starts empty and a save replaces the bad file.
    }
  }
  notes_->setPlainText(text);
  notes_->document()->setModified(false);
  notes_->setEnabled(!run_dir.isEmpty());
  const int row = table_->currentRow();
  notes_label_->setText(run_dir.isEmpty() || row < 0 ? tr("Notes (select a run)")
                                                     : tr("Notes for %1").arg(table_->item(row, Name)->text()));
}

void RunHistoryPanel::saveNotes() {
  if (notes_dir_.isEmpty() || !notes_->document()->isModified()) return;
  const std::string text = notes_->toPlainText().toStdString();
  if (editNotes(notes_dir_, [&](RunNotes& n) { n.notes = text; })) notes_->document()->setModified(false);
}

bool RunHistoryPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == notes_ && event->type() == QEvent::FocusOut) saveNotes();
  return QWidget::eventFilter(watched, event);
}

void RunHistoryPanel::compareSelected() {
  const auto rows = table_->selectionModel()->selectedRows();
  if (rows.size() != 2) return;
  const int a = rows[0].row() < rows[1].row() ? rows[0].row() : rows[1].row();
  const int b = rows[0].row() < rows[1].row() ? rows[1].row() : rows[0].row();
  const nlohmann::json ca = config_json(runDir(a)), cb = config_json(runDir(b));
  if (ca.is_discarded() || cb.is_discarded() || ca.is_null() || cb.is_null()) {
    Q_EMIT problem(tr("Cannot compare"), tr("%1: no readable config.json").arg(ca.is_discarded() || ca.is_null() ? runDir(a) : runDir(b)));
    return;
  }
  delete comparison_;
  comparison_ = new SettingsDiffDialog(table_->item(a, Name)->text(), table_->item(b, Name)->text(), diff_settings(ca, cb), this);
  comparison_->show();
}

void RunHistoryPanel::updateButtons() {
  const int row = table_->currentRow();
  const bool any = row >= 0 && !table_->selectionModel()->selectedRows().isEmpty();
  resume_->setEnabled(!running_ && any && canResume(row));
  resume_->setToolTip(!any ? tr("Select a run to resume")
                      : canResume(row) ? tr("Continue this run from its latest checkpoint, in the same run folder")
                                       : tr("Only a stopped or failed run with a checkpoint can be resumed"));
  evaluate_->setEnabled(any && table_->item(row, Name)->data(kCheckpointRole).toBool());
  // Checked when the selection changes: a run recorded with the timeline on.
  const bool traced = any && QFileInfo::exists(QDir(currentRunDir()).filePath("trace.json"));
  timeline_->setEnabled(traced);
  timeline_->setToolTip(traced ? tr("Show the run's trace.json in the Timeline tab")
                               : tr("Select a run recorded with the step timeline (its folder has trace.json; merge a "
                                    "multi-worker run's trace.rankN.json files with strata-run --merge-traces and "
                                    "open the result from the Timeline tab)"));
  compare_->setEnabled(table_->selectionModel()->selectedRows().size() == 2);
}

void RunHistoryPanel::setRunning(bool running) {
  running_ = running;
  updateButtons();
}

void RunHistoryPanel::setCurrentRun(int row) { table_->selectRow(row); }
QString RunHistoryPanel::currentRunDir() const {
  const int row = table_->currentRow();
  if (row < 0 || table_->selectionModel()->selectedRows().isEmpty()) return {};
  return table_->item(row, Name) ? runDir(row) : QString();
}
bool RunHistoryPanel::canResume(int row) const {
  return row >= 0 && row < table_->rowCount() && table_->item(row, Name)->data(kResumableRole).toBool();
}

int RunHistoryPanel::runCount() const { return table_->rowCount(); }
int RunHistoryPanel::newestRow() const {
  int newest = -1;
  for (int i = 0; i < table_->rowCount(); ++i)  // folder names are time stamps
    if (newest < 0 || table_->item(i, Started)->text() > table_->item(newest, Started)->text()) newest = i;
  return newest;
}
QString RunHistoryPanel::runDir(int row) const { return table_->item(row, Name)->data(kDirRole).toString(); }
void RunHistoryPanel::setOverlay(int row, bool on) { table_->item(row, Name)->setCheckState(on ? Qt::Checked : Qt::Unchecked); }

}  // namespace strata::ui
