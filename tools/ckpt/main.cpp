// SPDX-License-Identifier: Apache-2.0
// cxlpool-ckpt: checkpoints of processes without the daemon, for tests and
// operators.
//
//   cxlpool-ckpt dump PID IMAGE [--kill]   checkpoint PID into the new file IMAGE
//   cxlpool-ckpt show IMAGE [--json]       print an image's manifest
//
// Exit codes: 0 success, 1 failure (refused, unreadable image), 2 usage error.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/ckpt/image_reader.hpp"
#include "manifest_print.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

int failure(const cxlpool::Error& error) {
  std::fprintf(stderr, "cxlpool-ckpt: %s\n", error.message.c_str());
  return kExitFailed;
}

int dump(pid_t pid, const std::string& path, bool kill_after) {
  cxlpool::ckpt::CaptureOptions options;
  options.kill_after = kill_after;
  options.image_path = path;
  auto captured = cxlpool::ckpt::capture_to_image(pid, options);
  if (!captured) return failure(captured.error());
  const auto& manifest = captured->manifest;
  uint64_t pages = 0;
  for (const auto& run : manifest.runs) pages += run.pages;
  std::printf("checkpointed %d (%s): %zu threads, %zu vmas, %llu pages into %s%s\n", pid,
              manifest.process.comm.c_str(), manifest.threads.size(), manifest.vmas.size(),
              static_cast<unsigned long long>(pages), path.c_str(), kill_after ? "; killed it" : "");
  return kExitOk;
}

int show(const std::string& path, bool json) {
  auto image = cxlpool::ckpt::ImageReader::open(path);
  if (!image) return failure(image.error());
  if (json) {
    std::printf("%s\n", cxlpool::ckpt_tool::manifest_json(image->manifest()).dump(2).c_str());
  } else {
    std::fputs(cxlpool::ckpt_tool::manifest_text(image->manifest()).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpool-ckpt: checkpoint a process into an image file, or print an image's manifest"};
  app.set_version_flag("--version", "cxlpool-ckpt " CXLPOOL_VERSION_STRING);
  app.require_subcommand(1);
  pid_t pid = 0;
  std::string image;
  bool kill_after = false;
  bool json = false;
  auto* dump_cmd = app.add_subcommand("dump", "checkpoint a running process into a new image file (needs ptrace rights)");
  dump_cmd->add_option("PID", pid, "the process")->required();
  dump_cmd->add_option("IMAGE", image, "the image file to create (must not exist)")->required();
  dump_cmd->add_flag("--kill", kill_after, "kill the process once the image is complete instead of letting it run");
  auto* show_cmd = app.add_subcommand("show", "print the manifest of an image");
  show_cmd->add_option("IMAGE", image, "the image file")->required();
  show_cmd->add_flag("--json", json, "as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (*dump_cmd) return dump(pid, image, kill_after);
  return show(image, json);
}
