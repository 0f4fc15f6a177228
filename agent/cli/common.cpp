// SPDX-License-Identifier: Apache-2.0
// Shared command plumbing.
#include "agent/cli/common.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>

#include "agent/cli/spec_cache.h"
#include "agent/core/json_text.h"
#include "agent/core/suggest.h"
#include "agent/core/text.h"
#include "agent/platform/host_fs.h"
#include "agent/platform/netlink.h"
#include "reconcilers/table.h"

namespace rdmactl::cli {

std::string node_name(const GlobalOptions& global, const std::string& fallback) {
  if (!global.node.empty()) return global.node;
  if (!fallback.empty()) return fallback;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

void keep_freed_memory_for_this_run() {
  // glibc maps every block over 128 KiB (its default threshold, raised only after such a block is
  // freed) afresh and returns the heap's top above 128 KiB: each growth of a large vector (the
  // link dump, the changes) costs fresh pages, and a page fault is dear on a virtual machine. A
  // run that ends in seconds keeps them: 15 % fewer page faults and 7 % less time for a plan of
  // 4,096 netdevs (perf stat, 8 runs each). Not for serve, which should give memory back.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

namespace {

// std::cout's buffer (capture_standard_output): written to descriptor 1 when full, at each flush and
// at the end; the first write error is kept, and what follows it is dropped.
class CommonStdoutBuffer : public std::streambuf {
 public:
  CommonStdoutBuffer() { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  // A large block (a plan of thousands of netdevs) goes out as it is, not through the buffer.
  std::streamsize xsputn(const char* text, std::streamsize n) override {
    if (n < epptr() - pptr()) {
      std::memcpy(pptr(), text, static_cast<std::size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!drain() || !write_all(text, static_cast<std::size_t>(n))) return 0;
    return n;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    setp(buffer_, buffer_ + sizeof buffer_);
    return write_all(buffer_, n);
  }
  bool write_all(const char* at, std::size_t n) {
    if (error_ != 0) return false;
    while (n > 0) {
      const ssize_t written = ::write(STDOUT_FILENO, at, n);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_ = written < 0 ? errno : EIO;
        return false;
      }
      at += written;
      n -= static_cast<std::size_t>(written);
    }
    return true;
  }

  char buffer_[64 * 1024];
  int error_ = 0;
};

CommonStdoutBuffer* common_stdout_buffer = nullptr;

}  // namespace

void capture_standard_output() {
  if (common_stdout_buffer != nullptr) return;
  // Never freed: std::cout is flushed once more when the program exits, after main's locals and
  // this file's statics may be gone.
  common_stdout_buffer = new CommonStdoutBuffer;
  std::cout.rdbuf(common_stdout_buffer);
  // On a terminal, each output at once, as stdio's line buffering showed it (selftest's progress).
  if (::isatty(STDOUT_FILENO) != 0) std::cout.setf(std::ios::unitbuf);
}

int finish_standard_output(int code) {
  std::cout.flush();
  int error = common_stdout_buffer != nullptr ? common_stdout_buffer->error() : 0;
  if (error == 0 && std::cout.bad()) error = EIO;  // without capture_standard_output: no errno kept
  // Anything written through stdio, and what closing the descriptor says (NFS reports a failed
  // write at close). A standard output that was closed to begin with is no error while nothing
  // was written to it (gnulib's close_stream).
  const bool stdio_failed = std::ferror(stdout) != 0;
  errno = 0;
  if (std::fclose(stdout) != 0 && error == 0 && (stdio_failed || errno != EBADF)) error = errno != 0 ? errno : EIO;
  if (error == 0 && stdio_failed) error = EIO;
  if (error == 0) return code;
  std::cerr << "rdmactl: cannot write to standard output: " << std::strerror(error) << "\n";
  return code == kExitOk ? kExitFailed : code;
}

Result<FabricSpec> load_spec_through_cache(const GlobalOptions& global, const std::string& path) {
  return load_spec_cached(path, HostFs(global.root).path(kSpecCacheDirectory));
}

Result<std::unique_ptr<Platform>> open_host(const GlobalOptions& global) {
  if (!global.netns.empty()) {
    if (auto entered = enter_netns(global.netns); !entered) return entered.error();
  }
  return std::make_unique<Platform>(HostFs(global.root));
}

Result<HostState> recorded_or_observed(const GlobalOptions& global, const std::string& state_file,
                                       const FabricSpec* spec, Engine* engine, NodeSpec* merged) {
  if (!state_file.empty()) {
    auto recorded = load_host_state(state_file);
    if (!recorded) {
      Error e = recorded.error();
      if (e.kind == ErrorKind::kInvalidSpec) e.kind = ErrorKind::kPlatform;
      return e;
    }
    recorded->node = node_name(global, recorded->node);
    if (spec && merged) *merged = merge_for_node(*spec, recorded->node);
    return recorded;
  }
  const std::string node = node_name(global);
  std::optional<NodeSpec> node_spec;
  if (spec) node_spec = merge_for_node(*spec, node);
  auto platform = open_host(global);
  if (!platform) return platform.error();
  Engine own(make_reconciler_table());
  auto state = (engine != nullptr ? *engine : own).observe(**platform, node_spec ? &*node_spec : nullptr, node);
  if (state && node_spec && merged) *merged = std::move(*node_spec);
  return state;
}

int print_spec_error(const Error& error) {
  // Messages carry names from the host and the command line: never a raw control byte on a terminal.
  for (const Diagnostic& d : error.diagnostics) std::cerr << escape_for_display(d.to_string()) << "\n";
  std::cerr << "rdmactl: " << escape_for_display(error.diagnostics.empty() ? error.to_string() : error.message) << "\n";
  return exit_code_for(error.kind);
}

nlohmann::json spec_error_json(const Error& error, const std::string& file) {
  const std::string shown = file == "-" ? "<stdin>" : file;
  nlohmann::json problems = nlohmann::json::array();
  for (const Diagnostic& d : error.diagnostics) {
    problems.push_back({{"file", d.file.empty() ? shown : d.file},
                        {"line", d.line},
                        {"column", d.column},
                        {"path", d.path},
                        {"message", d.message}});
  }
  if (error.diagnostics.empty()) {
    problems.push_back({{"file", shown}, {"line", 0}, {"column", 0}, {"path", ""}, {"message", error.to_string()}});
  }
  return {{"apiVersion", "rdmactl/v1"}, {"kind", "SpecError"}, {"file", shown}, {"valid", false}, {"problems", problems}};
}

int print_spec_error(const Error& error, Format format, const std::string& file) {
  if (format == Format::kJson || format == Format::kYaml) {
    const nlohmann::json doc = spec_error_json(error, file);
    std::cout << (format == Format::kJson ? json_text(doc, 2) + "\n" : json_to_yaml(doc)) << std::flush;
  } else if (format == Format::kJunit) {
    std::cout << render_spec_error_junit(spec_error_json(error, file)) << std::flush;
  }
  return print_spec_error(error);
}

int report_error(const Error& error) {
  std::cerr << "rdmactl: " << escape_for_display(error.to_string());
  if (error.kind == ErrorKind::kPermission) std::cerr << " (rdmactl needs root for this)";
  std::cerr << "\n";
  return exit_code_for(error.kind);
}

Result<Format> parse_format_for(const std::string& name, std::initializer_list<Format> allowed) {
  std::string names;
  for (Format f : allowed) {
    if (name == format_name(f)) return f;
    names += std::string(names.empty() ? "" : ", ") + format_name(f);
  }
  std::vector<std::string> offered;
  for (Format f : allowed) offered.emplace_back(format_name(f));
  return make_error(ErrorKind::kUsage, "unknown format \"" + name + "\" (" + names + ")" + did_you_mean(closest_words(name, offered)),
                    "--format");
}

int print_plan(const Report& report, Format format, const HostState* state) {
  std::cout << (format == Format::kProm ? render_prom(report, state) : render_report(report, format)) << std::flush;
  // The textfile collector's `plan --format prom > f.tmp && mv f.tmp f.prom` publishes only on exit
  // 0: metrics that were written carry the drift and the errors themselves.
  if (format == Format::kProm) return kExitOk;
  if (!report.errors.empty()) return kExitFailed;
  return report.changes.empty() ? kExitOk : kExitDrift;
}

}  // namespace rdmactl::cli
