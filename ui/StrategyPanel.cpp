#include "StrategyPanel.h"

#include <QButtonGroup>
#include <QLabel>
#include <QRadioButton>
#include <QVBoxLayout>

#include "MultiWorkerPanel.h"
#include "ParameterServerSettings.h"
#include "core/Error.h"
#include "distribute/Strategies.h"

namespace strata::ui {

namespace {
struct Info {
  const char* title;
  const char* description;
};
Info info_for(const std::string& name) {
  if (name == "one_device") return {"OneDevice", "One replica on one device; no collectives. The baseline the others are compared with."};
  if (name == "mirrored")
    return {"Mirrored", "A replica per selected device, each with a copy of every variable; gradients are all-reduced every step."};
  if (name == "central_storage")
    return {"CentralStorage", "Variables live once on the host; replicas' gradients are gathered there, applied once and read by all."};
  if (name == "multi_worker_mirrored")
    return {"MultiWorkerMirrored", "Mirrored across worker processes or machines, launched with mpirun; collectives over MPI/NCCL."};
  if (name == "parameter_server")
    return {"ParameterServer", "Variables sharded over parameter servers; each worker (a thread per device, or an mpirun "
                               "process) pulls the weights, computes gradients on its slice and pushes them, running at "
                               "most k rounds ahead."};
  return {nullptr, ""};
}

// Why a strategy cannot be started here. The engine is asked first (it is
// the authority on what this build has); the text adds what the user would
// need, which the engine's message does not say.
QString probe(const std::string& name) {
  // This process was not started by mpirun, so the engine refuses to build
  // the strategy here; what matters is whether the dashboard can launch
  // ranks that will.
  if (name == "multi_worker_mirrored") return multi_worker_unavailable_reason();
  try {
    StrategyOptions o;
    o.devices = {Device{}};
    o.threads = 1;
    make_strategy(name, o);
    return {};
  } catch (const std::exception& e) {
    return QObject::tr("Not available: %1").arg(QString::fromStdString(e.what()));
  }
}
}  // namespace

StrategyPanel::StrategyPanel(QWidget* parent) : QWidget(parent), group_(new QButtonGroup(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel(tr("<b>Distribution strategy</b>"), this));
  for (const auto& name : strategy_names()) {
    Info i = info_for(name);
    auto* button = new QRadioButton(i.title ? QString::fromLatin1(i.title) : QString::fromStdString(name), this);
    button->setObjectName(QString::fromStdString("strategy_" + name));
    const QString reason = probe(name);
    reasons_[name] = reason;
    button->setEnabled(reason.isEmpty());
    button->setToolTip(reason.isEmpty() ? QString::fromLatin1(i.description) : reason);
    group_->addButton(button);
    buttons_[name] = button;
    layout->addWidget(button);
    connect(button, &QRadioButton::toggled, this, [this, name](bool on) {
      if (!on) return;
      description_->setText(QString::fromLatin1(info_for(name).description));
      showSettingsFor(name);
      Q_EMIT strategyChanged(QString::fromStdString(name));
      Q_EMIT edited();
    });
  }
  description_ = new QLabel(this);
  description_->setWordWrap(true);
  description_->setStyleSheet("color: palette(mid);");
  layout->addWidget(description_);
  // The parameter-server settings come first: with processes chosen, the
  // mpirun settings follow them.
  ps_ = new ParameterServerSettings(this);
  ps_->hide();
  // The same check as the multi-worker strategy: the dashboard launches the
  // ranks, so MPI, mpirun and strata-run must all be there.
  ps_->setProcessesUnavailableReason(parameter_server_processes_unavailable_reason());
  connect(ps_, &ParameterServerSettings::edited, this, [this] {
    updateWorkersPanel(strategy());  // the server count is part of the rank count
    Q_EMIT edited();
  });
  connect(ps_, &ParameterServerSettings::acrossProcessesChanged, this, [this](bool on) {
    showSettingsFor(strategy());
    Q_EMIT parameterServerProcessesChanged(on);
  });
  layout->addWidget(ps_);
  workers_ = new MultiWorkerPanel(this);
  workers_->hide();
  connect(workers_, &MultiWorkerPanel::edited, this, &StrategyPanel::edited);
  layout->addWidget(workers_);
}

void StrategyPanel::showSettingsFor(const std::string& name) {
  const bool ps = name == "parameter_server";
  workers_->setVisible(name == "multi_worker_mirrored" || (ps && ps_->acrossProcesses()));
  ps_->setVisible(ps);
  updateWorkersPanel(name);
}

void StrategyPanel::updateWorkersPanel(const std::string& name) {
  StrategyConfig c;
  ps_->applyTo(c);
  workers_->setParameterServers(name == "parameter_server" ? c.servers : 0);
}

std::string StrategyPanel::strategy() const {
  for (const auto& [name, button] : buttons_)
    if (button->isChecked()) return name;
  return "one_device";
}

bool StrategyPanel::isAvailable(const std::string& name) const {
  auto it = reasons_.find(name);
  return it != reasons_.end() && it->second.isEmpty();
}

QString StrategyPanel::unavailableReason(const std::string& name) const {
  auto it = reasons_.find(name);
  return it == reasons_.end() ? tr("unknown strategy") : it->second;
}

bool StrategyPanel::setStrategy(const std::string& name) {
  auto it = buttons_.find(name);
  if (it == buttons_.end() || !it->second->isEnabled()) return false;
  it->second->setChecked(true);
  return true;
}

void StrategyPanel::setConfig(const RunConfig& config) {
  // A project may name a strategy this build lacks: show it selected (and
  // disabled) rather than silently switching; Start will report why.
  auto it = buttons_.find(config.strategy.name);
  if (it != buttons_.end()) {
    const QSignalBlocker blocker(this);
    it->second->setChecked(true);
    description_->setText(QString::fromLatin1(info_for(config.strategy.name).description));
  }
  // Whatever the strategy, so the values are there when the user picks
  // ParameterServer.
  ps_->setConfig(config.strategy);
  showSettingsFor(strategy());
  Q_EMIT strategyChanged(QString::fromStdString(strategy()));
}

MultiWorkerOptions StrategyPanel::multiWorkerOptions() const {
  MultiWorkerOptions o = workers_->options();
  o.parameter_server_processes = ps_->acrossProcesses();
  return o;
}

void StrategyPanel::applyTo(RunConfig& config) const {
  config.strategy.name = strategy();
  ps_->applyTo(config.strategy);  // saved only for parameter_server (ProjectFile)
}

}  // namespace strata::ui
