// ProcessBridge against stand-in launchers (shell scripts that print a run's
// events the way mpirun relays rank 0's): how a run's end is decided when the
// launcher does not behave.
#include <QtTest>

#include <QSignalSpy>

#include "ProcessBridge.h"

using namespace strata;
using namespace strata::ui;

class TestProcessBridge : public QObject {
  Q_OBJECT
private slots:
  // mpirun that stays after rank 0's finished event, deaf to SIGINT, as
  // Open MPI 4.1 under --enable-recovery does when it has lost a host: the
  // run ends as it finished (completed), and the launcher is ended.
  void launcher_that_outlives_the_run_is_ended() {
    ProcessBridge bridge;
    bridge.setExitGrace(300);
    QSignalSpy running(&bridge, &ProcessBridge::runningChanged);
    QSignalSpy logs(&bridge, &ProcessBridge::logLine);
    std::vector<Event> seen;
    connect(&bridge, &ProcessBridge::events, this, [&seen](const std::vector<Event>& b) {
      seen.insert(seen.end(), b.begin(), b.end());
    });
    const QString script = R"(trap '' INT
echo '{"type":"run_started","project":"p","strategy":"parameter_server","replicas":1,"epochs":1}'
echo '{"type":"finished","status":"completed","message":"completed 1 epoch","epochs_completed":1,"steps":3,"time":0.1}'
exec sleep 600)";
    QElapsedTimer clock;
    clock.start();
    bridge.start("sh", {"-c", script});
    QTRY_VERIFY_WITH_TIMEOUT(!bridge.running(), 15000);
    QVERIFY2(clock.elapsed() < 12000, qPrintable(QString::number(clock.elapsed())));
    QCOMPARE(running.last().at(0).toBool(), false);
    QVERIFY(!seen.empty() && std::holds_alternative<FinishedEvent>(seen.back()));
    QCOMPARE(std::string(status_name(std::get<FinishedEvent>(seen.back()).status)), std::string("completed"));
    bool warned = false;
    for (const auto& l : logs) warned |= l.at(1).toString().contains("has not exited");
    QVERIFY(warned);
  }

  // A launcher that exits on its own right after the finished event is left
  // alone: no warning, nothing killed.
  void launcher_that_exits_is_left_alone() {
    ProcessBridge bridge;
    bridge.setExitGrace(300);
    QSignalSpy logs(&bridge, &ProcessBridge::logLine);
    bridge.start("sh", {"-c", R"(echo '{"type":"run_started","project":"p","strategy":"mirrored","replicas":1,"epochs":1}'
echo '{"type":"finished","status":"completed","message":"done","epochs_completed":1,"steps":3,"time":0.1}')"});
    QTRY_VERIFY_WITH_TIMEOUT(!bridge.running(), 10000);
    QTest::qWait(600);
    for (const auto& l : logs) QVERIFY2(!l.at(1).toString().contains("has not exited"), qPrintable(l.at(1).toString()));
  }
};

QTEST_GUILESS_MAIN(TestProcessBridge)
#include "test_process_bridge.moc"
