#include "nn/Dropout.h"

#include <array>

#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"
#include "core/JsonInteger.h"
#include "core/ParseInteger.h"
#include "nn/GradientTape.h"
#include "nn/ReplicaSync.h"

namespace strata::nn {

DropoutLayer::DropoutLayer(float rate) : rate_(rate) {
  if (!(rate >= 0.0f && rate < 1.0f)) throw bad_input("Dropout: rate must be in [0, 1), got " + std::to_string(rate));
}

Json DropoutLayer::config() const { return Json{{"type", "dropout"}, {"rate", rate_}}; }

Tensor DropoutLayer::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0f) return x;
  // Each replica calls once per step; the key mixes in the replica so
  // replicas draw different masks for their different examples.
  // The global replica id: replicas of different workers share local
  // indices but must not share masks.
  const ReplicaSync* sync = ReplicaSync::current();
  const int replica = sync ? sync->replica_id_in_sync_group() : current_replica();
  Tensor call;
  {
    std::lock_guard lock(mutex_);
    const uint64_t n = calls_[replica]++;
    Tensor& c = device_calls_[replica];
    // An int32 counted as unsigned: exact for 2^32 calls, where a float
    // would stop at 2^24 (16.7M steps, about an hour of a small model on a
    // GPU) and draw the same mask every step from then on.
    if (!c.defined() || !c.device().same_memory(x.device())) {
      const std::array<int32_t, 1> low_bits{static_cast<int32_t>(static_cast<uint32_t>(n))};
      c = Tensor::from_ints(Shape{1}, low_bits, x.device());
    }
    call = c;
  }
  Tensor y = Tensor::empty(x.shape(), x.device());
  Tensor mask = Tensor::empty(x.shape(), x.device());
  Backend& be = backend_for(x.device());
  be.dropout(x.numel(), rate_, seed(), static_cast<uint64_t>(replica), call.int_ptr(), 0, x.ptr(), y.ptr(), mask.ptr());
  be.increment(1, call.int_ptr());
  record_op({x}, y, [mask](const Tensor& g, const std::vector<bool>&) {
    Tensor dx = Tensor::empty(g.shape(), g.device());
    backend_for(g.device()).mul(g.numel(), g.ptr(), mask.ptr(), dx.ptr());
    return std::vector<Tensor>{dx};
  });
  return y;
}

void DropoutLayer::count_replayed_step() {
  std::lock_guard lock(mutex_);
  for (auto& [replica, n] : calls_) ++n;
}

Json DropoutLayer::extra_state() const {
  std::lock_guard lock(mutex_);
  Json calls = Json::object();
  for (auto& [replica, n] : calls_) calls[std::to_string(replica)] = n;
  return Json{{"calls", calls}};
}

void DropoutLayer::set_extra_state(const Json& state) {
  // Read whole before anything changes: a damaged entry leaves the counters as they were.
  decltype(calls_) calls;
  if (state.is_object() && state.contains("calls")) {
    const Json& saved = state["calls"];
    if (!saved.is_object()) throw bad_input("dropout layer '" + name() + "': 'calls' is not an object");
    for (auto& [replica, n] : saved.items()) {
      const std::optional<int> index = parse_integer<int>(replica);
      if (!index || *index < 0)
        throw bad_input("dropout layer '" + name() + "': '" + replica + "' in 'calls' is not a replica index");
      if (!json_integer_fits<uint64_t>(n, false))
        throw bad_input("dropout layer '" + name() + "': calls of replica " + replica + " is not a count (" + n.dump() + ")");
      calls[*index] = n.get<uint64_t>();
    }
  }
  std::lock_guard lock(mutex_);
  calls_ = std::move(calls);
  device_calls_.clear();  // rebuilt from the host counts at the next call
}

LayerPtr Dropout(float rate) { return std::make_shared<DropoutLayer>(rate); }

}  // namespace strata::nn
