#pragma once
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <memory>

#include "trace/ChromeTraceReader.h"

namespace strata::ui {

// Reads trace files on a pool thread. A run's trace.json grows by about
// 2.6 kB per step of two replicas (12 MB for ten epochs of the MLP at batch
// 128): parsing it on the window's thread froze the window. One file at a time:
// asking for another while one is read drops the first one's result (its
// read runs to the end unseen; a parse cannot be interrupted).
class TraceLoader : public QObject {
  Q_OBJECT
public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;

  void load(const QString& path);
  // The latest file asked for is being read, or its answer not yet given
  // (the watcher's future ends before its finished signal is delivered).
  bool busy() const { return busy_; }

Q_SIGNALS:
  void loaded(const QString& path, std::shared_ptr<const strata::trace::TraceContents> contents);
  // The reader's message names the file and says why.
  void failed(const QString& path, const QString& message);

private:
  struct Result {
    uint64_t generation = 0;  // which load() it answers
    std::shared_ptr<const trace::TraceContents> contents;
    QString error;
  };
  QFutureWatcher<Result> watcher_;
  QString path_;
  uint64_t generation_ = 0;
  bool busy_ = false;
};

}  // namespace strata::ui
