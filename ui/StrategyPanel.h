#pragma once
#include <QWidget>
#include <map>
#include <string>

#include "MultiWorkerLaunch.h"
#include "train/RunConfig.h"

class QButtonGroup;
class QLabel;
class QRadioButton;

namespace strata::ui {

class MultiWorkerPanel;
class ParameterServerSettings;

// Picks the distribution strategy. Every name the engine knows is listed;
// the ones this build or machine cannot run are disabled with a tooltip
// saying why, so users see what exists without being able to start it.
class StrategyPanel : public QWidget {
  Q_OBJECT
public:
  explicit StrategyPanel(QWidget* parent = nullptr);
  void setConfig(const RunConfig& config);
  void applyTo(RunConfig& config) const;
  std::string strategy() const;
  // Selects by name; false if unknown or unavailable.
  bool setStrategy(const std::string& name);
  bool isAvailable(const std::string& name) const;
  QString unavailableReason(const std::string& name) const;
  // mpirun settings, shown while MultiWorkerMirrored is chosen, or
  // ParameterServer as processes.
  MultiWorkerPanel* multiWorkerPanel() const { return workers_; }
  // The launch settings (not in the project), including whether a
  // parameter-server run goes to mpirun.
  MultiWorkerOptions multiWorkerOptions() const;
  // Servers, staleness bound, shard size: shown while ParameterServer is
  // chosen; saved in the project. Also its in-process/mpirun choice.
  ParameterServerSettings* parameterServerSettings() const { return ps_; }

signals:
  void strategyChanged(const QString& name);
  void edited();
  // ParameterServer's launch choice: as mpirun processes (one device each)
  // or in this process. A launch setting, so not an edit of the project.
  void parameterServerProcessesChanged(bool on);

private:
  // Shows the settings of the chosen strategy only.
  void showSettingsFor(const std::string& name);
  // The mpirun panel's wording and rank count for the chosen strategy.
  void updateWorkersPanel(const std::string& name);

  QButtonGroup* group_;
  QLabel* description_;
  MultiWorkerPanel* workers_;
  ParameterServerSettings* ps_;
  std::map<std::string, QRadioButton*> buttons_;
  std::map<std::string, QString> reasons_;  // empty = available
};

}  // namespace strata::ui
