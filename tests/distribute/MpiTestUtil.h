#pragma once
// Running strata-run under real mpirun from tests.
#include <QProcess>
#include <QString>
#include <QStringList>

#include <QStandardPaths>
#include <QTest>

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

}  // namespace strata
