// SPDX-License-Identifier: Apache-2.0
// cxlpool-tracegen: write a synthetic memory-access trace, or summarise one.
//
//   cxlpool-tracegen --workload zipf|shifting|sparse-kv|graph [--footprint 256M]
//                    [--accesses 4M] [--seed N] [--zipf-exponent X] ... -o FILE
//   cxlpool-tracegen --info FILE [--epoch 100ms] [--json]
//   cxlpool-tracegen --from-lackey FILE|- [--llc 1M] [--raw-output FILE]
//                    [--ns-per-instruction X] [--max-instructions N] -o FILE
//
// Exit codes: 0 success, 1 failure (bad trace, I/O), 2 usage error.
#include <CLI/CLI.hpp>
#include <cinttypes>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/common/units.hpp"
#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"
#include "lackey_import.hpp"
#include "llc_model.hpp"
#include "quantity.hpp"
#include "trace_summary.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

using cxlpool::tiering::WorkloadConfig;

int usage_error(const std::string& message) {
  std::fprintf(stderr, "cxlpool-tracegen: %s (see --help)\n", message.c_str());
  return kExitUsage;
}

int failure(const cxlpool::Error& error) {
  std::fprintf(stderr, "cxlpool-tracegen: %s\n", error.message.c_str());
  return kExitFailed;
}

struct GenerateArgs {
  std::string workload;
  std::string footprint = "256M";
  std::string accesses = "4M";
  std::string duration = "4s";
  std::string output;
};

int generate(const GenerateArgs& args, WorkloadConfig config) {
  const auto kind = cxlpool::tiering::parse_workload_kind(args.workload);
  if (!kind) return usage_error("unknown workload '" + args.workload + "' (zipf, shifting, sparse-kv, graph)");
  config.kind = *kind;
  auto footprint = cxlpool::parse_size(args.footprint);
  if (!footprint) return usage_error("--footprint: " + footprint.error().message);
  auto accesses = cxlpool::tracegen::parse_count(args.accesses);
  if (!accesses) return usage_error("--accesses: " + accesses.error().message);
  auto duration = cxlpool::tracegen::parse_duration_ns(args.duration);
  if (!duration) return usage_error("--duration: " + duration.error().message);
  config.footprint_bytes = *footprint;
  config.accesses = *accesses;
  config.duration_ns = *duration;
  if (auto ok = config.validate(); !ok) return usage_error(ok.error().message);

  auto stream = cxlpool::tiering::WorkloadStream::create(config);
  if (!stream) return failure(stream.error());
  auto writer = cxlpool::tiering::TraceWriter::create(args.output);
  if (!writer) return failure(writer.error());
  std::vector<cxlpool::tiering::TraceRecord> batch(65536);
  while (const std::size_t n = stream->next(batch)) {
    if (auto ok = writer->write(std::span(batch).first(n)); !ok) return failure(ok.error());
  }
  if (auto ok = writer->finish(); !ok) return failure(ok.error());
  std::printf("wrote %s: %s, %" PRIu64 " accesses over %s, seed %" PRIu64 "\n", args.output.c_str(),
              cxlpool::tiering::workload_kind_name(config.kind), config.accesses,
              cxlpool::format_size(config.footprint_bytes).c_str(), config.seed);
  return kExitOk;
}

struct LackeyArgs {
  std::string input;
  std::string llc = "0";
  std::uint32_t ways = 16;
  double ns_per_instruction = 1.0;
  std::string max_instructions = "0";
  std::string raw_output;
  std::string output;
};

// Streams records to a trace file in batches.
class BatchedWriter {
 public:
  explicit BatchedWriter(cxlpool::tiering::TraceWriter writer) : writer_(std::move(writer)) {}
  std::vector<cxlpool::tiering::TraceRecord>& buffer() { return buffer_; }
  cxlpool::Result<void> maybe_flush() { return buffer_.size() >= 65536 ? flush() : cxlpool::Result<void>{}; }
  cxlpool::Result<void> flush() {
    auto ok = writer_.write(buffer_);
    buffer_.clear();
    return ok;
  }
  cxlpool::Result<void> finish() {
    if (auto ok = flush(); !ok) return ok;
    return writer_.finish();
  }
  std::uint64_t records() const { return writer_.records_written() + buffer_.size(); }

 private:
  cxlpool::tiering::TraceWriter writer_;
  std::vector<cxlpool::tiering::TraceRecord> buffer_;
};

// Data accesses only: instruction fetches go to code pages, which a tiering
// policy does not place (file-backed, shared), and they count as time.
int import_lackey(const LackeyArgs& args) {
  auto llc_bytes = cxlpool::parse_size(args.llc);
  if (!llc_bytes) return usage_error("--llc: " + llc_bytes.error().message);
  auto max_instructions = cxlpool::tracegen::parse_count(args.max_instructions);
  if (!max_instructions) return usage_error("--max-instructions: " + max_instructions.error().message);
  if (!(args.ns_per_instruction > 0) || args.ns_per_instruction > 1e6)
    return usage_error("--ns-per-instruction must be in (0, 1e6]");
  std::optional<cxlpool::tracegen::LlcModel> llc;
  if (*llc_bytes) {
    auto m = cxlpool::tracegen::LlcModel::create(*llc_bytes, args.ways);
    if (!m) return usage_error("--llc: " + m.error().message);
    llc.emplace(std::move(*m));
  } else if (!args.raw_output.empty()) {
    return usage_error("--raw-output goes with --llc (without it, -o is the raw trace)");
  }
  std::FILE* in = args.input == "-" ? stdin : std::fopen(args.input.c_str(), "r");
  if (!in) return failure(cxlpool::Error{errno, "cannot open " + args.input + ": " + std::strerror(errno)});
  auto out = cxlpool::tiering::TraceWriter::create(args.output);
  if (!out) return failure(out.error());
  BatchedWriter main_out(std::move(*out));
  std::optional<BatchedWriter> raw_out;
  if (!args.raw_output.empty()) {
    auto w = cxlpool::tiering::TraceWriter::create(args.raw_output);
    if (!w) return failure(w.error());
    raw_out.emplace(std::move(*w));
  }
  std::uint64_t last_ns = 0;
  auto sink = [&](const cxlpool::tracegen::LackeyAccess& a) -> cxlpool::Result<void> {
    if (a.is_fetch) return {};
    last_ns = static_cast<std::uint64_t>(static_cast<double>(a.instruction) * args.ns_per_instruction);
    const cxlpool::tiering::TraceRecord r{last_ns, a.address, a.size, a.is_write};
    if (llc) {
      llc->access(a.address, a.size, a.is_write, last_ns, main_out.buffer());
      if (raw_out) {
        raw_out->buffer().push_back(r);
        if (auto ok = raw_out->maybe_flush(); !ok) return ok;
      }
    } else {
      main_out.buffer().push_back(r);
    }
    return main_out.maybe_flush();
  };
  auto stats = cxlpool::tracegen::read_lackey(in, *max_instructions, sink);
  if (in != stdin) std::fclose(in);
  if (!stats) return failure(stats.error());
  if (llc) llc->flush(last_ns, main_out.buffer());
  if (auto ok = main_out.finish(); !ok) return failure(ok.error());
  if (raw_out) {
    if (auto ok = raw_out->finish(); !ok) return failure(ok.error());
  }
  std::printf("read %" PRIu64 " instructions, %" PRIu64 " loads, %" PRIu64 " stores, %" PRIu64 " modifies%s\n",
              stats->instructions, stats->loads, stats->stores, stats->modifies,
              stats->stopped_early ? " (stopped at --max-instructions)" : "");
  if (llc)
    std::printf("cache %s %u-way: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " write-backs\n",
                cxlpool::format_size(*llc_bytes).c_str(), args.ways, llc->hits(), llc->misses(), llc->writebacks());
  std::printf("wrote %s: %" PRIu64 " records\n", args.output.c_str(), main_out.records());
  if (raw_out) std::printf("wrote %s: %" PRIu64 " records\n", args.raw_output.c_str(), raw_out->records());
  return kExitOk;
}

int info(const std::string& path, const std::string& epoch_text, bool as_json) {
  std::uint64_t epoch_ns = 0;
  if (!epoch_text.empty()) {
    auto e = cxlpool::tracegen::parse_duration_ns(epoch_text);
    if (!e) return usage_error("--epoch: " + e.error().message);
    if (*e == 0) return usage_error("--epoch must be above 0");
    epoch_ns = *e;
  }
  auto s = cxlpool::tracegen::summarize_trace(path, epoch_ns);
  if (!s) return failure(s.error());
  const auto& h = s->header;
  const double sparse = s->pages_touched ? static_cast<double>(s->sparse_pages) / static_cast<double>(s->pages_touched) : 0;
  if (as_json) {
    nlohmann::json j = {{"file", path},
                        {"version", h.version},
                        {"records", h.record_count},
                        {"writes", s->writes},
                        {"address_min", h.address_min},
                        {"address_end", h.address_end},
                        {"first_timestamp_ns", h.first_timestamp_ns},
                        {"last_timestamp_ns", h.last_timestamp_ns},
                        {"page_accesses", s->page_accesses},
                        {"pages_touched", s->pages_touched},
                        {"words_touched", s->words_touched},
                        {"sparse_pages", s->sparse_pages},
                        {"sparse_fraction", sparse},
                        {"top1_share", s->top1_share},
                        {"top1_sparse_fraction", s->top1_sparse_fraction}};
    if (epoch_ns) {
      j["epoch_ns"] = epoch_ns;
      j["epochs"] = s->epochs;
      j["mean_pages_per_epoch"] = s->mean_pages_per_epoch;
      j["epoch_sparse_fraction"] = s->epoch_sparse_fraction;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("file            %s\n", path.c_str());
  std::printf("format          version %u, %" PRIu64 " records (%" PRIu64 " writes)\n", h.version, h.record_count,
              s->writes);
  std::printf("addresses       [0x%" PRIx64 ", 0x%" PRIx64 ") %s\n", h.address_min, h.address_end,
              cxlpool::format_size(h.address_end - h.address_min).c_str());
  std::printf("time            %" PRIu64 " .. %" PRIu64 " ns (%.3f s)\n", h.first_timestamp_ns, h.last_timestamp_ns,
              static_cast<double>(h.last_timestamp_ns - h.first_timestamp_ns) / 1e9);
  std::printf("pages touched   %" PRIu64 " (%s), words touched %" PRIu64 "\n", s->pages_touched,
              cxlpool::format_size(s->pages_touched * 4096).c_str(), s->words_touched);
  std::printf("sparse pages    %.1f%% (<= %d of 64 words, whole trace)\n", 100 * sparse, cxlpool::tracegen::kSparseMaxWords);
  std::printf("top-1%% pages     %.1f%% of page accesses, %.1f%% of them sparse\n", 100 * s->top1_share,
              100 * s->top1_sparse_fraction);
  if (epoch_ns) {
    std::printf("per epoch       %" PRIu64 " epochs of %.3f ms: %.0f pages each, %.1f%% sparse\n", s->epochs,
                static_cast<double>(epoch_ns) / 1e6, s->mean_pages_per_epoch, 100 * s->epoch_sparse_fraction);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpool-tracegen -- write synthetic memory-access traces, or summarise one"};
  app.set_version_flag("--version", "cxlpool-tracegen " CXLPOOL_VERSION_STRING);
  GenerateArgs gen;
  WorkloadConfig config;
  std::string info_path;
  std::string epoch;
  bool as_json = false;
  auto* info_opt = app.add_option("--info", info_path, "Summarise a trace file instead of writing one");
  app.add_option("--epoch", epoch, "With --info: also report per-epoch stats for epochs of this length (100ms, 1s)");
  app.add_flag("--json", as_json, "With --info: machine-readable output");
  auto* workload_opt = app.add_option("-w,--workload", gen.workload, "zipf | shifting | sparse-kv | graph");
  app.add_option("--footprint", gen.footprint, "Address space the trace covers (256M, 1G)")->capture_default_str();
  app.add_option("--accesses", gen.accesses, "Records to write (4M = 4,000,000)")->capture_default_str();
  app.add_option("--duration", gen.duration, "Trace time span (4s, 500ms)")->capture_default_str();
  app.add_option("--seed", config.seed, "Random seed: the same seed gives the same trace")->capture_default_str();
  app.add_option("--zipf-exponent", config.zipf_exponent, "Page / key popularity skew")->capture_default_str();
  app.add_option("--word-exponent", config.word_exponent, "zipf, shifting: skew over a page's words")
      ->capture_default_str();
  app.add_option("--write-fraction", config.write_fraction, "Share of writes")->capture_default_str();
  app.add_option("--phases", config.phases, "shifting: phases, each with a new hot set")->capture_default_str();
  app.add_option("--hot-fraction", config.hot_fraction, "shifting: share of pages in a phase's hot set")
      ->capture_default_str();
  app.add_option("--scan-interval", config.scan_interval, "sparse-kv: one bucket-sweep read every N requests (0: none)")
      ->capture_default_str();
  app.add_option("--graph-degree", config.graph_degree, "graph: mean out-degree")->capture_default_str();
  app.add_option("--base-address", config.base_address, "First address of the traced space (4 KiB aligned)")
      ->capture_default_str();
  LackeyArgs lackey;
  auto* lackey_opt = app.add_option("--from-lackey", lackey.input,
                                    "Convert valgrind lackey --trace-mem=yes output (a file, or - for stdin)");
  app.add_option("--llc", lackey.llc, "With --from-lackey: filter through a last-level cache of this size (1M); 0: raw")
      ->capture_default_str();
  app.add_option("--llc-ways", lackey.ways, "With --llc: associativity")->capture_default_str();
  app.add_option("--ns-per-instruction", lackey.ns_per_instruction, "With --from-lackey: trace time per instruction")
      ->capture_default_str();
  app.add_option("--max-instructions", lackey.max_instructions, "With --from-lackey: stop after this many (0: all)")
      ->capture_default_str();
  app.add_option("--raw-output", lackey.raw_output, "With --llc: also write the unfiltered trace here");
  auto* out_opt = app.add_option("-o,--output", gen.output, "Trace file to write");
  info_opt->excludes(workload_opt)->excludes(out_opt)->excludes(lackey_opt);
  lackey_opt->excludes(workload_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (!info_path.empty()) return info(info_path, epoch, as_json);
  if (!lackey.input.empty()) {
    if (gen.output.empty()) return usage_error("--from-lackey needs -o FILE");
    lackey.output = gen.output;
    return import_lackey(lackey);
  }
  if (gen.workload.empty() || gen.output.empty()) return usage_error("need --workload and -o FILE, or --info FILE");
  if (!epoch.empty() || as_json) return usage_error("--epoch and --json go with --info");
  return generate(gen, config);
}
