#pragma once
#include <vector>

#include "core/Tensor.h"
#include "core/UpdateShards.h"

namespace strata {

class Variable;

// What an optimizer needs from a distribution strategy inside a replica:
// the cross-replica sum of the gradients and whether replicas share one copy
// of each variable. nn/ defines it so optimizers do not depend on distribute/;
// ReplicaContext implements it.
class ReplicaSync {
public:
  virtual ~ReplicaSync() = default;
  virtual int replica_id_in_sync_group() const = 0;
  virtual int num_replicas_in_sync() const = 0;
  // In-place sum over replicas of each tensor, packed into fusion buffers.
  virtual void all_reduce_sum(std::vector<Tensor>& tensors) = 0;

  // The same sum for gradients, overlapping the backward pass (DDP's
  // buckets): the tape hands each gradient to gradient_ready() as soon as it
  // is final, a bucket's collective starts when the bucket fills, and
  // finish_gradients() completes them all and writes the sums into `grads`.
  // Without overlap, finish_gradients() is all_reduce_sum().
  virtual bool overlaps_backward() const { return false; }
  virtual void gradient_ready(size_t /*index*/, const Tensor& /*grad*/) {}
  virtual void finish_gradients(std::vector<Tensor>& grads) { all_reduce_sum(grads); }

  // The sharded update (ZeRO-1). When update_shard() is not null,
  // finish_gradients() summed the gradients only on the pieces of this
  // replica's shard; the optimizer updates just those pieces of the
  // variables and then calls gather_updated(), after which every replica's
  // copy holds every shard. N replicas do 1/N of the optimizer's work each.
  virtual const std::vector<ShardPiece>* update_shard() const { return nullptr; }
  virtual void gather_updated(const std::vector<Variable*>& /*vars*/) {}
  // True when variables have one component that all replicas read
  // (CentralStorage): one replica applies the update between two barriers.
  virtual bool variables_shared() const = 0;
  virtual void barrier() = 0;

  // The replica context of the calling thread inside strategy.run (as TF's
  // implicit tf.distribute.get_replica_context()), or nullptr outside it.
  static ReplicaSync* current();
  class Scope {
  public:
    explicit Scope(ReplicaSync* sync);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

  private:
    ReplicaSync* previous_;
  };
};

}  // namespace strata
