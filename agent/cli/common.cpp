// SPDX-License-Identifier: Apache-2.0
// Shared command plumbing.
#include "agent/cli/common.h"

#include <malloc.h>
#include <unistd.h>

#include <iostream>

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
