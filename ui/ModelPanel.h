#pragma once
#include <QWidget>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/Shape.h"
#include "train/RunConfig.h"

class QLabel;
class QTableWidget;

namespace strata::ui {

// The model as a layer table: add, remove, reorder and edit layers; each
// row shows the layer's output shape and parameter count, re-checked on
// every edit against the dataset's input shape. Settings are edited as
// "key=value" text so layer types added to the engine later work without
// changes here.
class ModelPanel : public QWidget {
  Q_OBJECT
public:
  explicit ModelPanel(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;
  std::vector<nlohmann::json> layers() const;

  int layerCount() const;
  void addLayer(const nlohmann::json& spec, int row = -1);
  void removeLayer(int row);
  void moveLayer(int row, int delta);
  // Replaces row `row`'s settings text, as if typed.
  void setLayerSettings(int row, const QString& text);
  void setLayerType(int row, const QString& type);
  qint64 totalParams() const { return total_params_; }
  QString problems() const;
  QString outputShape(int row) const;
  qint64 layerParams(int row) const;
  QTableWidget* table() const { return table_; }

  // "units=256, activation=relu" <-> {"units": 256, "activation": "relu"}
  static QString settingsText(const nlohmann::json& spec);
  static nlohmann::json parseSettings(const QString& type, const QString& text);

public slots:
  void setInput(const strata::Shape& example_shape, int classes);

signals:
  void edited();

private:
  void insertRow(int row, const nlohmann::json& spec);
  void recheck();
  void changed();

  QTableWidget* table_;
  QLabel* total_;
  QLabel* problems_;
  Shape input_;
  bool have_input_ = false;
  int classes_ = 0;
  qint64 total_params_ = 0;
  bool loading_ = false;
};

}  // namespace strata::ui
