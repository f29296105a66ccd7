#pragma once
// Running strata-run under real mpirun from tests.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <QStandardPaths>
#include <QTest>

#include <vector>

// In a test's initTestCase(): skip the whole test without MPI or mpirun.
#ifdef STRATA_WITH_MPI
#define STRATA_SKIP_WITHOUT_MPI()                                             \
  if (QStandardPaths::findExecutable("mpirun").isEmpty())                    \
  QSKIP("mpirun is not installed (apt install openmpi-bin)")
#else
#define STRATA_SKIP_WITHOUT_MPI() QSKIP("this build has no MPI support")
#endif

namespace strata {

inline QString bin(const char* rel) { return QStringLiteral(STRATA_BINARY_DIR "/") + rel; }

inline QStringList mpirun_args(int ranks) {
  // Root in containers and more ranks than cores on small machines.
  return {"--allow-run-as-root", "--oversubscribe", "-np", QString::number(ranks)};
}

// Each rank's exit status. mpirun --enable-recovery exits 0 even when every
// rank fails (`mpirun --enable-recovery -np 2 sh -c 'exit 23'` returns 0), so
// tests that need it run each rank through a shell that writes its status to
// DIR/rank.N (N = the rank); rank_statuses() reads them back (-1: none written,
// the rank's shell itself was killed).
inline QStringList with_rank_status(const QString& dir, const QStringList& command) {
  return QStringList{"sh", "-c", "\"$@\"; echo $? > \"" + dir + "/rank.$OMPI_COMM_WORLD_RANK\"", "sh"} + command;
}
inline std::vector<int> rank_statuses(const QString& dir, int ranks) {
  std::vector<int> out;
  for (int r = 0; r < ranks; ++r) {
    QFile f(dir + "/rank." + QString::number(r));
    out.push_back(f.open(QIODevice::ReadOnly) ? QString(f.readAll()).trimmed().toInt() : -1);
  }
  return out;
}
inline QString statuses_text(const std::vector<int>& s) {
  QString t;
  for (size_t r = 0; r < s.size(); ++r) t += QString("rank %1: %2; ").arg(r).arg(s[r]);
  return t;
}

struct Result {
  int code;
  QString out, err;
};

inline Result run(const QString& program, const QStringList& args, int timeout_ms = 120000) {
  QProcess p;
  p.start(program, args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    return {-1, p.readAllStandardOutput(), "timeout: " + p.readAllStandardError()};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, p.readAllStandardOutput(), p.readAllStandardError()};
}

// The small synthetic example project every process test trains.
inline QString tiny() { return QStringLiteral(STRATA_SOURCE_DIR "/resources/examples/tiny-synthetic.strata"); }

// The events of one type in a JSONL stream (strata-run --events jsonl).
inline std::vector<QJsonObject> events(const QString& jsonl, const char* type) {
  std::vector<QJsonObject> out;
  for (auto& line : jsonl.split('\n', Qt::SkipEmptyParts)) {
    auto o = QJsonDocument::fromJson(line.toUtf8()).object();
    if (o["type"].toString() == type) out.push_back(o);
  }
  return out;
}

// What to show when a run went wrong: its events other than steps, and stderr.
inline QString story(const Result& r) {
  QString out;
  for (auto& line : r.out.split('\n', Qt::SkipEmptyParts))
    if (!line.contains("\"type\":\"step\"")) out += line.left(300) + "\n";
  return out + r.err.right(1500);
}

}  // namespace strata
