// rdmactl serve: the agent. For now it answers other nodes' peer self-tests (the rdma_cm
// responder of agent/selftest/peer.h) in the foreground until SIGINT or SIGTERM; the spec watch
// loop and the HTTP API are to run beside it, which is why the responder lives outside this file.
//
// `--probe ADDR[:PORT]` is serve's diagnostic: it runs the peer self-test against another node's
// responder once, prints the result and exits, to check a responder (or this host's path to it)
// without the rest of the self-test.
#include <signal.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <iostream>

#include "agent/cli/common.h"
#include "agent/platform/netlink.h"
#include "agent/selftest/peer.h"

namespace rdmactl::cli {
namespace {

struct ServeOptions {
  std::string rdma_listen = "0.0.0.0";
  std::string probe;
  std::string source;
  int timeout_ms = 10000;
  std::string format = "text";
};

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

// Without SA_RESTART, so that the responder's poll() returns at once on the signal.
void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::string render_peer_text(const SelftestResult& r) {
  std::string out = "peer " + r.peer + ": " + outcome_name(r.outcome);
  if (!r.device.empty()) {
    out += " via " + r.device + "/" + std::to_string(r.port);
    if (r.gid_index >= 0) out += " GID index " + std::to_string(r.gid_index) + " (" + r.gid + ")";
  }
  char figures[96];
  if (r.round_trip_us) {
    std::snprintf(figures, sizeof figures, ", round trip %.1f us", *r.round_trip_us);
    out += figures;
  }
  if (r.bandwidth_gbps) {
    std::snprintf(figures, sizeof figures, ", %.3f Gb/s", *r.bandwidth_gbps);
    out += figures;
  }
  return out + "\n  " + r.reason + "\n";
}

int run_probe(const ServeOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson});
  if (!format) return report_error(format.error());
  if (opts.timeout_ms <= 0) return report_error(make_error(ErrorKind::kUsage, "must be positive", "--timeout"));
  auto peer = parse_peer_address(opts.probe);
  if (!peer) return report_error(peer.error());
  PeerOptions options;
  options.port = peer->port;
  options.timeout = std::chrono::milliseconds(opts.timeout_ms);
  const SelftestResult result = run_peer_test(opts.probe, options, opts.source);
  if (*format == Format::kJson) {
    std::cout << to_json(result).dump(2) << "\n";
  } else {
    std::cout << render_peer_text(result);
  }
  std::cout << std::flush;
  return result.outcome == SelftestResult::Outcome::kPassed ? kExitOk : kExitFailed;
}

int run_serve(const GlobalOptions& global, const ServeOptions& opts) {
  if (!global.netns.empty()) {
    if (auto entered = enter_netns(global.netns); !entered) return report_error(entered.error());
  }
  if (!opts.probe.empty()) return run_probe(opts);
  auto listen = parse_peer_address(opts.rdma_listen);
  if (!listen) return report_error(listen.error());
  install_stop_handlers();
  auto responder = PeerResponder::listen(listen->host, listen->port);
  if (!responder) return report_error(responder.error());
  spdlog::info("answering rdma_cm self-test connections on {}", responder->listen_address());
  auto ran = responder->run_until(g_stop);
  if (!ran) return report_error(ran.error());
  spdlog::info("stopping: {} connection(s) closed", responder->connection_count());
  return kExitOk;
}

}  // namespace

void register_serve(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand("serve", "Run the agent: answer other nodes' peer self-tests (rdma_cm)");
  sub->add_option("--rdma-listen", opts->rdma_listen,
                  "ADDR[:PORT] to answer peer self-tests on (default 0.0.0.0:" + std::to_string(kDefaultPeerPort) +
                      ", every RDMA device)");
  auto* probe = sub->add_option("--probe", opts->probe,
                                "Diagnostic: run the peer self-test once against the responder at ADDR[:PORT], "
                                "print the result and exit (0 passed, 1 failed)");
  probe->group("Diagnostics");
  sub->add_option("--source", opts->source, "With --probe: the local address to connect from (default: the route's)")
      ->group("Diagnostics");
  sub->add_option("--timeout", opts->timeout_ms, "With --probe: milliseconds each step may take (default 10000)")
      ->group("Diagnostics");
  sub->add_option("--format", opts->format, "With --probe: text (default) or json")->group("Diagnostics");
  sub->footer(
      "Runs in the foreground until SIGINT or SIGTERM. Other nodes' peer self-tests connect with\n"
      "rdma_cm to port " + std::to_string(kDefaultPeerPort) + ", write a pattern into a buffer this node lends each\n"
      "connection, read it back and measure round trip and bandwidth (one-sided RDMA: no CPU here).\n\n"
      "Examples:\n"
      "  rdmactl serve                                  answer on every RDMA device\n"
      "  rdmactl serve --rdma-listen 192.168.100.11     only on the device with that address\n"
      "  rdmactl serve --probe 192.168.100.12 --format json   check another node's responder");
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_serve(global, *opts); }; });
}

}  // namespace rdmactl::cli
