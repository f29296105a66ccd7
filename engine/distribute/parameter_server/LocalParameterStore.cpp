#include "distribute/parameter_server/LocalParameterStore.h"

#include "distribute/collectives/HostGradients.h"

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
};

LocalParameterStore::LocalParameterStore(const std::vector<Variable*>& vars, ShardPlan plan, nn::Optimizer& optimizer)
    : vars_(vars), plan_(std::move(plan)), optimizer_(optimizer) {
  {
    // The servers' copies live on the host and own their memory (a Variable
    // copies its initial value), so no worker computes on a master.
    VariableComponentsScope one({Device{}});
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

std::vector<int64_t> LocalParameterStore::pull(int worker, int64_t) {
  std::vector<int64_t> versions;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    for (auto& p : shard->pieces) {
      const float* src = masters_[static_cast<size_t>(p.variable)]->component(0).data() + p.offset;
      Tensor& dst = vars_[static_cast<size_t>(p.variable)]->component(worker);
      copy_bytes(dst.device(), dst.ptr() + p.offset, Device{}, src, static_cast<size_t>(p.count) * sizeof(float));
    }
    versions.push_back(shard->version);
  }
  return versions;
}

void LocalParameterStore::apply(Shard& shard, const float* g, int64_t round) {
  if (shard.fail_at > 0 && shard.version + 1 >= shard.fail_at)
    throw server_failed("parameter server " + std::to_string(shard.index) + " failed (injected at its update " +
                        std::to_string(shard.fail_at) + ")");
  const double t0 = monotonic_seconds();
  const int64_t step = ++shard.version;
  for (auto& p : shard.pieces) {
    optimizer_.apply_slice(*masters_[static_cast<size_t>(p.variable)], g, p.offset, p.count, step);
    g += p.count;
  }
  shard.stats.updates++;
  const double t1 = monotonic_seconds();
  shard.stats.busy_seconds += t1 - t0;
  if (tracer_)
    tracer_->record(trace::Span{trace::SpanKind::Optimizer, trace::Lane{trace::LaneKind::Server, shard.index}, round,
                                t0 * 1e6, (t1 - t0) * 1e6, 0});
}

int64_t LocalParameterStore::shard_elements(int server) const { return shards_[static_cast<size_t>(server)]->elements; }

void LocalParameterStore::pack(int server, const std::vector<const float*>& grads, float weight, float* out) const {
  for (auto& p : shards_[static_cast<size_t>(server)]->pieces) {
    const float* g = grads[static_cast<size_t>(p.variable)] + p.offset;
    for (int64_t i = 0; i < p.count; ++i) out[i] = weight * g[i];
    out += p.count;
  }
}

int64_t LocalParameterStore::push_locked(Shard& shard, const float* packed, int64_t pulled, int sync_slices, int64_t round) {
  const int64_t between = shard.version - pulled;
  if (sync_slices <= 0) {
    apply(shard, packed, round);
    return between;
  }
  if (shard.summed == 0) shard.sum.assign(packed, packed + shard.elements);
  else
    for (int64_t i = 0; i < shard.elements; ++i) shard.sum[static_cast<size_t>(i)] += packed[i];
  if (++shard.summed == sync_slices) {
    shard.summed = 0;
    apply(shard, shard.sum.data(), round);
  }
  return between;
}

int64_t LocalParameterStore::push(const std::vector<Tensor>& worker_grads, const std::vector<int64_t>& pulled,
                                  const PushRecord& push) {
  if (worker_grads.size() != vars_.size())
    throw runtime_error("parameter server push: " + std::to_string(worker_grads.size()) + " gradients for " +
                        std::to_string(vars_.size()) + " variables");
  // The servers work in host memory: a worker on a device sends its gradients
  // there first (one wait for its device, through pinned memory).
  thread_local HostGradients host;
  const std::vector<const float*>& grads = host.gather(worker_grads);
  int64_t between = 0;
  // Each worker thread keeps its packing buffer: no megabyte allocation per push.
  thread_local std::vector<float> packed;
  for (size_t s = 0; s < shards_.size(); ++s) {
    // Pack outside the lock: other workers keep using the shard meanwhile.
    packed.resize(static_cast<size_t>(shards_[s]->elements));
    pack(static_cast<int>(s), grads, push.weight, packed.data());
    std::lock_guard lock(shards_[s]->mutex);
    between = std::max(between, push_locked(*shards_[s], packed.data(), pulled[s], push.sync_slices, push.round));
  }
  return between;
}

void LocalParameterStore::unpack_to_model(int server, const float* packed, int component) {
  for (auto& p : shards_[static_cast<size_t>(server)]->pieces) {
    Tensor& dst = vars_[static_cast<size_t>(p.variable)]->component(component);
    copy_bytes(dst.device(), dst.ptr() + p.offset, Device{}, packed, static_cast<size_t>(p.count) * sizeof(float));
    packed += p.count;
  }
}

int64_t LocalParameterStore::read_shard(int server, float* out) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  for (auto& p : shard.pieces) {
    std::memcpy(out, masters_[static_cast<size_t>(p.variable)]->component(0).data() + p.offset,
                static_cast<size_t>(p.count) * sizeof(float));
    out += p.count;
  }
  return shard.version;
}

int64_t LocalParameterStore::push_shard(int server, const float* packed, int64_t pulled, int sync_slices, int64_t round) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  return push_locked(shard, packed, pulled, sync_slices, round);
}

void LocalParameterStore::finish_sync_round(int server, int slices, int64_t round) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  if (shard.summed > 0 && shard.summed >= slices) {
    shard.summed = 0;
    apply(shard, shard.sum.data(), round);
  }
}

std::vector<Tensor*> LocalParameterStore::slots_of(int variable) {
  std::vector<Tensor*> out;
  const std::string prefix = masters_[static_cast<size_t>(variable)]->name() + "/";
  for (auto& [name, v] : optimizer_.slot_variables())
    if (name.compare(0, prefix.size(), prefix) == 0 && v->shape() == masters_[static_cast<size_t>(variable)]->shape())
      out.push_back(&v->component(0));
  return out;
}

std::vector<float> LocalParameterStore::shard_state(int server) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  std::vector<float> out;
  for (auto& p : shard.pieces) {
    std::vector<Tensor*> tensors{&masters_[static_cast<size_t>(p.variable)]->component(0)};
    for (auto* t : slots_of(p.variable)) tensors.push_back(t);
    for (auto* t : tensors) out.insert(out.end(), t->data() + p.offset, t->data() + p.offset + p.count);
  }
  return out;
}

void LocalParameterStore::set_shard_state(int server, const std::vector<float>& state, int64_t version) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  const float* in = state.data();
  const float* end = state.data() + state.size();
  for (auto& p : shard.pieces) {
    std::vector<Tensor*> tensors{&masters_[static_cast<size_t>(p.variable)]->component(0)};
    for (auto* t : slots_of(p.variable)) tensors.push_back(t);
    for (auto* t : tensors) {
      if (end - in < p.count) throw runtime_error("parameter server " + std::to_string(server) + ": shard state is truncated");
      std::memcpy(t->data() + p.offset, in, static_cast<size_t>(p.count) * sizeof(float));
      in += p.count;
    }
  }
  shard.version = version;
}

int64_t LocalParameterStore::version(int server) {
  Shard& shard = *shards_[static_cast<size_t>(server)];
  std::lock_guard lock(shard.mutex);
  return shard.version;
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
      vars_[v]->component(c).copy_from(masters_[v]->component(0));
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
