// SPDX-License-Identifier: Apache-2.0
// cxlpool-infer: a small Llama-like decoder served twice, once with plain
// process memory and once through libcxlpool's public API (shared weights
// and a layer streamer, KV in an arena, prefix reuse and preemption through
// the KV store), and checked for bitwise-identical logits. docs/infer.md.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cxlpool/common/crc32c.hpp"
#include "model_config.hpp"
#include "model_files.hpp"
#include "random_model.hpp"
#include "reference_run.hpp"
#include "scheduler.hpp"
#include "size_arg.hpp"
#include "workload.hpp"

namespace {

using namespace cxlpool::infer;
using Clock = std::chrono::steady_clock;

constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

struct Flags {
  ModelConfig model;
  WorkloadConfig workload;
  RuntimeOptions runtime;
  std::string memory_limit = "auto";
  std::string weights_budget = "0";
  std::string page_size = "64K";
  std::string model_dir;
  uint32_t files = 2;
  bool short_run = false;
  bool keep_files = false;
  bool reference_only = false;
  bool json = false;
  bool no_async = false;
  bool pause_warm = false;
};

// A digest of every request's logits and tokens: two runs decoded alike
// print the same one.
uint32_t logits_digest(const std::vector<Sequence>& requests) {
  uint32_t crc = 0;
  for (const Sequence& s : requests) {
    crc = cxlpool::crc32c(std::as_bytes(std::span(s.logits)), crc);
    crc = cxlpool::crc32c(std::as_bytes(std::span(s.generated)), crc);
  }
  return crc;
}

// Row bytes the arena maps for `tokens` tokens in every layer's K and V.
uint64_t row_bytes(const ModelConfig& m, uint64_t page, uint64_t tokens) {
  return uint64_t{m.layers} * 2 * ((tokens * m.kv_token_bytes() + page - 1) / page) * page;
}

// The default limit lets every request in at its prompt length but only
// about half of them grow to the end, so rows must be preempted and come
// back (when decoding crosses a page boundary at all).
uint64_t auto_memory_limit(const ModelConfig& m, const WorkloadConfig& w, uint64_t page) {
  const uint64_t start = row_bytes(m, page, w.prompt_len + 2);
  const uint64_t full = row_bytes(m, page, uint64_t{w.prompt_len} + w.decode_steps);
  if (full <= start) return uint64_t{w.requests} * full;
  return std::max<uint64_t>(full + start, w.requests * start + (w.requests / 2) * (full - start));
}

// Says "warm" and waits for a byte on stdin (a checkpoint is taken
// meanwhile); when it came.
Clock::time_point pause_warm() {
  std::printf("warm\n");
  std::fflush(stdout);
  char byte;
  while (::read(0, &byte, 1) < 0 && errno == EINTR) {
  }
  return Clock::now();
}

void print_failure(const Flags& f, const std::string& what, const cxlpool::Error& e) {
  if (f.json) {
    nlohmann::json j{{"ok", false}, {"error", what + ": " + e.message}};
    std::printf("%s\n", j.dump().c_str());
  }
  std::fprintf(stderr, "cxlpool-infer: %s: %s\n", what.c_str(), e.message.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"cxlpool-infer: serve a small transformer decoder through libcxlpool and check its logits "
               "against plain in-process buffers"};
  app.set_version_flag("--version", "cxlpool-infer " CXLPOOL_VERSION_STRING);
  app.add_option("--layers", f.model.layers, "decoder layers")->capture_default_str();
  app.add_option("--batch", f.workload.requests, "requests (arena rows)")->capture_default_str();
  app.add_option("--prompt-len", f.workload.prompt_len, "prompt tokens per request")->capture_default_str();
  app.add_option("--shared-prefix", f.workload.shared_prefix, "leading prompt tokens all requests share")
      ->capture_default_str();
  app.add_option("--decode-steps", f.workload.decode_steps, "tokens generated per request")->capture_default_str();
  app.add_option("--memory-limit", f.memory_limit,
                 "arena memory limit: a size (6M), 0 for none, or auto (about half the rows can grow)")
      ->capture_default_str();
  app.add_option("--socket", f.runtime.socket, "cxlpoold's control socket (default: the library's)");
  app.add_flag("--short", f.short_run, "a small, quick configuration (the README demo)");
  app.add_option("--seed", f.workload.seed, "weights and prompts")->capture_default_str();
  app.add_option("--chunk-tokens", f.runtime.chunk_tokens, "KV-store chunk size in tokens")->capture_default_str();
  app.add_option("--page-size", f.page_size, "arena page (>= 64K, a power of two)")->capture_default_str();
  app.add_option("--weights-budget", f.weights_budget,
                 "bytes of the model the daemon keeps resident (0: all); the rest is streamed from the files")
      ->capture_default_str();
  app.add_option("--stream-buffers", f.runtime.stream_buffers, "streamer window slots")->capture_default_str();
  app.add_option("--prefetch", f.runtime.prefetch_depth, "layers streamed ahead")->capture_default_str();
  app.add_option("--files", f.files, "safetensors files the model is split into")->capture_default_str();
  app.add_option("--model-dir", f.model_dir, "where to write the model (must be readable by cxlpoold; default: a temp dir)");
  app.add_flag("--keep-files", f.keep_files, "leave the model files in place");
  app.add_flag("--keep-cache", f.runtime.keep_cache, "leave the offloaded chunks in the KV store");
  app.add_flag("--no-async", f.no_async, "map with step() only (no step_async worker)");
  app.add_flag("--reference-only", f.reference_only, "run the plain-buffer path only (no daemon)");
  app.add_flag("--json", f.json, "print the summary as one JSON object");
  app.add_flag("--pause-warm", f.pause_warm,
               "once the prompts are prefilled (with --reference-only; else the runtime path's first requests, the "
               "KV store's session closed), print \"warm\" and wait for a byte on stdin (the point to checkpoint "
               "the warm worker at, docs/ckpt.md)");
  app.add_flag("--keep-model", f.runtime.keep_model,
               "leave the model loaded in cxlpoold at the end (clones of a checkpoint open it by name)");
  CLI11_PARSE(app, argc, argv);

  if (f.short_run) {
    // Rows cross a 64 KiB page (256 tokens) while decoding, so the default
    // limit still forces a preemption, and the streamer's window holds fewer
    // layers than the model has; small enough for a demo.
    if (app.count("--layers") == 0) f.model.layers = 3;
    if (app.count("--stream-buffers") == 0) f.runtime.stream_buffers = 2;
    if (app.count("--prefetch") == 0) f.runtime.prefetch_depth = 1;
    if (app.count("--batch") == 0) f.workload.requests = 4;
    if (app.count("--prompt-len") == 0) f.workload.prompt_len = 240;
    if (app.count("--shared-prefix") == 0) f.workload.shared_prefix = 192;
    if (app.count("--decode-steps") == 0) f.workload.decode_steps = 24;
  }
  if (auto v = validate(f.model); !v) {
    print_failure(f, "config", v.error());
    return kExitError;
  }
  const auto page = parse_size(f.page_size);
  const auto budget = parse_size(f.weights_budget);
  if (!page || !budget) {
    std::fprintf(stderr, "cxlpool-infer: bad size in --page-size or --weights-budget\n");
    return kExitError;
  }
  const WorkloadConfig& w = f.workload;
  if (w.requests == 0 || w.prompt_len == 0 || f.runtime.chunk_tokens == 0) {
    std::fprintf(stderr, "cxlpool-infer: --batch, --prompt-len and --chunk-tokens must be positive\n");
    return kExitError;
  }
  if (f.files == 0 || f.files > f.model.layers) f.files = 1;
  f.runtime.page_bytes = *page;
  f.runtime.weights_resident_bytes = *budget;
  f.runtime.async_step = !f.no_async;
  if (f.memory_limit == "auto") {
    f.runtime.memory_limit_bytes = auto_memory_limit(f.model, w, *page);
  } else if (auto limit = parse_size(f.memory_limit)) {
    f.runtime.memory_limit_bytes = *limit;
  } else {
    std::fprintf(stderr, "cxlpool-infer: bad --memory-limit '%s'\n", f.memory_limit.c_str());
    return kExitError;
  }
  const uint32_t max_context = w.prompt_len + w.decode_steps;

  // The model, written as safetensors files.
  std::string dir = f.model_dir;
  bool made_dir = false;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/cxlpool-infer-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("cxlpool-infer: mkdtemp");
      return kExitError;
    }
    ::chmod(templ.c_str(), 0755);  // the daemon reads the files
    dir = templ;
    made_dir = true;
  }
  dir = std::filesystem::absolute(dir).string();
  auto t0 = Clock::now();
  const auto tensors = generate_model(f.model, w.seed);
  auto paths = write_model_files(f.model, tensors, dir, f.files);
  if (!paths) {
    print_failure(f, "writing the model", paths.error());
    return kExitError;
  }
  uint64_t model_bytes = 0;
  for (const HostTensor& t : tensors) model_bytes += t.data.size() * sizeof(float);
  const double write_s = seconds_since(t0);
  auto remove_files = [&] {
    if (f.keep_files) return;
    for (const std::string& p : *paths) ::unlink(p.c_str());
    if (made_dir) ::rmdir(dir.c_str());
  };

  // (1) Reference: the files read into private buffers.
  t0 = Clock::now();
  Clock::time_point resumed = t0;
  double first_token_ms = 0;
  ReferenceHooks hooks;
  hooks.after_first_token = [&] {
    first_token_ms = std::chrono::duration<double, std::milli>(Clock::now() - resumed).count();
  };
  if (f.pause_warm && f.reference_only)
    hooks.after_prefill = [&] {
      resumed = pause_warm();
    };
  std::vector<Sequence> expected = make_requests(w, f.model.vocab);
  {
    auto plain = read_model_files(f.model, *paths);
    if (!plain) {
      print_failure(f, "reading the model", plain.error());
      remove_files();
      return kExitError;
    }
    auto source = PlainWeights::create(f.model, *plain);
    if (!source) {
      print_failure(f, "reference weights", source.error());
      remove_files();
      return kExitError;
    }
    if (auto r = run_reference(f.model, *source, expected, w.decode_steps, hooks); !r) {
      print_failure(f, "reference run", r.error());
      remove_files();
      return kExitError;
    }
  }
  const double reference_s = seconds_since(t0);

  nlohmann::json j;
  j["model"] = {{"layers", f.model.layers}, {"d_model", f.model.d_model}, {"heads", f.model.n_heads},
                {"kv_heads", f.model.n_kv_heads}, {"head_dim", f.model.head_dim}, {"vocab", f.model.vocab},
                {"bytes", model_bytes}, {"files", paths->size()}};
  j["workload"] = {{"requests", w.requests}, {"prompt_len", w.prompt_len}, {"shared_prefix", w.shared_prefix},
                   {"decode_steps", w.decode_steps}, {"chunk_tokens", f.runtime.chunk_tokens}};
  j["reference_s"] = reference_s;
  j["logits_crc32c"] = logits_digest(expected);
  // From reading the model (or from the resume after --pause-warm) to the
  // first decoded token.
  j["first_token_ms"] = first_token_ms;
  if (!f.json) {
    std::printf("cxlpool-infer: %u layers, d_model %u, %u query / %u KV heads x %u, vocab %u, f32: %.1f MiB in %zu "
                "safetensors file(s) (written in %.2f s)\n",
                f.model.layers, f.model.d_model, f.model.n_heads, f.model.n_kv_heads, f.model.head_dim,
                f.model.vocab, mib(model_bytes), paths->size(), write_s);
    std::printf("workload: %u requests, %u-token prompts (%u shared), %u decode steps, KV chunks of %u tokens\n",
                w.requests, w.prompt_len, std::min(w.shared_prefix, w.prompt_len), w.decode_steps,
                f.runtime.chunk_tokens);
    std::printf("reference (plain buffers): %.2f s\n", reference_s);
    std::printf("logits digest %08x, first token %.3f ms after %s\n", logits_digest(expected), first_token_ms,
                f.pause_warm && f.reference_only ? "the resume" : "reading the model");
  }
  if (f.reference_only) {
    remove_files();
    if (f.json) {
      j["ok"] = true;
      std::printf("%s\n", j.dump().c_str());
    }
    return 0;
  }

  // (2) The same requests through libcxlpool.
  f.runtime.model_paths = *paths;
  f.runtime.model_name = "cxlpool-infer-" + std::to_string(::getpid());
  f.runtime.namespace_id = "cxlpool-infer/L" + std::to_string(f.model.layers) + "-d" + std::to_string(f.model.d_model) +
                           "-h" + std::to_string(f.model.n_heads) + "-kv" + std::to_string(f.model.n_kv_heads) +
                           "-hd" + std::to_string(f.model.head_dim) + "-v" + std::to_string(f.model.vocab) +
                           "/seed" + std::to_string(w.seed);
  t0 = Clock::now();
  std::vector<Sequence> actual = make_requests(w, f.model.vocab);
  RuntimeSummary summary;
  uint64_t resident_bytes = 0;
  Clock::time_point runtime_resumed = t0;
  double runtime_first_token_ms = 0;
  {
    RuntimeSession session;
    if (auto r = open_session(session, f.model, f.runtime, w.requests, max_context); !r) {
      print_failure(f, "runtime setup", r.error());
      (void)session.close(f.runtime);
      remove_files();
      return kExitError;
    }
    resident_bytes = session.resident_bytes;
    Scheduler scheduler(f.model, session, *session.weight_source, *session.kv_cache, f.runtime, actual, w.decode_steps,
                        max_context);
    RuntimeHooks runtime_hooks;
    runtime_hooks.after_first_token = [&] {
      runtime_first_token_ms = std::chrono::duration<double, std::milli>(Clock::now() - runtime_resumed).count();
    };
    if (f.pause_warm && !f.reference_only)
      runtime_hooks.warm = [&]() -> cxlpool::Result<void> {
        close_kv(session);
        runtime_resumed = pause_warm();
        return open_kv(session, f.runtime);
      };
    scheduler.set_hooks(std::move(runtime_hooks));
    auto r = scheduler.run();
    summary = scheduler.summary();
    auto closed = session.close(f.runtime);
    if (!r) {
      print_failure(f, "runtime run", r.error());
      remove_files();
      return kExitError;
    }
    if (!closed) {
      print_failure(f, "runtime teardown", closed.error());
      remove_files();
      return kExitError;
    }
  }
  const double runtime_s = seconds_since(t0);
  remove_files();

  const std::string diff = compare_logits(expected, actual, f.model.vocab);
  const uint64_t streamed = summary.streamer.bytes_copied + summary.streamer.bytes_read;
  const cxlpool_kv_arena_stats& a = summary.arena;
  j["runtime_s"] = runtime_s;
  j["runtime_logits_crc32c"] = logits_digest(actual);
  // From opening the runtime session (or from the resume after
  // --pause-warm) to the first decoded token.
  j["runtime_first_token_ms"] = runtime_first_token_ms;
  j["memory_limit_bytes"] = f.runtime.memory_limit_bytes;
  j["prompt_tokens"] = summary.prompt_tokens;
  j["prefix_tokens_reused"] = summary.prefix_tokens_reused;
  j["prompt_tokens_computed"] = summary.prompt_tokens_computed;
  j["rows_preempted"] = summary.rows_preempted;
  j["rows_restored"] = summary.rows_resumed;
  j["tokens_restored"] = summary.tokens_restored;
  j["tokens_recomputed"] = summary.tokens_recomputed;
  j["offloads"] = summary.offloads;
  j["max_active_rows"] = summary.max_active_rows;
  j["decode_steps_run"] = summary.decode_steps;
  j["weights"] = {{"resident_bytes", resident_bytes},
                  {"bytes_streamed", streamed},
                  {"bytes_copied", summary.streamer.bytes_copied},
                  {"bytes_read_from_files", summary.streamer.bytes_read},
                  {"layers_copied", summary.streamer.layers_copied},
                  {"layers_read", summary.streamer.layers_read},
                  {"acquire_wait_ns", summary.streamer.wait_ns_total}};
  j["arena"] = {{"peak_mapped_bytes", summary.peak_mapped_bytes}, {"maps", a.maps}, {"unmaps", a.unmaps},
                {"reuses", a.reuses}, {"steps", a.steps}, {"async_steps", a.async_steps},
                {"step_ns_total", a.step_ns_total}, {"map_ns_total", a.map_ns_total}};
  j["chunks_deleted"] = summary.chunks_deleted;
  j["identical"] = diff.empty();
  j["ok"] = diff.empty();
  if (!diff.empty()) j["diff"] = diff;

  if (f.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("runtime (libcxlpool): %.2f s\n", runtime_s);
    std::printf("  prefix tokens reused: %llu of %llu prompt tokens restored from the KV store (%llu prefilled)\n",
                static_cast<unsigned long long>(summary.prefix_tokens_reused),
                static_cast<unsigned long long>(summary.prompt_tokens),
                static_cast<unsigned long long>(summary.prompt_tokens_computed));
    std::printf("  rows preempted: %llu, restored: %llu (%llu tokens restored, %llu recomputed) under a %.2f MiB "
                "arena limit (peak mapped %.2f MiB, %llu rows at most)\n",
                static_cast<unsigned long long>(summary.rows_preempted),
                static_cast<unsigned long long>(summary.rows_resumed),
                static_cast<unsigned long long>(summary.tokens_restored),
                static_cast<unsigned long long>(summary.tokens_recomputed), mib(f.runtime.memory_limit_bytes),
                mib(summary.peak_mapped_bytes), static_cast<unsigned long long>(summary.max_active_rows));
    std::printf("  weight bytes streamed: %.1f MiB (%llu layers from the shared region, %llu read from files; "
                "%.1f MiB resident)\n",
                mib(streamed), static_cast<unsigned long long>(summary.streamer.layers_copied),
                static_cast<unsigned long long>(summary.streamer.layers_read), mib(resident_bytes));
    std::printf("  kv arena: %llu maps, %llu unmaps, %llu page reuses, %llu steps (%llu async)\n",
                static_cast<unsigned long long>(a.maps), static_cast<unsigned long long>(a.unmaps),
                static_cast<unsigned long long>(a.reuses), static_cast<unsigned long long>(a.steps),
                static_cast<unsigned long long>(a.async_steps));
    if (diff.empty()) {
      std::printf("logits identical: %u requests x %u steps x %u logits\n", w.requests, w.decode_steps + 1,
                  f.model.vocab);
    } else {
      std::printf("logits DIFFER:\n%s", diff.c_str());
    }
  }
  return diff.empty() ? 0 : kExitMismatch;
}
