#include "TraceLoader.h"

#include <QtConcurrent/QtConcurrentRun>

namespace strata::ui {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcherBase::finished, this, [this] {
    // Only the latest load() is answered, even if a superseded read's
    // report was already on its way.
    Result r = watcher_.result();
    if (r.generation != generation_) return;
    busy_ = false;
    if (r.contents) Q_EMIT loaded(path_, std::move(r.contents));
    else Q_EMIT failed(path_, r.error);
  });
}

TraceLoader::~TraceLoader() {
  // The read only touches its own copies, but the watcher must not go first.
  watcher_.waitForFinished();
}

void TraceLoader::load(const QString& path) {
  path_ = path;
  busy_ = true;
  watcher_.setFuture(QtConcurrent::run([file = path.toStdString(), generation = ++generation_]() -> Result {
    try {
      return {generation, std::make_shared<const trace::TraceContents>(trace::read_chrome_trace(file)), {}};
    } catch (const std::exception& e) {
      return {generation, nullptr, QString::fromStdString(e.what())};
    }
  }));
}

}  // namespace strata::ui
