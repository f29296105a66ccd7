#pragma once
// The GPU check's checks across several devices of one kind (#15): mirrored
// across GPUs, mixed placement and synchronised batch norm against
// one_device on the same global batches, and the figures of the collectives
// (bus bandwidth, the share of the all-reduce hidden behind the backward
// pass, throughput against one GPU). On sim they run across two sim devices,
// which is how the test suite checks them without GPUs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "CheckRecord.h"
#include "core/Device.h"

namespace strata::gpu_check {

// The devices of `device`'s kind this process can use, `device` first: every
// GPU the driver shows (at most 8), or `device` and the next sim device.
std::vector<Device> devices_like(const Device& device);

// Mirrored with one replica on each device against one_device on the first,
// on the same global batches (SGD): the losses and every replica's weights,
// with the all-reduce the project would choose ("auto": NCCL across GPUs)
// and again with the sharded update.
std::vector<CheckRecord> check_mirrored_across(const std::vector<Device>& devices, int steps = 20);
// Mixed placement: two replicas on each of the first two devices
// (d0,d0,d1,d1; a local sum through device memory, then across devices)
// against one_device.
std::vector<CheckRecord> check_mixed_placement(const std::vector<Device>& devices, int steps = 20);
// The CNN with synchronised batch norm (tanh and average pooling, no dropout), mirrored across
// the devices against one_device: the statistics are the global batch's, so
// the same trajectory up to rounding.
std::vector<CheckRecord> check_synchronized_batch_norm(const std::vector<Device>& devices, int steps = 8);

// All-reduce bus bandwidth across the devices, nccl-tests' definition
// (algbw = bytes / time, busbw = algbw * 2(n-1)/n), through the strategy's
// cross-device ops on one buffer per replica reduced in place; each size is
// checked against the exact sum first (a wrong element is a failed record).
// Markdown table.
std::string bus_bandwidth_table(const std::vector<Device>& devices, const std::vector<size_t>& sizes, double min_seconds,
                                std::vector<CheckRecord>& failures);
// A traced mirrored run across the devices: how much of the all-reduce time
// ran while the replica's device computed (the comm-stream lane overlapping
// the device lane's forward and backward), at the project's bucket size and
// at a small one (4 MiB and 256 KiB). Markdown table.
std::string comm_overlap_table(const std::vector<Device>& devices, const std::string& project, int64_t batch, int warmup,
                               int steps, std::vector<CheckRecord>& failures);
// Training throughput mirrored over `devices` (a device may repeat: replicas
// sharing it) against one_device on the first, same global batch, per
// (project, global batch). Markdown table.
std::string scaling_table(const std::vector<Device>& devices, const std::vector<std::pair<std::string, int64_t>>& runs,
                          int warmup, int steps, std::vector<CheckRecord>& failures);

}  // namespace strata::gpu_check
