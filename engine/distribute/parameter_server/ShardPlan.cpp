#include "distribute/parameter_server/ShardPlan.h"

#include <algorithm>
#include <numeric>

#include "core/Error.h"

namespace strata {

ShardPlan ShardPlan::make(const std::vector<Variable*>& vars, int servers, int64_t min_shard_bytes) {
  if (servers < 1) throw bad_input("parameter_server: needs at least one parameter server, got " + std::to_string(servers));
  if (min_shard_bytes < 0)
    throw bad_input("parameter_server: min_shard_bytes must be 0 (whole variables) or positive, got " +
                    std::to_string(min_shard_bytes));
  ShardPlan plan;
  plan.servers_.resize(static_cast<size_t>(servers));
  const int n = static_cast<int>(vars.size());
  if (min_shard_bytes == 0) {
    if (servers > n)
      throw bad_input("parameter_server: " + std::to_string(servers) + " servers but the model has only " + std::to_string(n) +
                      " variables, and whole variables are placed round-robin; use at most " + std::to_string(n) +
                      " servers or set min_shard_bytes to split variables");
    for (int v = 0; v < n; ++v)
      plan.servers_[static_cast<size_t>(v % servers)].push_back({v, 0, vars[static_cast<size_t>(v)]->shape().numel()});
    return plan;
  }
  const int64_t min_elems = std::max<int64_t>(1, min_shard_bytes / static_cast<int64_t>(sizeof(float)));
  std::vector<ShardPiece> pieces;
  for (int v = 0; v < n; ++v) {
    const int64_t numel = vars[static_cast<size_t>(v)]->shape().numel();
    const int64_t k = std::clamp<int64_t>(numel / min_elems, 1, servers);
    for (int64_t i = 0; i < k; ++i) {
      const int64_t begin = numel * i / k, end = numel * (i + 1) / k;
      pieces.push_back({v, begin, end - begin});
    }
  }
  if (static_cast<int64_t>(pieces.size()) < servers)
    throw bad_input("parameter_server: " + std::to_string(servers) + " servers but the model's variables give only " +
                    std::to_string(pieces.size()) + " pieces of at least " + std::to_string(min_shard_bytes) +
                    " bytes; use fewer servers or a smaller min_shard_bytes");
  // Largest first onto the least-loaded server; every server gets one piece
  // before any gets two, so none is left empty.
  std::vector<size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pieces[a].count > pieces[b].count; });
  std::vector<int64_t> load(static_cast<size_t>(servers), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    size_t s = i < static_cast<size_t>(servers) ? i
                                                : static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    plan.servers_[s].push_back(pieces[order[i]]);
    load[s] += pieces[order[i]].count;
  }
  for (auto& s : plan.servers_)
    std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return std::pair(a.variable, a.offset) < std::pair(b.variable, b.offset); });
  return plan;
}

int64_t ShardPlan::elements(int server) const {
  int64_t total = 0;
  for (auto& p : pieces(server)) total += p.count;
  return total;
}

std::string ShardPlan::describe(const std::vector<Variable*>& vars) const {
  std::string out;
  for (int s = 0; s < num_servers(); ++s) {
    out += (s ? "; " : "") + std::string("server ") + std::to_string(s) + ":";
    for (auto& p : pieces(s)) {
      const Variable& v = *vars[static_cast<size_t>(p.variable)];
      out += " " + v.name();
      if (p.count != v.shape().numel()) {
        out += '[';
        out += std::to_string(p.offset);
        out += ':';
        out += std::to_string(p.offset + p.count);
        out += ']';
      }
    }
  }
  return out;
}

}  // namespace strata
