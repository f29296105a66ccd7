#include "ModelPanel.h"

#include "Wording.h"

#include <algorithm>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <set>

#include "nn/LayerFactory.h"
#include "train/ModelFactory.h"

namespace strata::ui {

namespace {
enum Column { kType = 0, kSettings, kShape, kParams, kColumns };

// What a new layer of a type starts with; types not listed start empty and
// the checker says which fields they need.
nlohmann::json defaults_for(const std::string& type) {
  if (type == "dense") return {{"type", "dense"}, {"units", 64}, {"activation", "relu"}};
  if (type == "dropout") return {{"type", "dropout"}, {"rate", 0.2}};
  return {{"type", type}};
}

QString with_commas(qint64 n) { return QLocale(QLocale::English).toString(n); }
}  // namespace

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(0, kColumns, this)), total_(new QLabel(this)), problems_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("<b>Model</b> (Sequential; settings as key=value, comma separated)"), this));
  table_->setObjectName("layerTable");
  table_->setHorizontalHeaderLabels({tr("Layer"), tr("Settings"), tr("Output shape"), tr("Parameters")});
  table_->horizontalHeader()->setSectionResizeMode(kSettings, QHeaderView::Stretch);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  layout->addWidget(table_, 1);

  auto* buttons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add"), this);
  auto* remove = new QPushButton(tr("Remove"), this);
  auto* up = new QPushButton(tr("Move up"), this);
  auto* down = new QPushButton(tr("Move down"), this);
  for (auto* b : {add, remove, up, down}) buttons->addWidget(b);
  buttons->addStretch();
  layout->addLayout(buttons);
  total_->setObjectName("totalParams");
  problems_->setObjectName("modelProblems");
  problems_->setWordWrap(true);
  problems_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(total_);
  layout->addWidget(problems_);

  connect(add, &QPushButton::clicked, this, [this] {
    // After the selected layer; with none selected, before the output layer
    // (a new hidden layer, the usual wish), not after it.
    const int row = table_->currentRow() >= 0 ? table_->currentRow() + 1 : std::max(0, table_->rowCount() - 1);
    addLayer(defaults_for("dense"), row);
  });
  connect(remove, &QPushButton::clicked, this, [this] { removeLayer(table_->currentRow()); });
  connect(up, &QPushButton::clicked, this, [this] { moveLayer(table_->currentRow(), -1); });
  connect(down, &QPushButton::clicked, this, [this] { moveLayer(table_->currentRow(), +1); });
  connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (!loading_ && item->column() == kSettings) changed();
  });
  recheck();
}

QString ModelPanel::settingsText(const nlohmann::json& spec) {
  QStringList parts;
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    if (it.key() == "type") continue;
    const QString value = it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString::fromStdString(it->dump());
    parts << QString::fromStdString(it.key()) + "=" + value;
  }
  return parts.join(", ");
}

nlohmann::json ModelPanel::parseSettings(const QString& type, const QString& text) {
  nlohmann::json spec = {{"type", type.toStdString()}};
  // Commas inside brackets belong to a value (kernel_size=[5,5]).
  QStringList parts;
  int depth = 0, start = 0;
  for (int i = 0; i <= text.size(); ++i) {
    const QChar c = i < text.size() ? text[i] : QChar(',');
    if (c == '[') ++depth;
    else if (c == ']') depth = std::max(0, depth - 1);
    else if (c == ',' && depth == 0) {
      parts << text.mid(start, i - start);
      start = i + 1;
    }
  }
  for (const QString& part : parts) {
    const int eq = part.indexOf('=');
    const QString key = part.left(eq).trimmed();
    if (key.isEmpty()) continue;
    const std::string value = eq < 0 ? std::string() : part.mid(eq + 1).trimmed().toStdString();
    // Numbers, booleans and arrays as JSON; anything else is a string
    // (activation=relu), so users need no quotes.
    nlohmann::json parsed = nlohmann::json::parse(value, nullptr, false);
    spec[key.toStdString()] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
  }
  return spec;
}

void ModelPanel::insertRow(int row, const nlohmann::json& spec) {
  const bool was = loading_;
  loading_ = true;
  table_->insertRow(row);
  auto* type = new QComboBox(table_);
  std::set<std::string> known;
  for (const auto& t : nn::layer_types()) {
    type->addItem(QString::fromStdString(t));
    known.insert(t);
  }
  const std::string t = spec.value("type", std::string("dense"));
  if (!known.count(t)) type->addItem(QString::fromStdString(t));  // unknown: kept so the checker can name it
  type->setCurrentText(QString::fromStdString(t));
  table_->setCellWidget(row, kType, type);
  table_->setItem(row, kSettings, new QTableWidgetItem(settingsText(spec)));
  for (int c : {kShape, kParams}) {
    auto* item = new QTableWidgetItem;
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    table_->setItem(row, c, item);
  }
  connect(type, &QComboBox::currentTextChanged, this, [this, type](const QString& text) {
    if (loading_) return;
    for (int r = 0; r < table_->rowCount(); ++r)
      if (table_->cellWidget(r, kType) == type) {
        loading_ = true;
        table_->item(r, kSettings)->setText(settingsText(defaults_for(text.toStdString())));
        loading_ = false;
      }
    changed();
  });
  loading_ = was;
}

std::vector<nlohmann::json> ModelPanel::layers() const {
  std::vector<nlohmann::json> out;
  for (int r = 0; r < table_->rowCount(); ++r) {
    auto* type = qobject_cast<QComboBox*>(table_->cellWidget(r, kType));
    out.push_back(parseSettings(type->currentText(), table_->item(r, kSettings)->text()));
  }
  return out;
}

int ModelPanel::layerCount() const { return table_->rowCount(); }

void ModelPanel::addLayer(const nlohmann::json& spec, int row) {
  if (row < 0 || row > table_->rowCount()) row = table_->rowCount();
  insertRow(row, spec);
  table_->selectRow(row);
  changed();
}

void ModelPanel::removeLayer(int row) {
  if (row < 0 || row >= table_->rowCount()) return;
  table_->removeRow(row);
  changed();
}

void ModelPanel::moveLayer(int row, int delta) {
  const int to = row + delta;
  if (row < 0 || row >= table_->rowCount() || to < 0 || to >= table_->rowCount()) return;
  auto specs = layers();
  std::swap(specs[static_cast<size_t>(row)], specs[static_cast<size_t>(to)]);
  loading_ = true;
  table_->setRowCount(0);
  for (size_t i = 0; i < specs.size(); ++i) insertRow(static_cast<int>(i), specs[i]);
  loading_ = false;
  table_->selectRow(to);
  changed();
}

void ModelPanel::setLayerSettings(int row, const QString& text) { table_->item(row, kSettings)->setText(text); }

void ModelPanel::setLayerType(int row, const QString& type) {
  qobject_cast<QComboBox*>(table_->cellWidget(row, kType))->setCurrentText(type);
}

void ModelPanel::setConfig(const RunConfig& config) {
  loading_ = true;
  table_->setRowCount(0);
  for (size_t i = 0; i < config.layers.size(); ++i) insertRow(static_cast<int>(i), config.layers[i]);
  loading_ = false;
  recheck();
}

void ModelPanel::applyTo(RunConfig& config) const { config.layers = layers(); }

void ModelPanel::setInput(const Shape& example_shape, int classes) {
  input_ = example_shape;
  classes_ = classes;
  have_input_ = true;
  recheck();
}

void ModelPanel::changed() {
  recheck();
  Q_EMIT edited();
}

QString ModelPanel::problems() const { return problems_->text(); }
QString ModelPanel::outputShape(int row) const { return table_->item(row, kShape)->text(); }
qint64 ModelPanel::layerParams(int row) const { return table_->item(row, kParams)->text().remove(',').toLongLong(); }

void ModelPanel::recheck() {
  const bool was = loading_;
  loading_ = true;
  const auto specs = layers();
  QStringList problems;
  for (int r = 0; r < table_->rowCount(); ++r) {
    const auto found = nn::check_layer(specs[static_cast<size_t>(r)], "model.layers[" + std::to_string(r) + "]");
    QStringList row_problems;
    for (const auto& p : found) row_problems << with_layer_number(QString::fromStdString(p));
    auto* settings = table_->item(r, kSettings);
    settings->setBackground(row_problems.isEmpty() ? QBrush() : QBrush(QColor(255, 220, 220)));
    settings->setToolTip(row_problems.join('\n'));
    table_->item(r, kShape)->setText(QString());
    table_->item(r, kParams)->setText(QString());
    problems << row_problems;
  }
  total_params_ = 0;
  if (specs.empty()) problems << tr("The model has no layers.");
  if (problems.isEmpty() && have_input_) {
    try {
      RunConfig c;
      c.layers = specs;
      // A throwaway model: summary() checks the shapes, building it gives
      // the parameter counts (variables exist only once built).
      auto model = make_model(c);
      const auto summary = model->summary(input_);
      model->build(input_);
      for (size_t i = 0; i < summary.size(); ++i) {
        const auto r = static_cast<int>(i);
        const qint64 params = model->layers()[i]->param_count();
        total_params_ += params;
        table_->item(r, kShape)->setText(QString::fromStdString(summary[i].output_shape.str()));
        table_->item(r, kParams)->setText(with_commas(params));
      }
      const Shape& out = summary.back().output_shape;
      if (out.rank() != 1 || out[0] < classes_)
        problems << tr("The last layer gives %1 outputs per example but the dataset has %2 classes.")
                        .arg(QString::fromStdString(out.str()))
                        .arg(classes_);
    } catch (const std::exception& e) {
      problems << with_layer_number(QString::fromStdString(e.what()));
    }
  }
  total_->setText(have_input_ ? tr("Input %1 · total %2 parameters").arg(QString::fromStdString(input_.str()), with_commas(total_params_))
                              : tr("Input shape not known yet: load the dataset preview."));
  QStringList escaped;
  for (const auto& p : problems) escaped << p.toHtmlEscaped();
  problems_->setText(problems.isEmpty() ? QString() : "<span style='color:#b00'>" + escaped.join("<br>") + "</span>");
  loading_ = was;
}

}  // namespace strata::ui
