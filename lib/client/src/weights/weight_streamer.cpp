// SPDX-License-Identifier: Apache-2.0
#include "weight_streamer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <span>
#include <cstring>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/log.hpp"
#include "cxlpool/weights/placement.hpp"
#include "window_copy.hpp"

namespace cxlpool::client {
namespace {

constexpr uint64_t kDirectAlign = 4096;
constexpr uint32_t kQueueDepth = 16;
// Stands in for the SSD's speed in the placement policy before anything was
// read; only the order (files slower than memory) decides which layers pin.
constexpr double kAssumedFileBytesPerSec = 1.5e9;

Result<Mapping> map_anonymous(uint64_t bytes) {
  // Populated now: first-touch faults would otherwise land in the copies.
  return Mapping::map(bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1);
}

double measure_memcpy_bytes_per_sec() {
  constexpr size_t kBytes = 8u << 20;
  std::vector<std::byte> a(kBytes, std::byte{1}), b(kBytes);
  std::memcpy(b.data(), a.data(), kBytes);  // warm
  uint64_t t0 = monotonic_ns();
  std::memcpy(b.data(), a.data(), kBytes);
  uint64_t dt = std::max<uint64_t>(1, monotonic_ns() - t0);
  return static_cast<double>(kBytes) * 1e9 / static_cast<double>(dt);
}

}  // namespace

Result<std::unique_ptr<WeightStreamer>> WeightStreamer::create(const WeightsModel& model,
                                                               const cxlpool_streamer_config& config) {
  std::unique_ptr<WeightStreamer> s(new WeightStreamer(model));
  if (auto ok = s->setup(config); !ok) return tl::unexpected(ok.error());
  s->thread_ = std::thread([p = s.get()] { p->copy_loop(); });
  return s;
}

WeightStreamer::~WeightStreamer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  job_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<void> WeightStreamer::setup(const cxlpool_streamer_config& config) {
  if (config.target != CXLPOOL_STREAM_HOST && config.target != CXLPOOL_STREAM_CUDA) {
    return fail(EINVAL, "streamer: unknown target");
  }
  if (config.buffers < 2 || config.buffers > 8) return fail(EINVAL, "streamer: buffers must be 2..8");
  if (config.prefetch_depth >= config.buffers) return fail(EINVAL, "streamer: prefetch_depth must be below buffers");
  if (!(config.compute_ns_per_byte >= 0)) return fail(EINVAL, "streamer: negative compute_ns_per_byte");
  if (model_.layers() == 0) return fail(EINVAL, "streamer: the model has no layers");
  align_ = kDirectAlign;
  uint64_t slot_bytes = align_;
  for (int l = 0; l < model_.layers(); ++l) {
    plans_.push_back(plan_layer(model_, static_cast<size_t>(l), align_));
    slot_bytes = std::max(slot_bytes, plans_.back().slot_bytes);
  }
  choose_pinned(config, slot_bytes);
  if (config.prefetch_depth != 0) depth_ = config.prefetch_depth;
  depth_ = std::min<uint32_t>(depth_, config.buffers - 1);
  slots_.resize(config.buffers);
  if (config.target == CXLPOOL_STREAM_CUDA) {
    // Pinned layers get device slots of their own past the streaming ones.
    const size_t n_pinned = static_cast<size_t>(std::count(pinned_layer_.begin(), pinned_layer_.end(), true));
    auto dev = open_cuda_window(config.device, config.buffers + n_pinned, config.buffers, slot_bytes,
                                std::span<const std::byte>(model_.base(), model_.region_bytes()));
    if (!dev) return tl::unexpected(dev.error());
    device_ = std::move(*dev);
    for (uint32_t i = 0; i < config.buffers; ++i) slots_[i].mem = device_->staging(i);
    stats_.region_registered = device_->region_registered() ? 1 : 0;
    if (!device_->region_registered() && !device_->registration_error().empty()) {
      // Once per streamer: every region layer will pay a staging copy, which
      // is slower but correct, so this is a warning and not an error.
      log(LogLevel::kWarning, "weights",
          "streamer: the model region could not be registered with the CUDA driver, region layers go "
          "through pinned staging copies: " + device_->registration_error());
    }
  } else {
    auto window = map_anonymous(slot_bytes * config.buffers);
    if (!window) return tl::unexpected(window.error());
    window_ = std::move(*window);
    for (uint32_t i = 0; i < config.buffers; ++i) slots_[i].mem = window_.data() + i * slot_bytes;
  }
  std::vector<iovec> registered;
  for (const auto& slot : slots_) registered.push_back(iovec{slot.mem, slot_bytes});
  reader_ = std::make_unique<LayerReader>(model_.paths(), align_, kQueueDepth);
  reader_->set_registered(std::move(registered));
  pinned_.resize(plans_.size());
  size_t next_device_slot = config.buffers;
  for (size_t l = 0; l < plans_.size(); ++l) {
    if (!pinned_layer_[l]) continue;
    auto p = std::make_unique<Pinned>();
    std::byte* base = nullptr;
    if (device_) {
      p->device_slot = next_device_slot++;
      if (auto ok = fill_now(static_cast<uint32_t>(l), device_->staging(p->device_slot), p->device_slot); !ok) {
        return ok;
      }
    } else {
      auto mem = map_anonymous(std::max(align_, plans_[l].slot_bytes));
      if (!mem) return tl::unexpected(mem.error());
      p->mem = std::move(*mem);
      if (auto ok = fill_now(static_cast<uint32_t>(l), p->mem.data(), 0); !ok) return ok;
      base = p->mem.data();
    }
    for (uint64_t d : plans_[l].tensor_dst) {
      p->ptrs.push_back(device_ ? device_->device(p->device_slot) + d : reinterpret_cast<uint64_t>(base + d));
    }
    pinned_[l] = std::move(p);
    ++stats_.pinned_layers;
  }
  return {};
}

void WeightStreamer::choose_pinned(const cxlpool_streamer_config& config, uint64_t slot_bytes) {
  (void)slot_bytes;
  weights::PlacementInput in;
  for (const auto& p : plans_) {
    in.layer_bytes.push_back(p.payload_bytes);
    in.layer_source.push_back(p.file_bytes > 0 ? weights::LayerSource::kFile : weights::LayerSource::kRegion);
    in.compute_ns.push_back(config.compute_ns_per_byte * static_cast<double>(p.payload_bytes));
  }
  in.pinned_budget_bytes = config.pinned_budget_bytes;
  in.region_bytes_per_sec = measure_memcpy_bytes_per_sec();
  // A copy measured on a loaded machine can come out below the assumed SSD
  // speed; a file is never the faster source, whatever the measurement says.
  in.file_bytes_per_sec = std::min(kAssumedFileBytesPerSec, in.region_bytes_per_sec / 2);
  in.max_buffers = config.buffers;
  auto plan = weights::plan_placement(in);
  pinned_layer_.assign(plans_.size(), false);
  if (!plan) return;
  pinned_layer_ = plan->pinned;
  depth_ = plan->prefetch_depth;
}

Result<void> WeightStreamer::upload(size_t device_slot, uint32_t layer) {
  if (!device_) return {};
  for (const CopyOp& op : plans_[layer].ops) {
    if (!op.from_file) continue;
    if (auto ok = device_->upload_staged(device_slot, op.dst, op.bytes); !ok) return ok;
  }
  return device_->finish();
}

Result<void> WeightStreamer::fill_now(uint32_t layer, std::byte* mem, size_t device_slot) {
  const LayerPlan& plan = plans_[layer];
  uint64_t t0 = monotonic_ns();
  for (const CopyOp& op : plan.ops) {
    if (op.from_file) continue;
    if (device_) {
      if (auto ok = device_->copy_region(device_slot, op.dst, op.src, op.bytes); !ok) return ok;
    } else {
      copy_to_window(mem + op.dst, op.src, op.bytes);
    }
  }
  const uint64_t copy_ns = monotonic_ns() - t0;
  const uint64_t read_before = reader_->busy_ns();
  Result<void> status;
  if (plan.file_bytes > 0) {
    // The reader's ids are slot indices; set-up uses one past them.
    const uint64_t id = slots_.size();
    reader_->add(id, plan.ops, mem, -1);
    while (!reader_->idle()) {
      for (auto& d : reader_->step()) {
        if (d.id == id) status = d.status;
      }
    }
    if (!status) return status;
  }
  if (auto ok = upload(device_slot, layer); !ok) return ok;
  count_region_copy(plan, copy_ns);
  if (plan.file_bytes > 0) {
    ++stats_.layers_read;
    stats_.bytes_read += plan.file_bytes;
    stats_.read_ns_total += reader_->busy_ns() - read_before;
  }
  return {};
}

void WeightStreamer::count_region_copy(const LayerPlan& plan, uint64_t copy_ns) {
  if (plan.region_bytes == 0) return;
  ++stats_.layers_copied;
  stats_.bytes_copied += plan.region_bytes;
  stats_.copy_ns_total += copy_ns;
  if (!device_) return;
  if (device_->region_registered()) {
    ++stats_.layers_direct;
    stats_.bytes_direct += plan.region_bytes;
  } else {
    ++stats_.layers_staged;
    stats_.bytes_staged += plan.region_bytes;
  }
}

bool WeightStreamer::start_slot(size_t idx, uint32_t layer, Result<void>& status) {
  const LayerPlan& plan = plans_[layer];
  std::byte* mem = slots_[idx].mem;
  const uint64_t t0 = monotonic_ns();
  for (const CopyOp& op : plan.ops) {
    if (op.from_file) continue;
    if (device_) {
      status = device_->copy_region(idx, op.dst, op.src, op.bytes);
      if (!status) return true;  // the slot fails; its file part is not read
    } else {
      copy_to_window(mem + op.dst, op.src, op.bytes);
    }
  }
  const uint64_t copy_ns = monotonic_ns() - t0;
  if (plan.file_bytes > 0) reader_->add(idx, plan.ops, mem, static_cast<int>(idx));
  std::lock_guard lock(mutex_);
  count_region_copy(plan, copy_ns);
  return plan.file_bytes == 0;
}

void WeightStreamer::finish_slot(size_t idx, const Result<void>& status) {
  Slot& slot = slots_[idx];
  const uint32_t layer = static_cast<uint32_t>(slot.layer);
  if (status) {
    if (plans_[layer].file_bytes > 0) {
      ++stats_.layers_read;
      stats_.bytes_read += plans_[layer].file_bytes;
    }
    slot.state = SlotState::kReady;
    slot.ptrs.clear();
    for (uint64_t d : plans_[layer].tensor_dst) {
      slot.ptrs.push_back(device_ ? device_->device(idx) + d : reinterpret_cast<uint64_t>(slot.mem + d));
    }
  } else {
    slot.state = SlotState::kFailed;
    slot.error = status.error();
  }
  ready_cv_.notify_all();
}

void WeightStreamer::copy_loop() {
  // The device's context is current on this thread for its copies.
  Result<void> bound;
  if (device_) bound = device_->bind_thread();
  // Ends a slot's fill: its H2D copies (CUDA) run before it is ready.
  auto complete = [&](size_t idx, Result<void> status) {
    if (status && !bound) status = tl::unexpected(bound.error());
    if (status) status = upload(idx, static_cast<uint32_t>(slots_[idx].layer));
    return status;
  };
  std::unique_lock lock(mutex_);
  for (;;) {
    // A slot is taken as soon as the reader has issued every read it has,
    // so the next layer's reads follow the current one's without a gap.
    while (!stop_ && !jobs_.empty() && !reader_->has_unissued()) {
      const size_t idx = jobs_.front();
      jobs_.pop_front();
      const uint32_t layer = static_cast<uint32_t>(slots_[idx].layer);
      lock.unlock();
      Result<void> status;
      const bool done = bound ? start_slot(idx, layer, status) : true;
      if (done) status = complete(idx, status);
      lock.lock();
      if (done) finish_slot(idx, status);
    }
    if (stop_) {
      lock.unlock();
      // The window outlives the thread: no read may still target it.
      reader_->drain();
      return;
    }
    if (reader_->idle()) {
      job_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      continue;
    }
    const uint64_t busy_before = reader_->busy_ns();
    lock.unlock();
    auto done = reader_->step();
    for (auto& d : done) d.status = complete(static_cast<size_t>(d.id), d.status);
    lock.lock();
    stats_.read_ns_total += reader_->busy_ns() - busy_before;
    for (auto& d : done) finish_slot(static_cast<size_t>(d.id), d.status);
  }
}

WeightStreamer::Slot* WeightStreamer::slot_of(uint32_t layer) {
  for (auto& s : slots_) {
    if (s.layer == static_cast<int64_t>(layer) && s.state != SlotState::kEmpty) return &s;
  }
  return nullptr;
}

uint32_t WeightStreamer::next_streamed(uint32_t layer) const {
  const uint32_t n = static_cast<uint32_t>(plans_.size());
  for (uint32_t k = 1; k <= n; ++k) {
    uint32_t l = (layer + k) % n;
    if (!pinned_[l]) return l;
  }
  return layer;
}

void WeightStreamer::want(uint32_t layer, bool urgent) {
  if (pinned_[layer]) return;
  if (Slot* s = slot_of(layer)) {
    // Released but still holding the bytes: keep it from being reused.
    if (s->state == SlotState::kCached) s->state = SlotState::kReady;
    if (s->state != SlotState::kFailed) return;
    s->state = SlotState::kEmpty;
  }
  if (std::find(wanted_.begin(), wanted_.end(), layer) != wanted_.end()) return;
  if (urgent) {
    wanted_.push_front(layer);
  } else {
    wanted_.push_back(layer);
  }
}

void WeightStreamer::assign_slots() {
  while (!wanted_.empty()) {
    uint32_t layer = wanted_.front();
    Slot* pick = nullptr;
    for (auto& s : slots_) {
      bool free = s.state == SlotState::kEmpty || s.state == SlotState::kCached || s.state == SlotState::kFailed;
      if (free && (pick == nullptr || s.released_seq < pick->released_seq)) pick = &s;
    }
    if (pick == nullptr && static_cast<int64_t>(layer) == urgent_) {
      // A layer acquired out of order may take a prefetched one's slot.
      for (auto& s : slots_) {
        if (s.state == SlotState::kReady) {
          pick = &s;
          break;
        }
      }
    }
    if (pick == nullptr) return;
    wanted_.pop_front();
    pick->layer = layer;
    pick->state = SlotState::kLoading;
    jobs_.push_back(static_cast<size_t>(pick - slots_.data()));
    job_cv_.notify_one();
  }
}

Result<void> WeightStreamer::acquire(uint32_t layer, cxlpool_streamed_layer* out) {
  if (layer >= plans_.size()) return fail(EINVAL, "streamer: no layer " + std::to_string(layer));
  std::unique_lock lock(mutex_);
  ++stats_.acquires;
  const LayerPlan& plan = plans_[layer];
  out->layer = layer;
  out->n_tensors = static_cast<uint32_t>(plan.tensor_index.size());
  out->tensor_index = plan.tensor_index.data();
  // The layers after this one, whatever happens to this one.
  wanted_.clear();
  if (!pinned_[layer]) want(layer, true);
  uint32_t l = layer;
  for (uint32_t k = 0; k < depth_; ++k) {
    l = next_streamed(l);
    if (l == layer) break;
    want(l, false);
  }
  if (pinned_[layer]) {
    ++stats_.hits_resident;
    pinned_[layer]->held = true;
    out->data = pinned_[layer]->ptrs.data();
    assign_slots();
    return {};
  }
  urgent_ = layer;
  uint64_t t0 = monotonic_ns();
  Result<void> result;
  for (;;) {
    assign_slots();
    Slot* s = slot_of(layer);
    if (s != nullptr && s->state == SlotState::kReady) {
      s->state = SlotState::kInUse;
      out->data = s->ptrs.data();
      break;
    }
    if (s != nullptr && s->state == SlotState::kInUse) {
      result = fail(EBUSY, "streamer: layer " + std::to_string(layer) + " is already acquired");
      break;
    }
    if (s != nullptr && s->state == SlotState::kFailed) {
      result = tl::unexpected(s->error);
      s->state = SlotState::kEmpty;
      break;
    }
    if (s == nullptr) {
      bool all_in_use = std::all_of(slots_.begin(), slots_.end(),
                                    [](const Slot& x) { return x.state == SlotState::kInUse; });
      if (all_in_use) {
        result = fail(EBUSY, "streamer: every slot is in use (release a layer first)");
        break;
      }
    }
    ready_cv_.wait(lock);
  }
  urgent_ = -1;
  std::erase(wanted_, layer);
  stats_.wait_ns_total += monotonic_ns() - t0;
  return result;
}

Result<void> WeightStreamer::release(uint32_t layer) {
  if (layer >= plans_.size()) return fail(EINVAL, "streamer: no layer " + std::to_string(layer));
  std::lock_guard lock(mutex_);
  if (pinned_[layer]) {
    if (!pinned_[layer]->held) return fail(EINVAL, "streamer: layer " + std::to_string(layer) + " is not held");
    pinned_[layer]->held = false;
    return {};
  }
  Slot* s = slot_of(layer);
  if (s == nullptr || s->state != SlotState::kInUse) {
    return fail(EINVAL, "streamer: layer " + std::to_string(layer) + " is not held");
  }
  s->state = SlotState::kCached;
  s->released_seq = ++release_seq_;
  assign_slots();
  ready_cv_.notify_all();
  return {};
}

cxlpool_streamer_stats WeightStreamer::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace cxlpool::client
