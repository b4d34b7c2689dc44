// SPDX-License-Identifier: Apache-2.0
#include "profiles.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <span>

#include "../job/option_table.hpp"
#include "../job/value_parsers.hpp"
#include "../trace/trace.hpp"
#include "profile_params.hpp"

namespace cxlpool::io {
namespace {

using Generator = std::function<void(ProfileParams&, JobText&)>;

struct Profile {
  ProfileInfo info;
  Generator generate;
};

// Where a profile reads and writes unless --set filename= says otherwise:
// /var/tmp is on a disk file system (O_DIRECT works), unlike /tmp on tmpfs.
std::string default_file(std::string_view profile) {
  return "/var/tmp/cxlpool-io-" + std::string(profile) + ".dat";
}

void global_section(JobText& t, std::string_view profile, std::string_view ioengine, bool direct) {
  t.section("global");
  t.set("filename", default_file(profile));
  t.set("ioengine", ioengine);
  t.set("direct", direct ? 1 : 0);
  t.set("group_reporting", 1);
}

// Reads of holes never reach the device; a first job writes what the
// readers will read.
void prefill(ProfileParams& p, JobText& t, std::uint64_t offset, std::uint64_t bytes) {
  if (!p.flag("prefill")) return;
  t.section("prefill");
  t.comment("writes the data the following jobs read");
  t.set("rw", "write");
  t.set_bytes("bs", std::min<std::uint64_t>(bytes, 1 << 20));
  t.set("iodepth", 8);
  t.set_bytes("offset", offset);
  t.set_bytes("size", bytes);
}

// The profile's [global] section, the prefill job when asked for, and the
// profile's own job, named after it and run after the prefill.
void main_job(ProfileParams& p, JobText& t, std::string_view profile, std::uint64_t bytes,
              std::initializer_list<std::string> comments) {
  global_section(t, profile, p.text("ioengine"), true);
  prefill(p, t, 0, bytes);
  t.section(profile);
  for (const auto& c : comments) t.comment(c);
  t.flag("stonewall");
}

// cxlpool-io (like fio) writes the missing part of a file a reader needs;
// a prefill job also rewrites an existing target that may hold holes.
const ProfileParam kPrefill{"prefill", "0", "1: rewrite the whole target first (one that may hold holes)"};
// The engine a profile's jobs use unless --set ioengine= says otherwise.
ProfileParam ioengine_param(std::string default_engine) { return {"ioengine", std::move(default_engine), "engine"}; }
// How long a time_based profile runs.
const ProfileParam kRuntime{"runtime", "30s", "run time"};

void weights_cold_load(ProfileParams& p, JobText& t) {
  const std::uint64_t size = p.size("size");
  const auto sizes = p.size_list("block_sizes");
  std::vector<std::uint64_t> depths;
  const std::string depth_list = p.text("iodepths");  // split() returns views into it
  for (auto part : split(depth_list, ':')) {
    auto n = parse_uint(part);
    p.check(n && *n >= 1 && *n <= 4096, "iodepths", "each depth must be between 1 and 4096");
    depths.push_back(n ? *n : 1);
  }
  global_section(t, "weights-cold-load", p.text("ioengine"), true);
  t.set("rw", "read");
  t.set_bytes("size", size);
  prefill(p, t, 0, size);
  for (auto bs : sizes) {
    p.check(bs <= size, "block_sizes", "a block size is larger than size");
    for (auto depth : depths) {
      t.section("load-bs" + size_text(bs) + "-qd" + std::to_string(depth));
      t.flag("stonewall");
      t.set_bytes("bs", bs);
      t.set("iodepth", depth);
    }
  }
}

struct LayerShape {
  std::uint64_t layers, layer_size, tokens, compute_us, request;
};

LayerShape layer_shape(ProfileParams& p) {
  LayerShape s{p.count("layers", 1, 1024), p.size("layer_size"), p.count("tokens", 1, 1000000),
               p.time_us("compute"), p.size("request")};
  p.check(s.layer_size % s.request == 0, "layer_size", "must be a multiple of request");
  return s;
}

void layer_stream(ProfileParams& p, JobText& t) {
  const LayerShape s = layer_shape(p);
  const std::uint64_t buffers = p.count("buffers", 1, 64);
  main_job(p, t, "layer-stream", s.layers * s.layer_size,
           {"each token reads every layer in order; the think time after a layer is its compute"});
  t.set("rw", "read");
  t.set_bytes("bs", s.request);
  t.set("iodepth", buffers);
  t.set_bytes("size", s.layers * s.layer_size);
  t.set_bytes("io_size", s.tokens * s.layers * s.layer_size);
  t.set_us("thinktime", s.compute_us);
  t.set("thinktime_blocks", s.layer_size / s.request);
}

void layer_stream_mmap(ProfileParams& p, JobText& t) {
  const LayerShape s = layer_shape(p);
  const std::uint64_t threads = p.count("threads", 1, 256);
  p.check(s.layer_size % (threads * s.request) == 0, "layer_size", "must be a multiple of threads x request");
  const std::uint64_t part = s.layer_size / threads;  // each thread faults in its slice of every layer
  const std::uint64_t total = s.layers * s.layer_size;
  global_section(t, "layer-stream-mmap", "mmap", false);
  prefill(p, t, 0, total);
  for (std::uint64_t i = 0; i < threads; ++i) {
    t.section("layer-stream-mmap-" + std::to_string(i));
    if (i == 0) t.flag("stonewall");
    t.set("rw", "read");
    t.set_bytes("bs", s.request);
    t.set_bytes("offset", i * (total / threads));
    t.set_bytes("size", total / threads);
    t.set_bytes("io_size", s.tokens * s.layers * part);
    t.set_us("thinktime", s.compute_us);
    t.set("thinktime_blocks", part / s.request);
  }
}

// A job appending one token's K and V per layer at a decode step's pace,
// `bytes` from `offset`.
void kv_append_job(JobText& t, std::uint64_t token_bytes, std::uint64_t offset, std::uint64_t bytes,
                   std::uint64_t step_us, std::uint64_t layers) {
  t.set("rw", "write");
  t.set_bytes("bs", token_bytes);
  t.set_bytes("offset", offset);
  t.set_bytes("size", bytes);
  t.set_us("thinktime", std::max<std::uint64_t>(1, step_us / layers));
  t.set("thinktime_blocks", 1);
}

void kv_writeback_decode(ProfileParams& p, JobText& t) {
  const std::uint64_t layers = p.count("layers", 1, 1024);
  const std::uint64_t token_bytes = p.size("token_bytes");
  const std::uint64_t steps = p.count("steps", 1, 10000000);
  const std::uint64_t step_us = p.time_us("step_time");
  const std::uint64_t sequences = p.count("sequences", 1, 1024);
  const std::uint64_t per_sequence = steps * layers * token_bytes;
  global_section(t, "kv-writeback-decode", p.text("ioengine"), true);
  t.comment("every decode step appends one token's K and V per layer, per sequence");
  for (std::uint64_t i = 0; i < sequences; ++i) {
    t.section("kv-append-seq" + std::to_string(i));
    kv_append_job(t, token_bytes, i * per_sequence, per_sequence, step_us, layers);
  }
}

void kv_decode_readall(ProfileParams& p, JobText& t) {
  const std::uint64_t context = p.count("context", 1, 10000000);
  const std::uint64_t token_bytes = p.size("token_bytes");
  const std::uint64_t layers = p.count("layers", 1, 1024);
  const std::uint64_t steps = p.count("steps", 1, 1000000);
  const std::uint64_t context_bytes = context * token_bytes;
  const std::uint64_t request = std::min(p.size("request"), context_bytes);
  const std::uint64_t reads = (context_bytes + request - 1) / request;  // per layer and step
  // One job mixes both directions the way a step does: `reads` requests for
  // the context of a layer, one write for its new token. fio mixes by
  // whole percent, so the ratio is the nearest one that keeps a write.
  const auto mix = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(std::llround(100.0 * static_cast<double>(reads) / static_cast<double>(reads + 1))), 1, 99);
  const double byte_ratio = static_cast<double>(mix * request) / static_cast<double>((100 - mix) * token_bytes);
  main_job(p, t, "kv-decode-readall", layers * context_bytes,
           {"per step and layer: read the whole context (" + std::to_string(reads) + " x " + size_text(request) +
                "), write one token (" + size_text(token_bytes) + ")",
            "read:write bytes = " + std::to_string(std::llround(byte_ratio)) + " (context length " +
                std::to_string(context) + ")"});
  t.set("rw", "rw");
  t.set("rwmixread", mix);
  t.set("bs", size_text(request) + "," + size_text(token_bytes));
  t.set("iodepth", p.count("iodepth", 1, 4096));
  t.set_bytes("size", layers * context_bytes);
  t.set_bytes("io_size", steps * layers * (context_bytes + token_bytes));
}

// The parameters prefix_fetch_job reads (and the store it reads from).
const ProfileParam kPrefixFetchParams[] = {
    {"store_size", "4g", "bytes of stored chunks"},
    {"chunk", "2m", "bytes per KV chunk"},
    {"theta", "1.2", "zipf skew"},
    {"iodepth", "4", "fetches in flight"},
};

void prefix_fetch_job(ProfileParams& p, JobText& t, std::string_view name, std::uint64_t store) {
  t.section(name);
  t.comment("popular prefixes are fetched far more often than the rest (zipf over chunks)");
  t.set("rw", "randread");
  t.set_bytes("bs", p.size("chunk"));
  t.set("random_distribution", "zipf:" + p.text("theta"));
  t.flag("norandommap");
  t.set("iodepth", p.count("iodepth", 1, 4096));
  t.set_bytes("size", store);
  t.flag("time_based");
  t.set_us("runtime", p.time_us("runtime"));
  t.set("percentile_list", "50:90:99:99.9:99.99");
}

void kv_prefix_fetch(ProfileParams& p, JobText& t) {
  const std::uint64_t store = p.size("store_size");
  p.real("theta", 0, 100);
  p.check(p.text("theta") != "1" && p.text("theta") != "1.0", "theta", "zipf theta must not be 1");
  p.check(p.size("chunk") <= store, "chunk", "larger than store_size");
  global_section(t, "kv-prefix-fetch", p.text("ioengine"), true);
  prefill(p, t, 0, store);
  prefix_fetch_job(p, t, "kv-prefix-fetch", store);
  t.flag("stonewall");
}

void sparse_neuron_fetch(ProfileParams& p, JobText& t) {
  const std::uint64_t size = p.size("size");
  const std::uint64_t lo = p.size("min_request");
  const std::uint64_t hi = p.size("max_request");
  p.check(lo <= hi, "min_request", "larger than max_request");
  main_job(p, t, "sparse-neuron-fetch", size,
           {"bundled rows/columns of the activated neurons: small random reads at a high depth"});
  t.set("rw", "randread");
  t.set("bsrange", size_text(lo) + "-" + size_text(hi));
  t.flag("norandommap");
  t.set("iodepth", p.count("iodepth", 1, 4096));
  t.set("numjobs", p.count("threads", 1, 256));
  t.set_bytes("size", size);
  t.flag("time_based");
  t.set_us("runtime", p.time_us("runtime"));
}

void mixed_serve(ProfileParams& p, JobText& t) {
  const std::uint64_t store = p.size("store_size");
  const std::uint64_t token_bytes = p.size("token_bytes");
  const std::uint64_t layers = p.count("layers", 1, 1024);
  const std::uint64_t step_us = p.time_us("step_time");
  const std::uint64_t writeback = p.size("writeback_size");
  p.real("theta", 0, 100);
  global_section(t, "mixed-serve", p.text("ioengine"), true);
  prefill(p, t, 0, store);
  prefix_fetch_job(p, t, "prefix-fetch", store);
  t.flag("stonewall");
  t.section("kv-writeback");
  t.comment("new tokens' KV written behind the prefix store while fetches run");
  kv_append_job(t, token_bytes, store, writeback, step_us, layers);
  t.flag("time_based");
  t.set_us("runtime", p.time_us("runtime"));
}

void tensor_saveload(ProfileParams& p, JobText& t) {
  const auto sizes = p.size_list("sizes");
  const auto engines = p.word_list("engines");
  const std::uint64_t request = p.size("request");
  const std::uint64_t depth = p.count("iodepth", 1, 4096);
  for (const auto& e : engines) {
    p.check(e == "psync" || e == "libaio" || e == "io_uring" || e == "mmap", "engines",
            "each engine must be psync, libaio, io_uring or mmap");
  }
  global_section(t, "tensor-saveload", "psync", true);
  for (const auto& engine : engines) {
    for (auto size : sizes) {
      for (std::string_view dir : {"save", "load"}) {
        t.section(std::string(dir) + "-" + engine + "-" + size_text(size));
        t.flag("stonewall");
        t.set("ioengine", engine);
        if (engine == "mmap") t.set("direct", 0);
        t.set("rw", dir == "save" ? "write" : "read");
        t.set_bytes("bs", std::min(request, size));
        t.set("iodepth", engine == "psync" || engine == "mmap" ? 1 : depth);
        t.set_bytes("size", size);
      }
    }
  }
}

void trace_replay(ProfileParams& p, JobText& t) {
  const std::string trace = p.text("trace");
  p.check(!trace.empty(), "trace", "required: --set trace=PATH (a bpftrace block trace or a fio iolog)");
  const std::string format = p.text("format");
  p.check(is_trace_format(format) || format == "detect", "format", "must be bpftrace, fio-iolog or detect");
  global_section(t, "trace-replay", p.text("ioengine"), true);
  t.section("trace-replay");
  t.comment("replays the trace's reads and writes at their offsets (flushes and discards are counted, not issued)");
  t.set("rw", "randrw");
  t.set("read_iolog", trace);
  if (format != "detect") t.set("trace_format", format);
  if (p.flag("no_stall")) t.flag("replay_no_stall");
  t.set("iodepth", p.count("iodepth", 1, 4096));
  t.set_bytes("size", p.size("size"));
}

const ProfileParam kLayerParams[] = {
    {"layers", "32", "transformer layers"},
    {"layer_size", "64m", "weight bytes per layer"},
    {"tokens", "4", "decode steps: each reads every layer once"},
    {"compute", "2000", "compute time per layer (think time; bare numbers are us)"},
    {"request", "1m", "bytes per read request"},
};

std::vector<ProfileParam> with(std::initializer_list<ProfileParam> own, std::span<const ProfileParam> more = {}) {
  std::vector<ProfileParam> out(own);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// Parameters shared with other profiles first, then the profile's own.
std::vector<ProfileParam> shared_then(std::span<const ProfileParam> shared, std::initializer_list<ProfileParam> own) {
  std::vector<ProfileParam> out(shared.begin(), shared.end());
  out.insert(out.end(), own);
  return out;
}

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> kProfiles = {
      {{"weights-cold-load", "load a model's weights: large sequential reads, 1-16 MiB requests at QD 8-64",
        "CHEOPS'25 (model offload reads of DeepSpeed ZeRO-Inference and FlexGen); DeepSpeed's libaio O_DIRECT "
        "loader (1 MiB, QD 8); BlitzScale/Medusa cold starts",
        with({{"size", "2g", "model file bytes"},
              {"block_sizes", "1m:4m:16m", "request sizes to sweep"},
              {"iodepths", "8:64", "queue depths to sweep"},
              ioengine_param("libaio"),
              kPrefill})},
       weights_cold_load},
      {{"layer-stream", "stream weights layer by layer for every token, compute as think time, 2-5 buffers in flight",
        "FlexGen and DeepSpeed ZeRO-Inference layer-wise weight offload (traced in CHEOPS'25); MoE-Lightning's "
        "double-buffered weight pages",
        with({{"buffers", "3", "reads in flight (prefetch buffers)"}, ioengine_param("libaio"), kPrefill},
             kLayerParams)},
       layer_stream},
      {{"layer-stream-mmap", "layer-stream through a memory-mapped weight file, 4 threads faulting pages",
        "FlexGen's memory-mapped weights; CHEOPS'25 (128 KiB block requests from readahead: record the queue "
        "limits)",
        with({{"threads", "4", "faulting threads, each a slice of every layer"}, kPrefill}, kLayerParams)},
       layer_stream_mmap},
      {{"kv-writeback-decode", "offload new KV during decode: one token per layer per step appended, per sequence",
        "CHEOPS'25 KV offload with FlexGen (writes are small: 11 MiB/s against 2.0 GiB/s of reads)",
        with({{"layers", "32", "layers"},
              {"token_bytes", "16k", "K+V bytes of one token in one layer (2 x kv_heads x head_dim x dtype)"},
              {"steps", "256", "decode steps"},
              {"step_time", "20000", "time of one decode step (bare numbers are us)"},
              {"sequences", "4", "sequences decoded at once, each appending to its own region"},
              ioengine_param("psync")})},
       kv_writeback_decode},
      {{"kv-decode-readall", "decode with offloaded KV: read the whole context per layer, write one token",
        "CHEOPS'25 KV offload with FlexGen: read-dominated, read:write = context length",
        with({{"context", "1024", "context tokens"},
              {"token_bytes", "16k", "K+V bytes of one token in one layer"},
              {"layers", "32", "layers"},
              {"steps", "8", "decode steps"},
              {"request", "1m", "read request bytes"},
              {"iodepth", "4", "requests in flight"},
              ioengine_param("libaio"),
              kPrefill})},
       kv_decode_readall},
      {{"kv-prefix-fetch", "fetch cached prompt-prefix KV chunks with zipf popularity; p99 per chunk",
        "prefix KV reuse from SSD in Mooncake (FAST'25), FlashGen (ASPLOS'25) and IMPRESS (FAST'25)",
        shared_then(kPrefixFetchParams, {kRuntime, ioengine_param("io_uring"), kPrefill})},
       kv_prefix_fetch},
      {{"sparse-neuron-fetch", "fetch activated neuron rows/columns: random 8-32 KiB reads at a high depth",
        "LLM in a flash (bundled rows/columns read from flash; throughput grows with request size and threads)",
        with({{"size", "4g", "bytes of FFN weights on flash"},
              {"min_request", "8k", "smallest read"},
              {"max_request", "32k", "largest read"},
              {"iodepth", "64", "reads in flight per thread"},
              {"threads", "2", "reading threads"},
              kRuntime,
              ioengine_param("io_uring"),
              kPrefill})},
       sparse_neuron_fetch},
      {{"mixed-serve", "a serving node: zipf prefix fetches while new KV is written back, concurrently",
        "Mooncake/FlashGen-style prefix reuse with write-back of new KV; CHEOPS'25's read-dominated mix",
        shared_then(kPrefixFetchParams,
                    {{"token_bytes", "16k", "K+V bytes of one token in one layer"},
                     {"layers", "32", "layers (one write per layer per step)"},
                     {"step_time", "20000", "decode step time (bare numbers are us)"},
                     {"writeback_size", "256m", "region the write-back appends to (wraps)"},
                     kRuntime,
                     ioengine_param("io_uring"),
                     kPrefill})},
       mixed_serve},
      {{"tensor-saveload", "save then load tensors of 1 MiB-4 GiB with each engine",
        "CHEOPS'25 (libaio beats POSIX for tensor loads and stores); DeepSpeed's libaio O_DIRECT tensor swapper "
        "(1 MiB, QD 8)",
        with({{"sizes", "1m:16m:256m:4g", "tensor sizes to sweep"},
              {"engines", "psync:libaio:io_uring", "engines to sweep"},
              {"request", "1m", "request bytes"},
              {"iodepth", "8", "requests in flight (async engines)"}})},
       tensor_saveload},
      {{"trace-replay", "replay a block trace (bpftrace block_rq_issue lines) or a fio iolog",
        "CHEOPS'25 method: trace the block layer under a real offloading run, replay it on your SSD",
        with({{"trace", "", "trace file (required)"},
              {"format", "detect", "bpftrace, fio-iolog or detect"},
              {"no_stall", "0", "1: ignore the trace's timing, issue as fast as possible"},
              {"iodepth", "32", "requests in flight"},
              {"size", "1g", "target bytes (must cover the trace's offsets)"},
              ioengine_param("libaio")})},
       trace_replay},
  };
  return kProfiles;
}

}  // namespace

const std::vector<ProfileInfo>& list_profiles() {
  static const std::vector<ProfileInfo> kInfos = [] {
    std::vector<ProfileInfo> out;
    for (const auto& p : profiles()) out.push_back(p.info);
    return out;
  }();
  return kInfos;
}

Result<std::string> profile_job_text(std::string_view name, const std::vector<std::string>& sets) {
  auto it = std::find_if(profiles().begin(), profiles().end(), [&](const Profile& p) { return p.info.name == name; });
  if (it == profiles().end()) {
    std::string names;
    for (const auto& p : profiles()) names += (names.empty() ? "" : ", ") + p.info.name;
    return fail(EINVAL, "unknown profile '" + std::string(name) + "' (" + names + ")");
  }
  const ProfileInfo& info = it->info;
  std::map<std::string, std::string, std::less<>> values;
  std::vector<std::string> job_overrides;
  for (const auto& set : sets) {
    auto eq = set.find('=');
    std::string key(trim(std::string_view(set).substr(0, eq)));
    bool is_param = std::any_of(info.params.begin(), info.params.end(),
                                [&](const ProfileParam& p) { return p.name == key; });
    if (is_param) {
      if (eq == std::string::npos) return fail(EINVAL, "profile " + info.name + ": parameter '" + key + "' needs =value");
      values[key] = std::string(trim(std::string_view(set).substr(eq + 1)));
      continue;
    }
    // Not a parameter: a job option, checked now so the message names --set.
    JobDraft scratch;
    std::optional<std::string_view> value;
    if (eq != std::string::npos) value = std::string_view(set).substr(eq + 1);
    if (auto r = apply_option(scratch, key, value, 0); !r) {
      return fail(EINVAL, "--set " + set + ": " + r.error().message + " (and not a parameter of profile " + info.name + ")");
    }
    job_overrides.push_back(set);
  }
  ProfileParams params(info, std::move(values));
  JobText text;
  text.comment("cxlpool-io profile " + info.name + ": " + info.description);
  text.comment("source: " + info.source);
  std::string settings;
  for (const auto& p : info.params) settings += " " + p.name + "=" + params.text(p.name);
  text.comment("parameters:" + settings);
  it->generate(params, text);
  if (params.error()) return tl::unexpected(*params.error());
  return text.render(job_overrides);
}

}  // namespace cxlpool::io
