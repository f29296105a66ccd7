// The step timeline's trace core: TraceRecorder from many threads (every span
// arrives once, full buffers drop and count, recorders coming and going on a
// thread), the Chrome trace files (their events, the .partial rename, errors
// naming the path), merging rank files, reading them back, the per-step
// breakdown, and device spans read from a device's timing marks.
#include <QtTest/QtTest>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <latch>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "InertDeviceMemory.h"
#include "TestUtil.h"
#include "trace/ChromeTrace.h"
#include "trace/ChromeTraceReader.h"
#include "trace/DeviceLaneSchedule.h"
#include "trace/DeviceSpans.h"
#include "trace/StepBreakdown.h"
#include "trace/TraceRecorder.h"
#include "train/StepTracer.h"

using namespace strata;
using namespace strata::trace;
using nlohmann::json;

namespace {

Span span(SpanKind kind, Lane lane, int64_t step, double start, double duration, int64_t bytes = 0) {
  return Span{kind, lane, step, start, duration, bytes};
}
constexpr Lane replica(int i) { return {LaneKind::Replica, i}; }
constexpr Lane comm(int i) { return {LaneKind::CommStream, i}; }

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);  // throws (failing the test) on anything but valid JSON
}

std::vector<json> events_with_ph(const json& doc, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

// The metadata event `name` for (pid, tid); null when absent, and fails the
// test (through the count) when written twice.
json metadata(const json& doc, const std::string& name, int pid, int tid, int* count = nullptr) {
  json found;
  int n = 0;
  for (const json& e : events_with_ph(doc, "M"))
    if (e.at("name") == name && e.at("pid") == pid && e.value("tid", 0) == tid) {
      found = e;
      ++n;
    }
  if (count) *count = n;
  return found;
}

bool exists(const std::string& path) { return std::filesystem::exists(path); }

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every field, exactly: times are written shortest-exact, so a round trip
// gives back the very doubles recorded.
void compare_spans(const std::vector<Span>& got, const std::vector<Span>& want) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const QString at = QString("span %1").arg(i);
    QVERIFY2(got[i].kind == want[i].kind, qPrintable(at));
    QVERIFY2(got[i].lane == want[i].lane, qPrintable(at + ": " + QString::fromStdString(lane_name(got[i].lane))));
    QVERIFY2(got[i].step == want[i].step, qPrintable(at));
    QVERIFY2(got[i].start_us == want[i].start_us, qPrintable(at + QString(": %1").arg(got[i].start_us, 0, 'f', 6)));
    QVERIFY2(got[i].duration_us == want[i].duration_us, qPrintable(at));
    QVERIFY2(got[i].bytes == want[i].bytes, qPrintable(at));
  }
}

Span on_rank(Span s, int rank, double offset) {
  s.lane.rank = rank;
  s.start_us += offset;
  return s;
}

// A device whose timing marks are reached as they are queued, each at the
// next microsecond; the one numbered `fail_mark` (from 0) fails to be queued.
class MarkingDevice final : public InertDeviceMemory {
public:
  struct Mark final : DeviceEvent {
    explicit Mark(double t) : time_us(t) {}
    double time_us;
  };
  int marks = 0, fail_mark = -1;
  EventPtr record_timing_mark() override {
    if (marks++ == fail_mark) throw std::runtime_error("the stream is gone");
    return std::make_shared<Mark>(marks);
  }
  std::optional<MarkedSpan> span_time_us(const EventPtr& begin, const EventPtr& end) override {
    const double t0 = static_cast<const Mark&>(*begin).time_us, t1 = static_cast<const Mark&>(*end).time_us;
    return MarkedSpan{t0, t1 - t0};
  }
};
MarkingDevice* g_marking = nullptr;
DeviceMemory& marking_device(const Device&) { return *g_marking; }
// Every device is `device` while this lives (the backends' again after, also
// when a check fails half-way).
class StandIn {
public:
  explicit StandIn(MarkingDevice& device) {
    g_marking = &device;
    backends_ = set_device_memory_provider(&marking_device);
  }
  ~StandIn() { set_device_memory_provider(backends_); }
  StandIn(const StandIn&) = delete;
  StandIn& operator=(const StandIn&) = delete;

private:
  DeviceMemoryProvider backends_ = nullptr;
};

}  // namespace

class TestTrace : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string path(const char* name) const { return (tmp_.path() + "/" + name).toStdString(); }

private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  // ---- TraceRecorder -----------------------------------------------------------

  void recorder_many_threads_each_span_once() {
    constexpr int kThreads = 4, kSpans = 10'000;
    TraceRecorder rec;  // 65536 a thread: room for all, however slow the consumer
    std::atomic<bool> done{false};
    std::vector<std::vector<int>> seen(kThreads, std::vector<int>(kSpans, 0));
    bool sorted = true, in_range = true;
    auto take = [&](const std::vector<Span>& spans) {
      for (size_t i = 0; i < spans.size(); ++i) {
        const Span& s = spans[i];
        if (i > 0 && spans[i - 1].start_us > s.start_us) sorted = false;
        if (s.lane.index < 0 || s.lane.index >= kThreads || s.step < 0 || s.step >= kSpans || s.start_us != double(s.step)) {
          in_range = false;
          continue;
        }
        ++seen[static_cast<size_t>(s.lane.index)][static_cast<size_t>(s.step)];
      }
    };
    std::thread consumer([&] {
      while (!done.load()) take(rec.drain());
    });
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; ++t)
      producers.emplace_back([&rec, t] {
        for (int i = 0; i < kSpans; ++i) rec.record(span(SpanKind::Forward, replica(t), i, i, 1.0));
      });
    for (auto& p : producers) p.join();
    done = true;
    consumer.join();
    take(rec.drain());  // what came after the consumer's last drain

    QVERIFY2(sorted, "every drain is ordered by start time");
    QVERIFY(in_range);
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < kSpans; ++i)
        QVERIFY2(seen[size_t(t)][size_t(i)] == 1,
                 qPrintable(QString("thread %1 span %2 arrived %3 times").arg(t).arg(i).arg(seen[size_t(t)][size_t(i)])));
    QCOMPARE(rec.dropped(), int64_t{0});
    QVERIFY(rec.drain().empty());
  }

  void recorder_full_buffer_drops_and_counts() {
    TraceRecorder rec(4);
    for (int i = 0; i < 10; ++i) rec.record(span(SpanKind::Forward, replica(0), i, 100 - i, 1));
    auto spans = rec.drain();
    QCOMPARE(spans.size(), size_t{4});
    QCOMPARE(rec.dropped(), int64_t{6});
    // The first four were kept, ordered by start time (recorded in reverse).
    for (size_t i = 0; i < 4; ++i) QCOMPARE(spans[i].step, int64_t(3 - i));
    // Drained, the buffer takes spans again.
    for (int i = 0; i < 3; ++i) rec.record(span(SpanKind::Backward, replica(0), i, i, 1));
    QCOMPARE(rec.drain().size(), size_t{3});
    QCOMPARE(rec.dropped(), int64_t{6});

    // Tiny buffers under concurrency: each span is kept or counted, never both.
    TraceRecorder tiny(8);
    std::vector<std::thread> threads;
    std::atomic<bool> done{false};
    size_t kept = 0;
    std::thread consumer([&] {
      while (!done.load()) kept += tiny.drain().size();
    });
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&tiny, t] {
        for (int i = 0; i < 10'000; ++i) tiny.record(span(SpanKind::Forward, replica(t), i, i, 1));
      });
    for (auto& t : threads) t.join();
    done = true;
    consumer.join();
    kept += tiny.drain().size();
    QCOMPARE(int64_t(kept) + tiny.dropped(), int64_t{40'000});
  }

  void recorder_takes_over_an_exited_threads_buffer() {
    // Threads that come and go (an input pipeline per epoch) must not grow
    // the recorder: the second thread gets the first one's buffer, with its
    // undrained spans still in it.
    TraceRecorder rec(4);
    std::thread([&] {
      for (int i = 0; i < 3; ++i) rec.record(span(SpanKind::DataWait, replica(0), i, i, 1));
    }).join();
    std::thread([&] {
      for (int i = 3; i < 6; ++i) rec.record(span(SpanKind::DataWait, replica(0), i, i, 1));
    }).join();
    auto spans = rec.drain();
    QCOMPARE(spans.size(), size_t{4});
    QCOMPARE(rec.dropped(), int64_t{2});
    for (size_t i = 0; i < 4; ++i) QCOMPARE(spans[i].step, int64_t(i));
    // Drained, the exited threads' buffer is freed; a new thread starts empty.
    std::thread([&] {
      for (int i = 0; i < 4; ++i) rec.record(span(SpanKind::DataWait, replica(0), i, i, 1));
    }).join();
    QCOMPARE(rec.drain().size(), size_t{4});
    QCOMPARE(rec.dropped(), int64_t{2});
  }

  void recorder_drain_orders_by_start_nan_last() {
    TraceRecorder rec;
    for (double start : {3.0, std::numeric_limits<double>::quiet_NaN(), 1.0, 2.0, 1.0})
      rec.record(span(SpanKind::Forward, replica(0), 1, start, 1));
    const auto spans = rec.drain();
    QCOMPARE(spans.size(), size_t{5});
    QCOMPARE(spans[0].start_us, 1.0);
    QCOMPARE(spans[1].start_us, 1.0);
    QCOMPARE(spans[2].start_us, 2.0);
    QCOMPARE(spans[3].start_us, 3.0);
    QVERIFY(std::isnan(spans[4].start_us));
  }

  void recorder_two_on_one_thread() {
    TraceRecorder a, b;
    for (int i = 0; i < 5; ++i) {
      a.record(span(SpanKind::Forward, replica(0), i, i, 1));
      b.record(span(SpanKind::Backward, replica(1), 100 + i, i, 1));
    }
    auto sa = a.drain(), sb = b.drain();
    QCOMPARE(sa.size(), size_t{5});
    QCOMPARE(sb.size(), size_t{5});
    for (int i = 0; i < 5; ++i) {
      QCOMPARE(sa[size_t(i)].kind, SpanKind::Forward);
      QCOMPARE(sa[size_t(i)].step, int64_t(i));
      QCOMPARE(sb[size_t(i)].kind, SpanKind::Backward);
      QCOMPARE(sb[size_t(i)].step, int64_t(100 + i));
    }
  }

  void recorder_recreated_at_the_same_address() {
    // std::optional puts each new recorder where the destroyed one was: a
    // thread's cache keyed by address would hand it the freed buffer.
    std::optional<TraceRecorder> rec;
    for (int round = 0; round < 20; ++round) {
      rec.emplace(16);
      rec->record(span(SpanKind::Step, replica(0), round, round, 1));
      auto spans = rec->drain();
      QCOMPARE(spans.size(), size_t{1});
      QCOMPARE(spans[0].step, int64_t(round));
    }
    rec.reset();

    // A thread that outlives a recorder it recorded to, then records to the
    // next one, then exits (its exit must not touch the dead recorder).
    std::latch recorded(1), replaced(1), recorded_again(1);
    std::optional<TraceRecorder> shared;
    shared.emplace(16);
    std::thread t([&] {
      shared->record(span(SpanKind::Forward, replica(2), 1, 1, 1));
      recorded.count_down();
      replaced.wait();
      shared->record(span(SpanKind::Forward, replica(2), 2, 2, 1));
      recorded_again.count_down();
    });
    recorded.wait();
    QCOMPARE(shared->drain().size(), size_t{1});
    shared.emplace(16);
    replaced.count_down();
    recorded_again.wait();
    t.join();
    auto spans = shared->drain();
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].step, int64_t{2});
    QCOMPARE(shared->dropped(), int64_t{0});
  }

  void scoped_span_records_on_destruction() {
    TraceRecorder rec;
    const double before = TraceRecorder::now_us();
    { ScopedSpan s(&rec, SpanKind::AllReduce, comm(1), 42, 4096); }
    const double after = TraceRecorder::now_us();
    { ScopedSpan nothing(nullptr, SpanKind::Forward, replica(0), 1); }
    auto spans = rec.drain();
    QCOMPARE(spans.size(), size_t{1});
    QCOMPARE(spans[0].kind, SpanKind::AllReduce);
    QVERIFY(spans[0].lane == comm(1));
    QCOMPARE(spans[0].step, int64_t{42});
    QCOMPARE(spans[0].bytes, int64_t{4096});
    QVERIFY(spans[0].start_us >= before);
    QVERIFY(spans[0].duration_us >= 0);
    QVERIFY(spans[0].start_us + spans[0].duration_us <= after);
  }

  // Device spans: each recorded once both marks are reached; one whose end
  // mark failed is counted lost at the next drain, not kept waiting for ever.
  void device_spans_resolve_and_count_a_failed_end_as_lost() {
    MarkingDevice dev;
    dev.fail_mark = 3;  // the second span's end
    const StandIn stand_in(dev);
    const Device sim{DeviceKind::Sim, 0};
    TraceRecorder rec;
    DeviceSpans spans;
    { DeviceSpans::Scoped s(&spans, sim, SpanKind::Forward, device_lane(0), 1, 64); }
    { DeviceSpans::Scoped s(&spans, sim, SpanKind::Backward, device_lane(0), 1); }
    { DeviceSpans::Scoped s(&spans, sim, SpanKind::Optimizer, device_lane(0), 1); }
    {
      // Open while drained: it stays for a later drain.
      DeviceSpans::Scoped open(&spans, sim, SpanKind::Step, device_lane(0), 2);
      spans.drain(rec);
      QVERIFY(!spans.empty());
    }
    spans.drain(rec);
    QVERIFY(spans.empty());
    const std::vector<Span> got = rec.drain();
    compare_spans(got, {span(SpanKind::Forward, device_lane(0), 1, 1, 1, 64),
                        span(SpanKind::Optimizer, device_lane(0), 1, 5, 1), span(SpanKind::Step, device_lane(0), 2, 7, 1)});
    QCOMPARE(rec.dropped(), int64_t{1});
    // Devices without marks (the host) record nothing.
    { DeviceSpans::Scoped host(&spans, Device{}, SpanKind::Forward, device_lane(0), 3); }
    QVERIFY(spans.empty());
  }

  // Sampled device lanes: a burst of consecutive steps, the next no sooner
  // than a period after the last began; a slow run is marked throughout.
  void device_lane_schedule_bursts() {
    using trace::DeviceLanes;
    trace::DeviceLaneSchedule sampled(DeviceLanes::Sampled, 3, 1.0);
    QString marks;
    // Steps every 0.1 s: 3 marked, the rest of the second not, and again.
    for (int i = 0; i < 25; ++i) marks += sampled.mark_step(i + 1, 0.1 * i) ? 'x' : '.';
    QCOMPARE(marks, QString("xxx.......xxx.......xxx.."));
    trace::DeviceLaneSchedule slow(DeviceLanes::Sampled, 3, 1.0);
    marks.clear();
    for (int i = 0; i < 8; ++i) marks += slow.mark_step(i + 1, 0.5 * i) ? 'x' : '.';  // a burst outlasts the period
    QCOMPARE(marks, QString("xxxxxxxx"));
    // A pass that finds no batch at an epoch's end asks about the step the
    // next epoch begins with: the burst still has that step (bursts are
    // steps, not calls).
    trace::DeviceLaneSchedule repeated(DeviceLanes::Sampled, 3, 1.0);
    marks.clear();
    for (int64_t step : {1, 2, 2, 3, 4}) marks += repeated.mark_step(step, 0.0) ? 'x' : '.';
    QCOMPARE(marks, QString("xxxx."));
    // Across workers: one decides from its clock, two steps ahead, and all
    // begin the burst it names; their steps are marked alike.
    trace::DeviceLaneSchedule leader(DeviceLanes::Sampled, 3, 1.0), follower(DeviceLanes::Sampled, 3, 1.0);
    QString led, followed;
    for (int64_t step = 1; step <= 25; ++step) {
      const double now = 0.1 * static_cast<double>(step);
      if (step == 1) {  // the first burst: the first step, on every worker
        leader.mark_step(step, now);
        follower.mark_step(step, 1000.0);
      }
      led += leader.marks(step) ? 'x' : '.';
      followed += follower.marks(step) ? 'x' : '.';
      if (const auto first = leader.due(now, step + 2)) {
        QCOMPARE(*first, step + 2);
        leader.begin(*first, now);
        follower.begin(*first, 1000.0);  // its own clock plays no part
      }
    }
    QCOMPARE(led, QString("xxx.........xxx.......xxx"));
    QCOMPARE(followed, led);
    QVERIFY(!leader.due(100.0, 25));  // the burst begun with step 23 still has step 25
    QCOMPARE(leader.due(100.0, 26), std::optional<int64_t>(26));
    // strata-run's --device-lanes names.
    for (DeviceLanes l : {DeviceLanes::Off, DeviceLanes::Sampled, DeviceLanes::EveryStep})
      QCOMPARE(int(*trace::device_lanes_from_name(trace::device_lanes_name(l))), int(l));
    QCOMPARE(QString(trace::device_lanes_name(DeviceLanes::EveryStep)), QString("every-step"));
    QVERIFY(!trace::device_lanes_from_name("always"));
    trace::DeviceLaneSchedule every(DeviceLanes::EveryStep), off(DeviceLanes::Off);
    for (int i = 0; i < 100; ++i) {
      QVERIFY(every.mark_step(i + 1, 1e-6 * i));
      QVERIFY(!off.mark_step(i + 1, 1e-6 * i));
    }
  }

  void span_kind_names_round_trip() {
    for (int k = 0; k < kSpanKinds; ++k) QCOMPARE(parse_span_kind(span_kind_name(SpanKind(k))), std::optional(SpanKind(k)));
    QVERIFY(!parse_span_kind("nonsense"));
  }

  // ---- Chrome trace files ----------------------------------------------------

  void writer_writes_chrome_trace_events() {
    const std::string file = path("rank3.json");
    const double t0 = 123'456'789'012.25;  // an absolute monotonic time, kept exactly
    ChromeTraceWriter w(file, {"mnist \"run\"", 3, "node-a", 17.5});
    w.write({span(SpanKind::Step, replica(0), 7, t0, 100), span(SpanKind::AllReduce, comm(0), 7, t0 + 50, 30, 1 << 20),
             span(SpanKind::Forward, replica(1), 7, t0 + 1, 40),
             span(SpanKind::Forward, replica(0), 7, std::numeric_limits<double>::quiet_NaN(), 1),
             span(SpanKind::Backward, replica(0), 7, t0 + 10, std::numeric_limits<double>::infinity())});
    w.write({span(SpanKind::Push, {LaneKind::Worker, 1}, 8, t0 + 200, 5, 64),
             span(SpanKind::Pull, {LaneKind::Server, 0}, 8, t0 + 210, 6, 32),
             span(SpanKind::Checkpoint, {LaneKind::Run, 0}, -1, t0 + 300, 20),
             span(SpanKind::Optimizer, replica(0), 8, t0 + 220, 3)});
    QCOMPARE(w.spans_written(), int64_t{7});  // the NaN and infinite ones skipped
    QVERIFY2(!exists(file), "nothing under the final name before close()");
    QVERIFY(exists(file + ".partial"));
    w.close();
    QVERIFY(exists(file));
    QVERIFY(!exists(file + ".partial"));
    w.close();  // a second close does nothing

    const json doc = read_json(file);
    QCOMPARE(doc.at("displayTimeUnit").get<std::string>(), std::string("ms"));
    const json& other = doc.at("otherData");
    QCOMPARE(other.at("strata_trace").get<int>(), 1);
    QCOMPARE(other.at("run").get<std::string>(), std::string("mnist \"run\""));
    QCOMPARE(other.at("rank").get<int>(), 3);
    QCOMPARE(other.at("host").get<std::string>(), std::string("node-a"));
    QCOMPARE(other.at("clock_offset_us").get<double>(), 17.5);

    const auto x = events_with_ph(doc, "X");
    QCOMPARE(x.size(), size_t{7});
    // Written in the order given.
    const json& step = x[0];
    QCOMPARE(step.at("name").get<std::string>(), std::string("step"));
    QCOMPARE(step.at("cat").get<std::string>(), std::string("compute"));
    QVERIFY(step.at("ts").get<double>() == t0);
    QCOMPARE(step.at("dur").get<double>(), 100.0);
    QCOMPARE(step.at("pid").get<int>(), 3);
    QCOMPARE(step.at("tid").get<int>(), 0);
    QCOMPARE(step.at("args"), (json{{"step", 7}}));  // no bytes when zero
    const json& ar = x[1];
    QCOMPARE(ar.at("name").get<std::string>(), std::string("all_reduce"));
    QCOMPARE(ar.at("cat").get<std::string>(), std::string("communication"));
    QVERIFY(ar.at("ts").get<double>() == t0 + 50);
    QCOMPARE(ar.at("tid").get<int>(), 1000);
    QCOMPARE(ar.at("args"), (json{{"step", 7}, {"bytes", 1 << 20}}));
    QCOMPARE(x[2].at("tid").get<int>(), 1);
    QCOMPARE(x[3].at("name").get<std::string>(), std::string("push"));
    QCOMPARE(x[3].at("tid").get<int>(), 101);
    QCOMPARE(x[3].at("args").at("bytes").get<int>(), 64);
    QCOMPARE(x[4].at("tid").get<int>(), 200);
    QCOMPARE(x[5].at("name").get<std::string>(), std::string("checkpoint"));
    QCOMPARE(x[5].at("cat").get<std::string>(), std::string("io"));
    QCOMPARE(x[5].at("tid").get<int>(), 9999);
    QCOMPARE(x[5].at("args").at("step").get<int>(), -1);
    QCOMPARE(x[6].at("name").get<std::string>(), std::string("optimizer"));

    QCOMPARE(metadata(doc, "process_name", 3, 0).at("args").at("name").get<std::string>(), std::string("rank 3 (node-a)"));
    const std::vector<std::pair<int, std::string>> lanes = {{0, "replica 0"},  {1000, "replica 0 comm"}, {1, "replica 1"},
                                                            {101, "worker 1"}, {200, "server 0"},        {9999, "run"}};
    for (const auto& [tid, name] : lanes) {
      int count = 0;
      const json m = metadata(doc, "thread_name", 3, tid, &count);
      QVERIFY2(count == 1, qPrintable(QString("thread_name of tid %1 written %2 times").arg(tid).arg(count)));
      QCOMPARE(m.at("args").at("name").get<std::string>(), name);
    }
    auto sort_index = [&](int tid) {
      return metadata(doc, "thread_sort_index", 3, tid).at("args").at("sort_index").get<int>();
    };
    // Each comm stream right under its replica; the run lane last.
    QVERIFY(sort_index(0) < sort_index(1000));
    QVERIFY(sort_index(1000) < sort_index(1));
    QVERIFY(sort_index(1) < sort_index(101));
    QVERIFY(sort_index(101) < sort_index(200));
    QVERIFY(sort_index(200) < sort_index(9999));
  }

  void writer_destructor_finishes_the_file() {
    const std::string file = path("unclosed.json");
    {
      ChromeTraceWriter w(file, {"r", 0, "", 0});
      w.write({span(SpanKind::Forward, replica(0), 1, 5, 2)});
    }
    const json doc = read_json(file);
    QCOMPARE(events_with_ph(doc, "X").size(), size_t{1});
    QCOMPARE(metadata(doc, "process_name", 0, 0).at("args").at("name").get<std::string>(), std::string("rank 0"));
    QVERIFY(!exists(file + ".partial"));
  }

  // A long run's file stops at its limit: whole spans up to it, every later
  // one left out and counted, still a complete trace file.
  void writer_stops_at_its_limit() {
    const std::string file = path("limited.json");
    const int64_t limit = 4096;
    ChromeTraceWriter w(file, {"r", 0, "", 0}, limit);
    std::vector<Span> want;
    for (int64_t batch = 0; batch < 10; ++batch) {
      std::vector<Span> spans;
      for (int64_t i = 1; i <= 10; ++i)
        spans.push_back(span(SpanKind::Forward, replica(0), batch * 10 + i, 1000.0 * (batch * 10 + i), 2));
      w.write(spans);
      want.insert(want.end(), spans.begin(), spans.end());
    }
    const int64_t written = w.spans_written();
    QVERIFY2(written > 5 && written < 90, qPrintable(QString("%1 spans written").arg(written)));
    QCOMPARE(written + w.spans_left_out(), int64_t{100});
    QCOMPARE(w.first_step_left_out(), written + 1);  // one span a step, in order: no holes
    w.close();
    const auto size = std::filesystem::file_size(file);
    QVERIFY2(size > static_cast<uintmax_t>(limit) - 200,
             qPrintable(QString("%1 bytes").arg(size)));  // filled, less than a span short
    QVERIFY2(size <= static_cast<uintmax_t>(limit) + 300,
             qPrintable(QString("%1 bytes").arg(size)));  // and the closing lines
    const json doc = read_json(file);
    QCOMPARE(doc.at("otherData").at("spans_left_out").get<int64_t>(), 100 - written);
    QCOMPARE(doc.at("otherData").at("first_step_left_out").get<int64_t>(), written + 1);
    QCOMPARE(doc.at("otherData").at("max_bytes").get<int64_t>(), limit);
    want.resize(static_cast<size_t>(written));
    const TraceContents read = read_chrome_trace(file);
    compare_spans(read.spans, want);
    QCOMPARE(read.spans_left_out, 100 - written);
    QCOMPARE(read.first_step_left_out, written + 1);
    // A merge keeps saying so.
    const std::string merged = path("limited-merged.json");
    merge_chrome_traces({file}, merged);
    QCOMPARE(read_chrome_trace(merged).spans_left_out, 100 - written);
    QCOMPARE(read_chrome_trace(merged).first_step_left_out, written + 1);

    // Under its limit a file says nothing of one.
    const std::string roomy = path("roomy.json");
    {
      ChromeTraceWriter r(roomy, {"r", 0, "", 0}, 1 << 20);
      r.write(want);
      QCOMPARE(r.spans_left_out(), int64_t{0});
    }
    QVERIFY(!read_json(roomy).at("otherData").contains("spans_left_out"));
    QCOMPARE(read_chrome_trace(roomy).spans_left_out, int64_t{0});
  }

  // The step named is the earliest that lost a span (another lane may still
  // be in an earlier step), and spans of no step name none.
  void writer_names_the_earliest_step_left_out() {
    const std::string file = path("earliest.json");
    ChromeTraceWriter w(file, {"r", 0, "", 0}, 1);  // smaller than the header: nothing fits
    w.write({span(SpanKind::Evaluation, replica(0), -1, 10, 1)});
    QCOMPARE(w.first_step_left_out(), int64_t{-1});
    w.write({span(SpanKind::Forward, replica(0), 6, 20, 1), span(SpanKind::Forward, replica(1), 4, 21, 1)});
    QCOMPARE(w.first_step_left_out(), int64_t{4});
    QCOMPARE(w.spans_left_out(), int64_t{3});
    w.close();
    QCOMPARE(read_chrome_trace(file).spans.size(), size_t{0});

    // Only spans of no step left out: the run still hears of it, without a step.
    struct Logs final : EventSink {
      std::vector<std::string> messages;
      void emit(const Event& e) override {
        if (auto* l = std::get_if<LogEvent>(&e)) messages.push_back(l->message);
      }
    } sink;
    StepTracer tracer(TraceMetadata{"r", 0, "", 0}, sink);
    tracer.open_file(path("unstepped.json"), 1);
    { const ScopedSpan s(tracer.recorder(), SpanKind::Evaluation, replica(0), -1); }
    tracer.close(1);
    QCOMPARE(sink.messages.size(), size_t{1});
    QVERIFY2(sink.messages[0].find("reached its limit of 1 bytes:") != std::string::npos, sink.messages[0].c_str());
  }

  // The run hears of a full file once, with the file, its limit and the step.
  void step_tracer_warns_once_when_its_file_is_full() {
    struct Logs final : EventSink {
      std::vector<LogEvent> logs;
      void emit(const Event& e) override {
        if (auto* l = std::get_if<LogEvent>(&e)) logs.push_back(*l);
      }
    } sink;
    const std::string file = path("tracer-limited.json");
    StepTracer tracer(TraceMetadata{"r", 0, "", 0}, sink);
    tracer.open_file(file, 2048);
    for (int64_t step = 1; step <= 200; ++step) {
      { const ScopedSpan s(tracer.recorder(), SpanKind::Step, replica(0), step); }
      tracer.flush(0.1 * static_cast<double>(step), step);  // each flush hands the spans to the file
    }
    tracer.close(30);
    QCOMPARE(sink.logs.size(), size_t{1});
    const LogEvent& warning = sink.logs.front();
    QCOMPARE(warning.level, std::string("warning"));
    QVERIFY2(warning.message.find(file) != std::string::npos && warning.message.find("2048 bytes") != std::string::npos &&
                 warning.message.find("--trace-max-mib") != std::string::npos,
             warning.message.c_str());
    const json doc = read_json(file);
    const int64_t first_left_out = doc.at("otherData").at("first_step_left_out").get<int64_t>();
    QVERIFY2(warning.message.find("at step " + std::to_string(first_left_out) + ":") != std::string::npos,
             warning.message.c_str());
    QCOMPARE(static_cast<int64_t>(events_with_ph(doc, "X").size()) + doc.at("otherData").at("spans_left_out").get<int64_t>(),
             int64_t{200});
  }

  void writer_errors_name_the_path() {
    const std::string missing_dir = path("no-such-dir/trace.json");
    STRATA_EXPECT_ERROR(ChromeTraceWriter(missing_dir, {}), ErrorKind::BadInput, missing_dir, "No such file");

    // The final name is taken by a directory: the rename fails at close().
    const std::string dir = path("taken.json");
    QVERIFY(std::filesystem::create_directory(dir));
    ChromeTraceWriter w(dir, {});
    w.write({span(SpanKind::Forward, replica(0), 1, 5, 2)});
    STRATA_EXPECT_ERROR(w.close(), ErrorKind::Runtime, dir, ".partial");
    QVERIFY2(exists(dir + ".partial"), "the finished trace is kept where it was written");
  }

  void merge_shifts_each_rank_by_its_offset() {
    const std::string r0 = path("merge-r0.json"), r1 = path("merge-r1.json"), out = path("merged.json");
    const double t0 = 98'765'432'101.375, offset1 = -1'234.0625;
    {
      ChromeTraceWriter w(r0, {"run", 0, "a", 0});
      w.write({span(SpanKind::Step, replica(0), 1, t0, 10), span(SpanKind::AllReduce, comm(0), 1, t0 + 2.5, 3, 8)});
    }
    {
      ChromeTraceWriter w(r1, {"run", 1, "b", offset1});
      w.write({span(SpanKind::Step, {LaneKind::Worker, 0}, 1, t0 + 0.1, 11),
               span(SpanKind::Push, {LaneKind::Worker, 0}, 1, t0 + 4.2, 1, 4)});
    }
    merge_chrome_traces({r0, r1}, out);
    QVERIFY(!exists(out + ".partial"));
    const json doc = read_json(out);
    QCOMPARE(doc.at("otherData").at("strata_trace").get<int>(), 1);
    QCOMPARE(doc.at("otherData").at("ranks"), (json{0, 1}));
    QCOMPARE(doc.at("otherData").at("clock_offset_us").get<double>(), 0.0);
    std::vector<double> ts0, ts1;
    for (const json& e : events_with_ph(doc, "X")) (e.at("pid") == 0 ? ts0 : ts1).push_back(e.at("ts").get<double>());
    QCOMPARE(ts0.size(), size_t{2});
    QCOMPARE(ts1.size(), size_t{2});
    QVERIFY(ts0[0] == t0);
    QVERIFY(ts0[1] == t0 + 2.5);
    QVERIFY(ts1[0] == t0 + 0.1 + offset1);
    QVERIFY(ts1[1] == t0 + 4.2 + offset1);
    // Both processes' names and lanes are kept.
    QCOMPARE(metadata(doc, "process_name", 0, 0).at("args").at("name").get<std::string>(), std::string("rank 0 (a)"));
    QCOMPARE(metadata(doc, "process_name", 1, 0).at("args").at("name").get<std::string>(), std::string("rank 1 (b)"));
    QCOMPARE(metadata(doc, "thread_name", 1, 100).at("args").at("name").get<std::string>(), std::string("worker 0"));
    QCOMPARE(metadata(doc, "thread_name", 0, 1000).at("args").at("name").get<std::string>(), std::string("replica 0 comm"));

    // A merged file merges again, its ranks still counted.
    const std::string r2 = path("merge-r2.json"), out2 = path("merged2.json");
    { ChromeTraceWriter w(r2, {"run", 2, "c", 1}); }
    merge_chrome_traces({out, r2}, out2);
    QCOMPARE(read_json(out2).at("otherData").at("ranks"), (json{0, 1, 2}));
    STRATA_EXPECT_ERROR(merge_chrome_traces({out, r1}, path("merged3.json")), ErrorKind::BadInput, out, r1, "rank 1");
  }

  void merge_rejects_foreign_files_and_duplicate_ranks() {
    const std::string foreign = path("foreign.json"), broken = path("broken.json"), out = path("never.json");
    std::ofstream(foreign) << R"({"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":1,"pid":0,"tid":0}]})";
    std::ofstream(broken) << R"({"traceEvents":[)";
    const std::string a = path("dup-a.json"), b = path("dup-b.json");
    { ChromeTraceWriter w(a, {"run", 2, "a", 0}); }
    { ChromeTraceWriter w(b, {"run", 2, "b", 5}); }

    STRATA_EXPECT_ERROR(merge_chrome_traces({a, foreign}, out), ErrorKind::BadInput, foreign, "is not a Strata trace file");
    STRATA_EXPECT_ERROR(merge_chrome_traces({broken}, out), ErrorKind::BadInput, broken, "is not a Strata trace file");
    STRATA_EXPECT_ERROR(merge_chrome_traces({a, b}, out), ErrorKind::BadInput, a, b, "rank 2");
    STRATA_EXPECT_ERROR(merge_chrome_traces({path("absent.json")}, out), ErrorKind::BadInput, path("absent.json"));
    STRATA_EXPECT_ERROR(merge_chrome_traces({}, out), ErrorKind::BadInput, "no trace files");
    QVERIFY(!exists(out));
    QVERIFY(!exists(out + ".partial"));
  }

  // ---- Reading trace files back ---------------------------------------------

  void lanes_of_ranks_are_named_and_ordered_apart() {
    QCOMPARE(lane_name(replica(0)), std::string("replica 0"));
    QCOMPARE(lane_name({LaneKind::CommStream, 2, 1}), std::string("rank 1 \u00b7 replica 2 comm"));
    QCOMPARE(lane_name({LaneKind::Run, 0, 0}), std::string("rank 0 \u00b7 run"));
    QVERIFY(!(Lane{LaneKind::Replica, 0, 0} == Lane{LaneKind::Replica, 0, 1}));
    // By rank first, then as within one process.
    QVERIFY(lane_before({LaneKind::Run, 0, 0}, {LaneKind::Replica, 0, 1}));
    QVERIFY(lane_before({LaneKind::Replica, 0, 1}, {LaneKind::CommStream, 0, 1}));
    QVERIFY(lane_before(replica(5), {LaneKind::Replica, 0, 0}));
    QCOMPARE(lane_sort_index({LaneKind::CommStream, 1, 3}), lane_sort_index(comm(1)));
  }

  void reader_round_trips_the_writer() {
    const std::string file = path("read-back.json");
    const double t0 = 812'345'678'901.25;
    // Out of order, nested, with bytes, a span of no step, a zero-length one.
    const std::vector<Span> spans = {
        span(SpanKind::Step, replica(0), 12, t0, 5230.5),
        span(SpanKind::Forward, replica(0), 12, t0, 1000.125),
        span(SpanKind::AllReduce, comm(0), 12, t0 + 2101.5, 840, 1 << 20),
        span(SpanKind::Backward, replica(0), 12, t0 + 1000.125, 3000.0625),
        span(SpanKind::Step, replica(1), 12, t0 + 0.5, 5229),
        span(SpanKind::Pull, {LaneKind::Worker, 3}, 13, t0 + 6000, 12.75, 4096),
        span(SpanKind::StalenessWait, {LaneKind::Worker, 3}, 13, t0 + 5990, 10),
        span(SpanKind::Optimizer, {LaneKind::Server, 1}, 13, t0 + 6100, 0),
        span(SpanKind::Checkpoint, {LaneKind::Run, 0}, -1, t0 + 7000, 1e6 / 3),
    };
    {
      ChromeTraceWriter w(file, {"fashion \"mlp\"", 0, "node-a", 0});
      w.write(spans);
    }
    const TraceContents read = read_chrome_trace(file);
    QCOMPARE(read.path, file);
    QCOMPARE(read.run_name, std::string("fashion \"mlp\""));
    QCOMPARE(read.ranks.size(), size_t{1});
    QCOMPARE(read.ranks[0].rank, 0);
    QCOMPARE(read.ranks[0].host, std::string("node-a"));
    QCOMPARE(read.skipped, int64_t{0});
    std::vector<Span> want = spans;
    std::stable_sort(want.begin(), want.end(), [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
    compare_spans(read.spans, want);  // rank 0 alone: lanes without a rank, as recorded
    // The breakdown of the file equals the breakdown of what was recorded.
    const auto a = summarize_steps(read.spans), b = summarize_steps(spans);
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      QCOMPARE(a[i].comm_us, b[i].comm_us);
      QCOMPARE(a[i].slowest, b[i].slowest);
    }
  }

  void reader_keeps_ranks_of_a_merged_file_apart() {
    const std::string r0 = path("read-r0.json"), r1 = path("read-r1.json"), merged = path("read-merged.json");
    const double t0 = 98'765'432'101.375, offset1 = -1'234.0625;
    // The same lanes in both ranks: one replica and its comm stream each.
    const std::vector<Span> rank0 = {span(SpanKind::Step, replica(0), 1, t0, 100),
                                     span(SpanKind::Backward, replica(0), 1, t0 + 10, 60),
                                     span(SpanKind::AllReduce, comm(0), 1, t0 + 50, 40, 8)};
    const std::vector<Span> rank1 = {span(SpanKind::Step, replica(0), 1, t0 + 1234, 110),
                                     span(SpanKind::Backward, replica(0), 1, t0 + 1244, 80),
                                     span(SpanKind::AllReduce, comm(0), 1, t0 + 1300, 40, 8)};
    {
      ChromeTraceWriter w(r0, {"mw", 0, "node-a", 0});
      w.write(rank0);
    }
    {
      ChromeTraceWriter w(r1, {"mw", 1, "node-b", offset1});
      w.write(rank1);
    }
    merge_chrome_traces({r1, r0}, merged);  // any order of inputs
    QCOMPARE(read_json(merged).at("otherData").at("hosts"), (json{"node-a", "node-b"}));

    const TraceContents read = read_chrome_trace(merged);
    QCOMPARE(read.run_name, std::string("mw"));
    QCOMPARE(read.ranks.size(), size_t{2});
    QCOMPARE(read.ranks[0].rank, 0);
    QCOMPARE(read.ranks[0].host, std::string("node-a"));
    QCOMPARE(read.ranks[1].rank, 1);
    QCOMPARE(read.ranks[1].host, std::string("node-b"));
    std::vector<Span> want;
    for (const Span& s : rank0) want.push_back(on_rank(s, 0, 0));
    for (const Span& s : rank1) want.push_back(on_rank(s, 1, offset1));
    std::stable_sort(want.begin(), want.end(), [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
    compare_spans(read.spans, want);
    QCOMPARE(lane_name(read.spans.back().lane), std::string("rank 1 \u00b7 replica 0 comm"));

    // One step, four lanes: each rank's replica and comm stream; the hidden
    // communication is each replica's own (20 of 40 on rank 0, 24 of 40 on
    // rank 1), never one rank's comm against the other's backward.
    const auto steps = summarize_steps(read.spans);
    QCOMPARE(steps.size(), size_t{1});
    QCOMPARE(steps[0].lanes.size(), size_t{4});
    QVERIFY(steps[0].lanes[0].lane == (Lane{LaneKind::Replica, 0, 0}));
    QVERIFY(steps[0].lanes[1].lane == (Lane{LaneKind::CommStream, 0, 0}));
    QVERIFY(steps[0].lanes[2].lane == (Lane{LaneKind::Replica, 0, 1}));
    QCOMPARE(steps[0].slowest, 2);
    QCOMPARE(steps[0].comm_us, 80.0);
    QCOMPARE(steps[0].comm_hidden_us, 20.0 + 24.0);

    // One rank's own file: its offset applied, its lanes named by rank.
    const TraceContents one = read_chrome_trace(r1);
    QCOMPARE(one.ranks.size(), size_t{1});
    QCOMPARE(one.ranks[0].rank, 1);
    std::vector<Span> want1;
    for (const Span& s : rank1) want1.push_back(on_rank(s, 1, offset1));
    compare_spans(one.spans, want1);
  }

  // An accelerator replica's device lane: its compute is what ran, so it is
  // what communication hides behind (not the host's queueing of it), and its
  // view of a collective is not counted a second time. The lane is named,
  // ordered under its replica and written to and read from trace files.
  void device_lanes_in_the_breakdown() {
    const Lane host{LaneKind::Replica, 0}, device{LaneKind::Device, 0}, comm{LaneKind::CommStream, 0};
    const std::vector<Span> spans{
        {SpanKind::Step, host, 1, 0, 12, 0},          {SpanKind::Forward, host, 1, 0, 4, 0},
        {SpanKind::Backward, host, 1, 4, 6, 0},       {SpanKind::Step, device, 1, 5, 40, 0},
        {SpanKind::Forward, device, 1, 5, 10, 0},     {SpanKind::Backward, device, 1, 15, 20, 0},
        {SpanKind::AllReduce, comm, 1, 20, 20, 4096}, {SpanKind::AllReduce, device, 1, 36, 4, 4096}};
    const auto steps = summarize_steps(spans);
    QCOMPARE(steps.size(), size_t{1});
    QCOMPARE(steps[0].comm_us, 20.0);         // the comm stream's, not the device lane's view again
    QCOMPARE(steps[0].comm_hidden_us, 15.0);  // [20, 35) under the device's backward, none under the host's [4, 10)
    QCOMPARE(lane_name(device), std::string("replica 0 device"));
    QVERIFY(lane_before(host, device) && lane_before(device, comm) && lane_before(device, Lane{LaneKind::Replica, 1}));
    const std::string file = path("device.json");
    {
      ChromeTraceWriter w(file, TraceMetadata{"dev", 0, "h", 0});
      w.write(spans);
    }
    const TraceContents read = read_chrome_trace(file);
    QCOMPARE(read.spans.size(), spans.size());
    size_t on_device = 0;
    for (const Span& s : read.spans) on_device += s.lane.kind == LaneKind::Device;
    QCOMPARE(on_device, size_t{4});
  }

  void reader_errors_name_the_file_and_reason() {
    const std::string missing = path("no-such-trace.json"), empty = path("empty.json"), text = path("text.json"),
                      foreign = path("chrome.json"), full = path("full.json"), partial = path("cut.json.partial"),
                      bad_event = path("bad-event.json"), newer = path("newer.json");
    std::ofstream(empty) << "  \n";
    std::ofstream(text) << "step 1 took 4 ms\n";
    std::ofstream(foreign) << R"({"traceEvents":[{"name":"x","ph":"X","ts":1,"dur":1,"pid":0,"tid":0}]})";
    {
      ChromeTraceWriter w(full, {"run", 0, "", 0});
      w.write({span(SpanKind::Step, replica(0), 1, 10, 5), span(SpanKind::Forward, replica(0), 1, 10, 2)});
    }
    // What a crash leaves: the events so far, the JSON never closed.
    const std::string whole = text_of(full);
    std::ofstream(partial) << whole.substr(0, whole.rfind("\n],"));
    std::string broken = whole;
    broken.replace(broken.find("\"ts\":"), 5, "\"at\":");
    std::ofstream(bad_event) << broken;
    std::string unknown = whole;
    unknown.replace(unknown.find("\"name\":\"forward\""), 16, "\"name\":\"teleport\"");
    std::ofstream(newer) << unknown;

    STRATA_EXPECT_ERROR(read_chrome_trace(missing), ErrorKind::BadInput, missing, "cannot read", "No such file");
    STRATA_EXPECT_ERROR(read_chrome_trace(empty), ErrorKind::BadInput, empty, "it is empty");
    STRATA_EXPECT_ERROR(read_chrome_trace(text), ErrorKind::BadInput, text, "is not a Strata trace file", "not valid JSON");
    STRATA_EXPECT_ERROR(read_chrome_trace(foreign), ErrorKind::BadInput, foreign, "is not a Strata trace file");
    STRATA_EXPECT_ERROR(read_chrome_trace(partial), ErrorKind::BadInput, partial, "is not a Strata trace file",
                        "it is truncated");
    STRATA_EXPECT_ERROR(read_chrome_trace(bad_event), ErrorKind::BadInput, bad_event, "without numeric ts");
    // The merge refuses the same files for the same reasons.
    STRATA_EXPECT_ERROR(merge_chrome_traces({full, partial}, path("never-merged.json")), ErrorKind::BadInput, partial,
                        "it is truncated");
    QVERIFY(!exists(path("never-merged.json")));
    // A kind this version does not know is left out and counted, not fatal.
    const TraceContents read = read_chrome_trace(newer);
    QCOMPARE(read.skipped, int64_t{1});
    QCOMPARE(read.spans.size(), size_t{1});
    QCOMPARE(read.spans[0].kind, SpanKind::Step);
  }

  // ---- Step breakdown --------------------------------------------------------

  void step_breakdown_sums_lanes_and_hidden_communication() {
    const Lane worker1{LaneKind::Worker, 1}, server0{LaneKind::Server, 0}, run{LaneKind::Run, 0};
    std::vector<Span> spans = {
        // Step 5, replica 0: all-reduce [50,80) on its comm stream overlaps
        // backward [30,70) by 20; [90,100) overlaps no compute.
        span(SpanKind::Step, replica(0), 5, 0, 100),
        span(SpanKind::Forward, replica(0), 5, 0, 30),
        span(SpanKind::Backward, replica(0), 5, 30, 40),
        span(SpanKind::ReduceScatter, replica(0), 5, 70, 5, 16),  // on the replica's own lane: never hidden
        span(SpanKind::Optimizer, replica(0), 5, 80, 15),
        span(SpanKind::AllReduce, comm(0), 5, 50, 30, 1024),
        span(SpanKind::AllReduce, comm(0), 5, 90, 10, 1024),
        // Replica 1: forward [0,40) and backward [35,90) overlap; the
        // all-reduce [30,50) is hidden 20 (not 10 + 15), [85,105) by 5.
        span(SpanKind::Step, replica(1), 5, 0, 120),
        span(SpanKind::Forward, replica(1), 5, 0, 40),
        span(SpanKind::Backward, replica(1), 5, 35, 55),
        span(SpanKind::AllReduce, comm(1), 5, 30, 20, 1024),
        span(SpanKind::AllGather, comm(1), 5, 85, 20, 1024),
        span(SpanKind::Evaluation, run, 5, 120, 7),
        // Step 7: a worker, a server whose long Step never counts as slowest.
        span(SpanKind::Step, replica(0), 7, 200, 50),
        span(SpanKind::Step, worker1, 7, 200, 60),
        span(SpanKind::Push, worker1, 7, 240, 4, 8),
        span(SpanKind::Push, worker1, 7, 250, 6, 8),
        span(SpanKind::Step, server0, 7, 200, 1000),
        // No step: ignored.
        span(SpanKind::Checkpoint, run, -1, 300, 50),
        span(SpanKind::Forward, replica(0), -1, 300, 50),
        span(SpanKind::AllReduce, comm(0), -1, 300, 50),
    };
    std::reverse(spans.begin(), spans.end());  // any order
    const auto steps = summarize_steps(spans);
    QCOMPARE(steps.size(), size_t{2});

    const StepBreakdown& s5 = steps[0];
    QCOMPARE(s5.step, int64_t{5});
    QCOMPARE(s5.lanes.size(), size_t{5});
    const std::vector<Lane> order5 = {replica(0), comm(0), replica(1), comm(1), run};
    for (size_t i = 0; i < order5.size(); ++i) QVERIFY2(s5.lanes[i].lane == order5[i], qPrintable(QString("lane %1").arg(i)));
    auto us = [](const LaneBreakdown& l, SpanKind k) { return l.kind_us[static_cast<size_t>(k)]; };
    const LaneBreakdown& r0 = s5.lanes[0];
    QCOMPARE(r0.step_us, 100.0);
    QCOMPARE(us(r0, SpanKind::Step), 100.0);
    QCOMPARE(us(r0, SpanKind::Forward), 30.0);
    QCOMPARE(us(r0, SpanKind::Backward), 40.0);
    QCOMPARE(us(r0, SpanKind::ReduceScatter), 5.0);
    QCOMPARE(us(r0, SpanKind::Optimizer), 15.0);
    QCOMPARE(us(r0, SpanKind::AllReduce), 0.0);
    QCOMPARE(us(s5.lanes[1], SpanKind::AllReduce), 40.0);
    QCOMPARE(s5.lanes[1].step_us, 0.0);
    QCOMPARE(us(s5.lanes[3], SpanKind::AllReduce), 20.0);
    QCOMPARE(us(s5.lanes[3], SpanKind::AllGather), 20.0);
    QCOMPARE(us(s5.lanes[4], SpanKind::Evaluation), 7.0);
    QCOMPARE(s5.slowest, 2);
    QCOMPARE(s5.comm_us, 5.0 + 30 + 10 + 20 + 20);
    QCOMPARE(s5.comm_hidden_us, 20.0 + 20 + 5);

    const StepBreakdown& s7 = steps[1];
    QCOMPARE(s7.step, int64_t{7});
    QCOMPARE(s7.lanes.size(), size_t{3});
    QVERIFY(s7.lanes[0].lane == replica(0));
    QVERIFY(s7.lanes[1].lane == worker1);
    QVERIFY(s7.lanes[2].lane == server0);
    QCOMPARE(s7.slowest, 1);
    QCOMPARE(us(s7.lanes[1], SpanKind::Push), 10.0);
    QCOMPARE(s7.comm_us, 0.0);  // push/pull are the parameter server's, not collectives
    QCOMPARE(s7.comm_hidden_us, 0.0);

    // No Step spans: no slowest lane.
    const auto no_step = summarize_steps({span(SpanKind::Forward, replica(0), 1, 0, 5)});
    QCOMPARE(no_step.size(), size_t{1});
    QCOMPARE(no_step[0].slowest, -1);
    QVERIFY(summarize_steps({span(SpanKind::Forward, replica(0), -1, 0, 5)}).empty());

    // Nested spans count once, for the innermost kind; the slowest replica is
    // the one the others waited for, though every step ends together.
    const auto nested = summarize_steps({
        span(SpanKind::Step, replica(0), 3, 0, 100),
        span(SpanKind::CollectiveWait, replica(0), 3, 10, 30),
        span(SpanKind::Optimizer, replica(0), 3, 50, 40),
        span(SpanKind::CollectiveWait, replica(0), 3, 60, 5),
        span(SpanKind::AllGather, replica(0), 3, 65, 10, 64),
        span(SpanKind::Step, replica(1), 3, 0, 100),
        span(SpanKind::CollectiveWait, replica(1), 3, 40, 2),
    });
    QCOMPARE(nested.size(), size_t{1});
    QCOMPARE(us(nested[0].lanes[0], SpanKind::Optimizer), 25.0);
    QCOMPARE(us(nested[0].lanes[0], SpanKind::CollectiveWait), 35.0);
    QCOMPARE(us(nested[0].lanes[0], SpanKind::AllGather), 10.0);
    QCOMPARE(nested[0].slowest, 1);
  }
};

QTEST_GUILESS_MAIN(TestTrace)
#include "test_trace.moc"
