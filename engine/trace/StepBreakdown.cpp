#include "trace/StepBreakdown.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace strata::trace {

namespace {

bool is_comm(SpanKind k) { return k == SpanKind::AllReduce || k == SpanKind::ReduceScatter || k == SpanKind::AllGather; }
bool is_compute(SpanKind k) { return k == SpanKind::Forward || k == SpanKind::Backward; }

using Interval = std::pair<double, double>;  // [begin, end)

// Overlapping forward/backward spans (nested or concurrent ones) merged, so a
// comm span under two of them is not counted as hidden twice.
std::vector<Interval> union_of(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) out.back().second = std::max(out.back().second, i.second);
    else out.push_back(i);
  }
  return out;
}

double overlap(const Interval& a, const std::vector<Interval>& disjoint) {
  double sum = 0;
  for (const Interval& b : disjoint) sum += std::max(0.0, std::min(a.second, b.second) - std::max(a.first, b.first));
  return sum;
}

struct LaneOrder {
  bool operator()(const Lane& a, const Lane& b) const { return lane_before(a, b); }
};

bool contains(const Span& outer, const Span& inner) {
  return &outer != &inner && inner.start_us >= outer.start_us &&
         inner.start_us + inner.duration_us <= outer.start_us + outer.duration_us;
}

// Time of the spans directly nested in `outer` on its lane (the Step frame
// holds everything and is not split). A handful of spans per lane and step.
double nested_us(const Span& outer, const std::vector<const Span*>& spans) {
  if (outer.kind == SpanKind::Step) return 0;
  double sum = 0;
  for (const Span* inner : spans) {
    if (inner->kind == SpanKind::Step || !(inner->lane == outer.lane) || !contains(outer, *inner)) continue;
    bool direct = true;
    for (const Span* mid : spans)
      if (mid != inner && mid->kind != SpanKind::Step && mid->lane == outer.lane && contains(outer, *mid) &&
          contains(*mid, *inner))
        direct = false;
    if (direct) sum += inner->duration_us;
  }
  return sum;
}

StepBreakdown summarize_step(int64_t step, const std::vector<const Span*>& spans) {
  StepBreakdown out;
  out.step = step;
  std::map<Lane, LaneBreakdown, LaneOrder> lanes;
  // By replica: its rank and index (replica 0 of rank 1 is not replica 0 of rank 0).
  // On an accelerator the device lane's compute is what ran (the replica's
  // host lane only queued it), so it is what communication hides behind.
  std::map<std::pair<int, int>, std::vector<Interval>> compute, device_compute, comm;
  for (const Span* s : spans) {
    LaneBreakdown& lane = lanes[s->lane];
    lane.lane = s->lane;
    lane.kind_us[static_cast<int>(s->kind)] += s->duration_us - nested_us(*s, spans);
    if (s->kind == SpanKind::Step) lane.step_us += s->duration_us;
    // A device lane's collective is the host lane's seen from the device: counted once.
    if (is_comm(s->kind) && s->lane.kind != LaneKind::Device) {
      out.comm_us += s->duration_us;
      if (s->lane.kind == LaneKind::CommStream)
        comm[{s->lane.rank, s->lane.index}].push_back({s->start_us, s->start_us + s->duration_us});
    }
    if (is_compute(s->kind) && (s->lane.kind == LaneKind::Replica || s->lane.kind == LaneKind::Device))
      (s->lane.kind == LaneKind::Device ? device_compute : compute)[{s->lane.rank, s->lane.index}].push_back(
          {s->start_us, s->start_us + s->duration_us});
  }
  for (auto& [replica, on_device] : device_compute) compute[replica] = std::move(on_device);
  for (auto& [lane, breakdown] : lanes) out.lanes.push_back(breakdown);

  double slowest_us = 0;
  for (size_t i = 0; i < out.lanes.size(); ++i) {
    const LaneBreakdown& l = out.lanes[i];
    if (l.lane.kind != LaneKind::Replica && l.lane.kind != LaneKind::Worker) continue;
    // Strictly longer: ties go to the first lane; lanes without a Step span never count.
    const double busy = l.step_us - l.kind_us[static_cast<int>(SpanKind::CollectiveWait)] -
                        l.kind_us[static_cast<int>(SpanKind::StalenessWait)];
    if (l.step_us > 0 && busy > slowest_us) {
      slowest_us = busy;
      out.slowest = static_cast<int>(i);
    }
  }

  for (const auto& [replica, comm_spans] : comm) {
    auto c = compute.find(replica);
    if (c == compute.end()) continue;
    const std::vector<Interval> busy = union_of(c->second);
    for (const Interval& i : comm_spans) out.comm_hidden_us += overlap(i, busy);
  }
  return out;
}

}  // namespace

std::vector<StepBreakdown> summarize_steps(const std::vector<Span>& spans) {
  std::map<int64_t, std::vector<const Span*>> by_step;
  for (const Span& s : spans)
    // A non-finite time would poison every sum of its step.
    if (s.step >= 0 && std::isfinite(s.start_us) && std::isfinite(s.duration_us)) by_step[s.step].push_back(&s);
  std::vector<StepBreakdown> out;
  out.reserve(by_step.size());
  for (const auto& [step, step_spans] : by_step) out.push_back(summarize_step(step, step_spans));
  return out;
}

}  // namespace strata::trace
