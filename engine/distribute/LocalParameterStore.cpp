#include "distribute/LocalParameterStore.h"

#include <algorithm>
#include <cstring>

#include "core/Clock.h"
#include "core/Error.h"

namespace strata {

struct LocalParameterStore::Shard {
  std::mutex mutex;
  std::vector<ShardPiece> pieces;
  int64_t elements = 0;
  int64_t version = 0;  // updates applied
  int64_t fail_at = 0;
  int index = 0;
  ServerStats stats;
  // Synchronous mode: the round's weighted sum so far and how many slices it holds.
  std::vector<float> sum;
  int summed = 0;
  std::vector<float> scratch;  // the pushed gradient of this shard, packed
};

LocalParameterStore::LocalParameterStore(const std::vector<Variable*>& vars, ShardPlan plan, nn::Optimizer& optimizer)
    : vars_(vars), plan_(std::move(plan)), optimizer_(optimizer) {
  {
    VariableComponentsScope one(1);
    for (auto* v : vars_) masters_.push_back(std::make_unique<Variable>(v->name(), v->component(0)));
  }
  optimizer_.build(masters());
  for (int s = 0; s < plan_.num_servers(); ++s) {
    auto shard = std::make_unique<Shard>();
    shard->pieces = plan_.pieces(s);
    shard->elements = plan_.elements(s);
    shard->stats.elements = shard->elements;
    shard->index = s;
    shards_.push_back(std::move(shard));
  }
  set_updates(optimizer_.iterations());
}

LocalParameterStore::~LocalParameterStore() = default;

std::vector<Variable*> LocalParameterStore::masters() const {
  std::vector<Variable*> out;
  for (auto& m : masters_) out.push_back(m.get());
  return out;
}

std::vector<int64_t> LocalParameterStore::pull(int worker) {
  std::vector<int64_t> versions;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    for (auto& p : shard->pieces) {
      const float* src = masters_[static_cast<size_t>(p.variable)]->component(0).data() + p.offset;
      float* dst = vars_[static_cast<size_t>(p.variable)]->component(worker).data() + p.offset;
      std::memcpy(dst, src, static_cast<size_t>(p.count) * sizeof(float));
    }
    versions.push_back(shard->version);
  }
  return versions;
}

void LocalParameterStore::apply(Shard& shard, const float* g) {
  if (shard.fail_at > 0 && shard.version + 1 >= shard.fail_at)
    throw runtime_error("parameter server " + std::to_string(shard.index) + " failed (injected at its update " +
                        std::to_string(shard.fail_at) + ")");
  const double t0 = monotonic_seconds();
  const int64_t step = ++shard.version;
  for (auto& p : shard.pieces) {
    optimizer_.apply_slice(*masters_[static_cast<size_t>(p.variable)], g, p.offset, p.count, step);
    g += p.count;
  }
  shard.stats.updates++;
  shard.stats.busy_seconds += monotonic_seconds() - t0;
}

int64_t LocalParameterStore::push(const std::vector<Tensor>& grads, const std::vector<int64_t>& pulled, float weight,
                                  int sync_slices) {
  if (grads.size() != vars_.size())
    throw runtime_error("parameter server push: " + std::to_string(grads.size()) + " gradients for " +
                        std::to_string(vars_.size()) + " variables");
  int64_t between = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = *shards_[s];
    // Pack outside the lock: other workers keep using the shard meanwhile.
    std::vector<float> packed(static_cast<size_t>(shard.elements));
    float* out = packed.data();
    for (auto& p : shard.pieces) {
      const float* g = grads[static_cast<size_t>(p.variable)].data() + p.offset;
      for (int64_t i = 0; i < p.count; ++i) out[i] = weight * g[i];
      out += p.count;
    }
    std::lock_guard lock(shard.mutex);
    between = std::max(between, shard.version - pulled[s]);
    if (sync_slices <= 0) {
      apply(shard, packed.data());
      continue;
    }
    if (shard.summed == 0) shard.sum.assign(packed.begin(), packed.end());
    else
      for (size_t i = 0; i < packed.size(); ++i) shard.sum[i] += packed[i];
    if (++shard.summed == sync_slices) {
      shard.summed = 0;
      apply(shard, shard.sum.data());
    }
  }
  return between;
}

std::vector<ServerStats> LocalParameterStore::stats() const {
  std::vector<ServerStats> out;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    out.push_back(shard->stats);
  }
  return out;
}

void LocalParameterStore::copy_to_model() {
  for (size_t v = 0; v < vars_.size(); ++v)
    for (int c = 0; c < vars_[v]->num_components(); ++c)
      std::memcpy(vars_[v]->component(c).data(), masters_[v]->component(0).data(),
                  static_cast<size_t>(masters_[v]->component(0).numel()) * sizeof(float));
}

void LocalParameterStore::copy_from_model() {
  for (size_t v = 0; v < vars_.size(); ++v) masters_[v]->assign(vars_[v]->component(0));
}

int64_t LocalParameterStore::updates() const {
  std::lock_guard lock(shards_.front()->mutex);
  return shards_.front()->version;
}

void LocalParameterStore::set_updates(int64_t n) {
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    shard->version = n;
  }
}

}  // namespace strata

namespace strata {

void LocalParameterStore::fail_at(int server, int64_t at_update) {
  if (server < 0 || server >= static_cast<int>(shards_.size()))
    throw bad_input("parameter_server: no server " + std::to_string(server) + " to fail (there are " +
                    std::to_string(shards_.size()) + ")");
  std::lock_guard lock(shards_[static_cast<size_t>(server)]->mutex);
  shards_[static_cast<size_t>(server)]->fail_at = at_update;
}

}  // namespace strata
