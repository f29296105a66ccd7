#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/ShardPiece.h"
#include "nn/Variable.h"

namespace strata {

// Which server holds which part of every variable. Two ways, as TF's
// ParameterServerStrategy offers: whole variables dealt round-robin (the
// default, no partitioner), or variables split into pieces of at least
// min_shard_bytes (TF's MinSizePartitioner), each placed on the least-loaded
// server so large layers spread over all servers.
class ShardPlan {
public:
  // bad_input when servers < 1 or the variables cannot give every server at
  // least one piece (more servers than variables, or than pieces of the
  // minimum size).
  static ShardPlan make(const std::vector<Variable*>& vars, int servers, int64_t min_shard_bytes);

  int num_servers() const { return static_cast<int>(servers_.size()); }
  const std::vector<ShardPiece>& pieces(int server) const { return servers_[static_cast<size_t>(server)]; }
  int64_t elements(int server) const;
  // "server 0: dense/kernel[0:100352], ...": for logs and the run_started event.
  std::string describe(const std::vector<Variable*>& vars) const;

private:
  std::vector<std::vector<ShardPiece>> servers_;
};

}  // namespace strata
