// SPDX-License-Identifier: Apache-2.0
// rdmactl selftest: the RDMA self-test alone (loopback per ACTIVE port, peer tests).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <variant>

#include "agent/cli/checked_node.h"
#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/selftest/run.h"

namespace rdmactl::cli {
namespace {

struct SelftestCommandOptions {
  std::string spec;
  std::vector<std::string> peers;
  std::string format = "text";
  std::optional<double> min_bandwidth_ratio;
  double duration_s = 2.0;
  bool allow_skip = false;
};

std::string subject(const SelftestResult& r) {
  if (r.test == "peer") return "peer " + r.peer;
  return r.test + " " + (r.device.empty() ? "?" : r.device) + "/" + std::to_string(r.port);
}

std::string summary_text(const SelftestReport& report) {
  return std::string("selftest ") + outcome_name(report.outcome) + ": " + report.reason + "\n";
}

int exit_code(const SelftestReport& report, bool allow_skip) {
  switch (report.outcome) {
    case SelftestResult::Outcome::kPassed: return kExitOk;
    case SelftestResult::Outcome::kFailed: return kExitFailed;
    case SelftestResult::Outcome::kSkipped: return allow_skip ? kExitOk : kExitFailed;
  }
  return kExitFailed;
}

int run_selftest_command(const GlobalOptions& global, const SelftestCommandOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson});
  if (!format) return report_error(format.error());
  auto checked = load_checked_node(global, opts.spec, "", *format);
  if (const int* failed = std::get_if<int>(&checked)) return *failed;
  const auto& [state, node_spec] = std::get<CheckedNode>(checked);

  SelftestOptions options;
  options.min_bandwidth_ratio = opts.min_bandwidth_ratio;
  options.peers = opts.peers;
  options.loopback.duration = std::chrono::milliseconds(static_cast<long long>(opts.duration_s * 1000));
  options.peer.bandwidth.duration = options.loopback.duration;

  // Text on a terminal is written as each test runs ("loopback mlx5_0/1 ... " first, the figures
  // when it ends); otherwise, with a terminal on stderr, progress goes there and the report, whole,
  // to stdout for whatever reads it.
  const bool stream = *format == Format::kText && ::isatty(STDOUT_FILENO) != 0;
  const bool progress_on_stderr = !stream && ::isatty(STDERR_FILENO) != 0;
  ProgressCallback progress;
  size_t streamed = 0;  // results already written to stdout, which come first in the report
  if (stream || progress_on_stderr) {
    std::ostream& out = stream ? std::cout : std::cerr;
    progress = [&out, &streamed, stream](const SelftestResult& r, bool finished) {
      if (finished) {
        out << result_text(r) << std::flush;
        if (stream) ++streamed;
      } else {
        out << subject(r) << " ... " << std::flush;
      }
    };
  }
  const SelftestReport report = run_selftest(state, node_spec ? &*node_spec : nullptr, options, progress);

  if (*format == Format::kJson) {
    const nlohmann::json out = {{"apiVersion", "rdmactl/v1"},
                                {"kind", "SelftestReport"},
                                {"node", state.node},
                                {"selftest", to_json(report)}};
    std::cout << json_text(out, 2) << "\n";
  } else {
    // Results that never ran (ports not ACTIVE, missing hardware) come last and had no progress line.
    for (size_t i = streamed; i < report.results.size(); ++i) {
      std::cout << subject(report.results[i]) << " ... " << result_text(report.results[i]);
    }
    std::cout << summary_text(report);
  }
  std::cout << std::flush;
  if (report.outcome == SelftestResult::Outcome::kSkipped && *format == Format::kJson) {
    std::cerr << "rdmactl: selftest skipped: " << report.reason << "\n";
  }
  return exit_code(report, opts.allow_skip);
}

}  // namespace

void register_selftest(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<SelftestCommandOptions>();
  CLI::App* sub = app.add_subcommand("selftest", "Prove RDMA works here: loopback bandwidth and latency per port, peer tests");
  sub->add_option("-f,--file", opts->spec,
                  "A spec: test the ports its interfaces name, with its selftest.minBandwidthRatio and peers")
      ->type_name("FILE");
  sub->add_option("--peer", opts->peers,
                  "Also test against this node's `rdmactl serve`, ADDR or ADDR:PORT (default port " +
                      std::to_string(kDefaultPeerPort) + "; repeatable)");
  sub->add_option("--format", opts->format, "text (default) or json")->type_name("text|json");
  sub->add_option("--min-bandwidth-ratio", opts->min_bandwidth_ratio,
                  "Pass mark as a fraction of the port's rate (default: the spec's, else 0.9)")
      ->check(CLI::Range(0.0, 1000.0));
  sub->add_option("--duration", opts->duration_s,
                  "Seconds of RDMA WRITEs for each bandwidth figure, loopback and peer (default 2; peer at most 60)")
      ->check(CLI::Range(0.01, 3600.0));
  sub->add_flag("--allow-skip", opts->allow_skip,
                "Exit 0 when there was nothing to test (no RDMA device, no ACTIVE port)");
  sub->footer(
      "Loopback, on every ACTIVE port (or those the spec's interfaces name): two RC queue pairs on the\n"
      "port connected to each other over its RoCE v2 GID of an IPv4 address (LID on InfiniBand), RDMA\n"
      "WRITE bandwidth as ib_write_bw measures it (64 KiB writes, 128 outstanding) and small-write\n"
      "ping-pong latency as ib_write_lat does (typical = median, average, p99). The bandwidth passes at\n"
      "minBandwidthRatio x the port's rate (InfiniBand SDR/DDR/QDR: of the 8b/10b data rate); a port\n"
      "with no known rate is skipped, not passed. Soft-RoCE (rxe) reports a rate far above what it can\n"
      "move: test it with a low ratio. The spec's selftest.enabled decides whether apply runs the\n"
      "self-test; this command runs it when asked.\n\n"
      "Traffic class: on RoCE each test sends on the class the spec gives the port, so that a broken\n"
      "lossless class fails: ToS = the interface's roce.tos (the roce-lossless profile: 106), else the\n"
      "observed rdma_cm default_roce_tos, else 0; the priority (sent as the SL) = qos.dscpToPriority of\n"
      "ToS >> 2 in the spec, else mlx5's default row (DSCP >> 3) under the spec's trust dscp, else the\n"
      "observed table, else 0. Each test reports it (trafficClass; \"class ToS 106 (DSCP 26, priority 3)\").\n\n"
      "Peers (selftest.peers, --peer ADDR[:PORT], port " + std::to_string(kDefaultPeerPort) + " by default): an rdma_cm connection\n"
      "to the other node's `rdmactl serve` with that ToS set (RDMA_OPTION_ID_TOS), a buffer written,\n"
      "read back and compared, round trip, then bandwidth measured and judged as the loopback's against\n"
      "the local port's rate, and the data it wrote read back and compared.\n\n"
      "Exit codes: 0 passed; 1 failed, or skipped (nothing to test: no RDMA device, no ACTIVE port)\n"
      "unless --allow-skip; 64 usage; 65 invalid spec.\n\n"
      "Examples:\n"
      "  rdmactl selftest\n"
      "  rdmactl selftest -f /etc/rdmactl/fabric.yaml --format json\n"
      "  rdmactl selftest --min-bandwidth-ratio 0.0001 --allow-skip     # Soft-RoCE in a VM, CI");
  sub->callback([opts, &global, &command] {
    command = [opts, &global] { return run_selftest_command(global, *opts); };
  });
}

}  // namespace rdmactl::cli
