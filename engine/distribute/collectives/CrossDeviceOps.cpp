#include "distribute/collectives/CrossDeviceOps.h"

#include <algorithm>
#include <cstdint>

#include "core/Error.h"
#include "distribute/collectives/DeviceAllReduce.h"
#include "distribute/collectives/InProcessAllReduce.h"
#include "distribute/collectives/MultiWorkerAllReduce.h"
#include "distribute/collectives/ReduceToOneDevice.h"
#ifdef STRATA_WITH_NCCL
#include "distribute/collectives/nccl/NcclAllReduce.h"
#endif

namespace strata {

bool host_devices_only(const std::vector<Device>& devices, const std::string& who, std::string* why_not) {
  for (auto& d : devices)
    if (d.kind != DeviceKind::Cpu) {
      if (why_not) *why_not = who + " serves host (cpu) replicas only, not " + d.str();
      return false;
    }
  return true;
}

bool accelerators_of_one_kind(const std::vector<Device>& devices, const std::string& who, std::string* why_not) {
  for (auto& d : devices)
    if (d.is_host() || d.kind != devices.front().kind) {
      if (why_not) *why_not = who + " serves accelerator replicas of one kind only, not " + d.str();
      return false;
    }
  return true;
}

bool devices_reach_each_other(const std::vector<Device>& devices, const std::string& who, std::string* why_not) {
  for (auto& reader : devices)
    for (auto& owner : devices)
      if (!direct_access(reader, owner)) {
        if (why_not)
          *why_not = who + " needs each device to address the others' memory, and " + reader.str() + " cannot address " +
                     owner.str() + "'s" + (reader.kind == owner.kind ? " (no peer access between them)" : "");
        return false;
      }
  return true;
}

void CrossDeviceOps::reduce_scatter_sum(ReplicaGroup&, int, const std::vector<DeviceSpan>&, const UpdateShards&) {
  throw runtime_error("cross-device ops '" + name() + "' cannot run the sharded update");
}

void CrossDeviceOps::all_gather(ReplicaGroup&, int, const std::vector<DeviceSpan>&, const UpdateShards&) {
  throw runtime_error("cross-device ops '" + name() + "' cannot run the sharded update");
}

std::vector<std::unique_ptr<CrossDeviceOps>> all_cross_device_ops(const std::shared_ptr<Cluster>& cluster) {
  std::vector<std::unique_ptr<CrossDeviceOps>> ops;
#ifdef STRATA_WITH_NCCL
  ops.push_back(std::make_unique<NcclAllReduce>(cluster));
#endif
  if (cluster) {
    ops.push_back(std::make_unique<MultiWorkerAllReduce>(cluster));
    return ops;
  }
  ops.push_back(std::make_unique<InProcessAllReduce>());
  ops.push_back(std::make_unique<DeviceAllReduce>());
  ops.push_back(std::make_unique<ReduceToOneDevice>());
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a->priority() > b->priority(); });
  return ops;
}

namespace {
std::unique_ptr<CrossDeviceOps> select_here(const std::vector<Device>& devices, const std::string& name,
                                            const std::shared_ptr<Cluster>& cluster) {
  std::string names, reasons;
  for (auto& op : all_cross_device_ops(cluster)) {
    names += (names.empty() ? "" : ", ") + op->name();
    std::string why;
    const bool ok = op->enabled(devices, &why);
    if (name == "auto" && ok && op->preferred(devices)) return std::move(op);
    if (!ok) reasons += "; " + op->name() + ": " + why;
    if (op->name() == name) {
      if (!ok) throw bad_input("cross_device_ops '" + name + "' is not available: " + why);
      return std::move(op);
    }
  }
  if (name == "auto") throw bad_input("no cross-device all-reduce is available for these devices" + reasons);
  throw bad_input("cross_device_ops '" + name + "' does not exist (choose auto, " + names + ")");
}

// A name as a number every worker can all-gather exactly (FNV-1a, 32 bits).
double name_code(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return static_cast<double>(h);
}

// Workers choose by what each has (NCCL may load on one and not another):
// collectives of different kinds would wait for each other forever, so a
// disagreement fails every worker alike, naming each one's choice.
void agree(const CrossDeviceOps& chosen, const std::shared_ptr<Cluster>& cluster) {
  const std::vector<double> codes = cluster->all_gather({name_code(chosen.name())});
  if (std::all_of(codes.begin(), codes.end(), [&](double c) { return c == codes.front(); })) return;
  const std::vector<std::unique_ptr<CrossDeviceOps>> known = all_cross_device_ops(cluster);
  std::string each;
  for (size_t r = 0; r < codes.size(); ++r) {
    std::string what = "another";
    for (const auto& op : known)
      if (name_code(op->name()) == codes[r]) what = op->name();
    each += (each.empty() ? "" : ", ") + ("worker " + std::to_string(r) + " " + what);
  }
  throw bad_input("the workers chose different cross-device all-reduces (" + each +
                  "); name one that every worker has in strategy.cross_device_ops");
}
}  // namespace

std::unique_ptr<CrossDeviceOps> select_cross_device_ops(const std::vector<Device>& devices, const std::string& name,
                                                        const std::shared_ptr<Cluster>& cluster) {
  std::unique_ptr<CrossDeviceOps> chosen = select_here(devices, name, cluster);
  if (cluster && cluster->size() > 1) agree(*chosen, cluster);
  return chosen;
}

}  // namespace strata
