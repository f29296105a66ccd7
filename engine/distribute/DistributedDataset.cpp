#include "distribute/DistributedDataset.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "backend/Backend.h"
#include "core/Error.h"

namespace strata {

namespace {
// The largest training set kept on a device: Fashion-MNIST's is 47 MiB,
// CIFAR-10's 150 MiB; beyond this the batches are gathered on the host.
constexpr double kDeviceDataBytes = 1024.0 * 1024.0 * 1024.0;

// Rows [begin, end) of `t` as a tensor on `device`: a view where it shares
// the batch's memory, else one copy.
Tensor rows_on(const Tensor& t, int64_t begin, int64_t end, const Device& device) {
  if (device.same_memory(t.device())) return t.rows(begin, end);
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = end - begin;
  Tensor out = Tensor::empty(Shape(dims), t.dtype(), device);
  out.copy_rows_from(t, begin, end);
  return out;
}
}  // namespace

PerReplica<Batch> split_batch(const Batch& global, int replicas, const std::vector<Device>& devices, int first) {
  const int64_t total = global.size();
  const int last = devices.empty() ? replicas : first + static_cast<int>(devices.size());
  std::vector<Batch> parts;
  int64_t begin = 0;
  for (int r = 0; r < last; ++r) {
    const int64_t len = total / replicas + (r < total % replicas ? 1 : 0);
    if (r >= first || devices.empty()) {
      Batch b;
      b.global_batch_size = total;
      if (global.pending) {
        const auto from = global.rows.begin() + begin;
        b.rows.assign(from, from + len);
        b.pending = true;
      } else {
        const Device device = devices.empty() ? global.features.device() : devices[static_cast<size_t>(r - first)];
        b.features = rows_on(global.features, begin, begin + len, device);
        b.labels = rows_on(global.labels, begin, begin + len, device);
      }
      parts.push_back(std::move(b));
    }
    begin += len;
  }
  return PerReplica<Batch>(std::move(parts));
}

DistributedDataset::DistributedDataset(std::shared_ptr<BatchPipeline> global, int replicas, int first, int local,
                                       std::vector<Device> devices)
    : global_(std::move(global)),
      replicas_(replicas),
      first_(first),
      local_(local < 0 ? replicas : local),
      devices_(devices.empty() ? std::vector<Device>(static_cast<size_t>(local_)) : std::move(devices)) {
  // Every replica on an accelerator: pixels cross as uint8 and are converted
  // there (a quarter of the bytes; the host's prefetch thread only gathers).
  mean_on_.resize(devices_.size());
  inv_std_on_.resize(devices_.size());
  accelerators_ = std::none_of(devices_.begin(), devices_.end(), [](const Device& d) { return d.is_host(); });
  if (accelerators_ && global_->dataset().has_pixels()) global_->set_raw_pixels(true);
  const Dataset& data = global_->dataset();
  const auto table_bytes = static_cast<double>(data.size()) * static_cast<double>(data.example_shape().numel() + 4);
  const char* env = std::getenv("STRATA_DEVICE_DATA");
  device_data_ = accelerators_ && data.has_pixels() && data.size() < INT32_MAX && table_bytes <= kDeviceDataBytes &&
                 !(env && std::string(env) == "0");
  if (device_data_) {
    global_->set_deferred(true);
    tables_.resize(devices_.size());
  }
  if (global_->options().batch_size < replicas)
    throw bad_input("global batch " + std::to_string(global_->options().batch_size) + " is smaller than the " +
                    std::to_string(replicas) + " replicas: every replica needs at least one example");
}

DistributedDataset::DistributedDataset(std::vector<std::shared_ptr<BatchPipeline>> per_replica, int workers,
                                       std::vector<Device> devices)
    : per_replica_(std::move(per_replica)),
      replicas_(static_cast<int>(per_replica_.size())),
      local_(replicas_),
      workers_(workers),
      devices_(devices.empty() ? std::vector<Device>(static_cast<size_t>(replicas_)) : std::move(devices)) {}

int64_t DistributedDataset::steps_per_epoch() const {
  if (global_) return global_->steps_per_epoch();
  // Every replica must take part in every step: stop with the shortest.
  int64_t steps = INT64_MAX;
  for (auto& p : per_replica_) steps = std::min(steps, p->steps_per_epoch());
  return per_replica_.empty() ? 0 : steps;
}

void DistributedDataset::begin_epoch(int64_t epoch, int64_t first_step) {
  next_epoch_ = epoch + 1;
  if (global_) global_->begin_epoch(epoch, first_step);
  for (auto& p : per_replica_) p->begin_epoch(epoch, first_step);
}

std::optional<PerReplica<Batch>> DistributedDataset::next() {
  if (global_) {
    auto b = global_->next();
    if (!b) return std::nullopt;
    // Every worker draws the same global batch (same seed, same order) and
    // keeps its replicas' slices: all agree on the steps, none overlap.
    const bool to_devices = tracer_ &&
                            std::any_of(devices_.begin(), devices_.end(), [](const Device& d) { return !d.is_host(); });
    const trace::ScopedSpan host(to_devices ? tracer_ : nullptr, trace::SpanKind::HostToDevice,
                                 trace::Lane{trace::LaneKind::Run, 0}, trace_step_, b->features.bytes() + b->labels.bytes());
    // Sized only when traced: no allocation per batch otherwise.
    std::vector<std::optional<trace::DeviceSpans::Scoped>> on_device(to_devices ? devices_.size() : 0);
    for (size_t r = 0; r < on_device.size(); ++r)
      on_device[r].emplace(device_spans_, devices_[r], trace::SpanKind::HostToDevice, trace::device_lane(static_cast<int>(r)),
                           trace_step_);
    PerReplica<Batch> parts = split_batch(*b, replicas_, devices_, first_);
    if (!b->pending || device_data_)
      for (int r = 0; r < parts.num_replicas(); ++r) parts[r] = to_features(std::move(parts[r]), static_cast<size_t>(r));
    return parts;
  }
  std::vector<Batch> parts;
  int64_t total = 0;
  for (auto& p : per_replica_) {
    auto b = p->next();
    if (!b) return std::nullopt;
    total += b->size();
    parts.push_back(std::move(*b));
  }
  // Multi-worker: the other workers' pipelines are assumed to give as many.
  for (size_t r = 0; r < parts.size(); ++r) {
    parts[r].global_batch_size = total * workers_;
    parts[r] = parts[r].to(devices_[r]);
  }
  return PerReplica<Batch>(std::move(parts));
}

void DistributedDataset::gather_in_replicas(bool on) {
  if (!global_ || !std::all_of(devices_.begin(), devices_.end(), [](const Device& d) { return d.is_host(); })) return;
  global_->set_deferred(on);
}

const DistributedDataset::DeviceTable& DistributedDataset::table_on(size_t replica) {
  DeviceTable& t = tables_[replica];
  if (t.pixels.defined()) return t;
  const Device& device = devices_[replica];
  for (size_t r = 0; r < tables_.size(); ++r)
    if (devices_[r] == device && tables_[r].pixels.defined()) return t = tables_[r];
  const Dataset& data = global_->dataset();
  const std::span<const uint8_t> pixels = data.all_pixels();
  t.pixels = Tensor::empty(Shape{static_cast<int64_t>(pixels.size())}, DType::UInt8, device);
  copy_bytes(device, t.pixels.byte_ptr(), Device{}, pixels.data(), pixels.size());
  t.labels = Tensor::from_ints(Shape{data.size()}, data.labels(), device);
  return t;
}

Batch DistributedDataset::gather_on_device(const Batch& pending, size_t replica) {
  const DeviceTable& table = table_on(replica);
  const Dataset& data = global_->dataset();
  const Device& device = devices_[replica];
  const int64_t n = pending.size(), d = data.example_shape().numel();
  std::vector<int32_t> rows(pending.rows.begin(), pending.rows.end());  // < INT32_MAX (the constructor's check)
  const Tensor on_device = Tensor::from_ints(Shape{n}, rows, device);
  std::vector<int64_t> dims{n};
  for (auto x : data.example_shape().dims()) dims.push_back(x);
  Batch b;
  b.features = Tensor::empty(Shape(dims), DType::Float32, device);
  b.labels = Tensor::empty(Shape{n}, DType::Int32, device);
  b.global_batch_size = pending.global_batch_size;
  const auto [mean, inv_std] = normalisation_on(replica);
  backend_for(device).gather_examples(table.pixels.byte_ptr(), d, table.labels.int_ptr(), on_device.int_ptr(), n,
                                      data.scale(), mean, inv_std, b.features.ptr(), b.labels.int_ptr());
  return b;
}

std::pair<const float*, const float*> DistributedDataset::normalisation_on(size_t replica) {
  const Dataset& data = global_->dataset();
  if (data.mean().empty()) return {nullptr, nullptr};
  if (!mean_on_[replica].defined()) {
    const auto n = static_cast<int64_t>(data.mean().size());
    mean_on_[replica] = Tensor::from(Shape{n}, data.mean(), devices_[replica]);
    inv_std_on_[replica] = Tensor::from(Shape{n}, data.inv_std(), devices_[replica]);
  }
  return {mean_on_[replica].ptr(), inv_std_on_[replica].ptr()};
}

Batch DistributedDataset::to_features(Batch b, size_t replica) {
  if (b.pending && device_data_) b = gather_on_device(b, replica);
  if (b.pending) {
    Batch gathered = global_->dataset().gather(b.rows);
    gathered.global_batch_size = b.global_batch_size;
    return gathered.to(devices_[replica]);
  }
  if (b.features.dtype() != DType::UInt8) return b;
  const Device& device = devices_[replica];
  const auto [mean, inv_std] = normalisation_on(replica);
  const int64_t rows = b.size(), features = rows ? b.features.numel() / rows : 0;
  Tensor out = Tensor::empty(b.features.shape(), DType::Float32, device);
  backend_for(device).pixels_to_float(rows, features, b.features.byte_ptr(), global_->dataset().scale(), mean, inv_std,
                                      out.ptr());
  b.features = out;
  return b;
}

DistributedDataset::Iterator DistributedDataset::begin() {
  begin_epoch(next_epoch_);
  return Iterator(this);
}

}  // namespace strata
