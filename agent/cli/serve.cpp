// SPDX-License-Identifier: Apache-2.0
// rdmactl serve: the agent. With -f SPEC it keeps the host converged to the spec (agent/daemon/
// agent.h: start-up, spec file changes, a timer and POST /v1/reconcile each ask for a full
// reconcile), serves the HTTP API (agent/daemon/http_api.h) and answers other nodes' peer
// self-tests (the rdma_cm responder of agent/selftest/peer.h), each on its own thread, until
// SIGINT or SIGTERM. Without -f it is only the responder.
//
// `--probe ADDR[:PORT]` is serve's diagnostic: it runs the peer self-test against another node's
// responder once, prints the result and exits, to check a responder (or this host's path to it)
// without the rest of the self-test. It observes this host first, as the self-test does, for the
// local port's rate (the bandwidth mark) and class (the ToS it connects with); without a spec the
// class is the observed rdma_cm default, which apply set from the spec's roce.tos.
#include <pthread.h>
#include <signal.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "agent/platform/ethtool_stats.h"
#include "agent/cli/common.h"
#include "agent/daemon/fabric_monitor.h"
#include "agent/core/json_text.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/http_api.h"
#include "agent/daemon/live_host.h"
#include "agent/platform/netlink.h"
#include "agent/safety/session.h"
#include "agent/selftest/run.h"
#include "agent/selftest/verdict.h"

namespace rdmactl::cli {
namespace {

struct ServeOptions {
  std::string rdma_listen = "0.0.0.0";
  std::string probe;
  std::string source;
  int timeout_ms = 10000;
  double min_bandwidth_ratio = kDefaultMinBandwidthRatio;
  double duration_s = 2.0;
  std::string format = "text";
  // The agent (with -f).
  std::string spec;
  std::string listen = std::string(kDefaultApiHost) + ":" + std::to_string(kDefaultApiPort);
  std::string token_file;
  std::string interval = "10m";
  std::string fabric_interval;  // empty: no fabric scan
  std::string fabric_timeout;   // empty: kDefaultFabricScanTimeout, or the interval when shorter
  bool dry_run = false;
  bool allow_firmware = false;
  bool no_rdma_responder = false;
  bool no_link_events = false;
  bool insecure = false;
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
  // Only the responder: nothing to reload, and a closed terminal must not stop it.
  signal(SIGHUP, SIG_IGN);
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
    if (r.expected_gbps) out += " (expected >= " + format_gbps(*r.expected_gbps) + ")";
  }
  if (r.traffic_class) out += ", on " + describe(*r.traffic_class);
  return out + "\n  " + r.reason + "\n";
}

// The process is already in --netns (run_serve entered it).
int run_probe(const GlobalOptions& global, const ServeOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson});
  if (!format) return report_error(format.error());
  if (opts.timeout_ms <= 0) return report_error(make_error(ErrorKind::kUsage, "must be positive", "--timeout"));
  auto peer = parse_peer_address(opts.probe);
  if (!peer) return report_error(peer.error());
  PeerOptions options;
  options.port = peer->port;
  options.timeout = std::chrono::milliseconds(opts.timeout_ms);
  options.min_bandwidth_ratio = opts.min_bandwidth_ratio;
  options.bandwidth.duration = std::chrono::milliseconds(static_cast<long long>(opts.duration_s * 1000));
  if (global.root != "/") {
    spdlog::warn("--root {}: not observing this host's ports; the bandwidth has no mark and the ToS is 0", global.root);
  } else {
    GlobalOptions here = global;
    here.netns.clear();
    if (auto state = recorded_or_observed(here, "", nullptr); state) {
      options.local_ports = peer_local_ports(*state, nullptr);
    } else {
      spdlog::warn("observing this host's ports: {}; the bandwidth has no mark and the ToS is 0",
                   state.error().to_string());
    }
  }
  const SelftestResult result = run_peer_test(opts.probe, options, opts.source);
  if (*format == Format::kJson) {
    std::cout << json_text(to_json(result), 2) << "\n";
  } else {
    std::cout << render_peer_text(result);
  }
  std::cout << std::flush;
  return result.outcome == SelftestResult::Outcome::kPassed ? kExitOk : kExitFailed;
}

// The HTTP API's address and token, as --listen, --insecure and --token-file give them.
Result<ApiSettings> api_settings_of(const ServeOptions& opts) {
  auto listen = parse_listen_address(opts.listen);
  if (!listen) return listen.error();
  // The API has no TLS and its GET endpoints no token: beyond this host, only when asked for.
  if (!is_loopback_host(listen->host)) {
    const std::string why = "\"" + listen->host + "\" is not a loopback address: the HTTP API (no TLS; /v1/state and "
                            "/v1/status need no token) would answer the network";
    if (!opts.insecure) {
      return make_error(ErrorKind::kUsage, why + "; listen on 127.0.0.1, or add --insecure (and a firewall)",
                        "--listen");
    }
    spdlog::warn("--listen {}: {} (accepted: --insecure)", opts.listen, why);
  }
  ApiSettings api_settings;
  api_settings.listen = *listen;
  if (!opts.token_file.empty()) {
    auto token = read_token_file(opts.token_file, opts.insecure);
    if (!token) return token.error();
    api_settings.token = std::move(*token);
  }
  return api_settings;
}

// Every thread started after this inherits the mask, so SIGINT and SIGTERM reach only sigwait in
// run_agent: no handler races the threads, and no thread's system call sees EINTR.
sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// --fabric-interval: the fabric scan, and its metrics appended to the agent's /metrics.
Result<void> add_fabric_monitor(const ServeOptions& opts, std::optional<FabricMonitor>& fabric_monitor,
                                AgentSettings& settings) {
  if (!opts.fabric_interval.empty()) {
    auto every = parse_duration(opts.fabric_interval);
    if (!every) return Error{every.error().kind, every.error().message, "--fabric-interval"};
    if (*every < std::chrono::seconds(10)) {
      return make_error(ErrorKind::kUsage,
                        "\"" + opts.fabric_interval + "\" is shorter than 10s: a fabric scan sends MADs to "
                        "every port of the subnet",
                        "--fabric-interval");
    }
    // A scan of a 1,192-node subnet takes 0.6 s; one still running after a minute is stalled (a
    // fabric that stopped answering, a hung libibumad) and is killed.
    constexpr std::chrono::seconds kDefaultFabricScanTimeout{60};
    std::chrono::milliseconds deadline = std::min<std::chrono::milliseconds>(kDefaultFabricScanTimeout, *every);
    if (!opts.fabric_timeout.empty()) {
      auto timeout = parse_duration(opts.fabric_timeout);
      if (!timeout) return Error{timeout.error().kind, timeout.error().message, "--fabric-timeout"};
      if (*timeout < std::chrono::seconds(1) || *timeout > *every) {
        return make_error(ErrorKind::kUsage,
                          "\"" + opts.fabric_timeout + "\": a scan's timeout is at least 1s and at most the "
                          "--fabric-interval (" + opts.fabric_interval + ")",
                          "--fabric-timeout");
      }
      deadline = *timeout;
    }
    FabricMonitorSettings monitor;
    monitor.interval = *every;
    monitor.deadline = deadline;
    monitor.spec_path = opts.spec;
    fabric_monitor.emplace(std::move(monitor));
    settings.extra_metrics = [&fabric_monitor] { return fabric_monitor->metrics(); };
  }
  return ok();
}

// A host without RDMA devices is still configured: a responder that cannot listen is a warning.
std::optional<PeerResponder> open_responder(const ServeOptions& opts, const PeerAddress& rdma_listen) {
  std::optional<PeerResponder> responder;
  if (!opts.no_rdma_responder) {
    auto listening = PeerResponder::listen(rdma_listen.host, rdma_listen.port);
    if (listening) {
      responder.emplace(std::move(*listening));
    } else {
      spdlog::warn("not answering peer self-tests: {}", listening.error().to_string());
    }
  }
  return responder;
}

// SIGHUP, as daemons take it: read the spec again (a reconcile), never stop. Returns the signal
// that stops.
int wait_for_stop_signal(const sigset_t& stop_signals, Agent& agent) {
  int signal = 0;
  for (;;) {
    sigwait(&stop_signals, &signal);
    if (signal != SIGHUP) {
      // A reconcile in progress stops at its next step and rolls back, as apply does on a signal:
      // a service stop is never followed by a new write, nor a burn by an adapter reset.
      interrupt_signal().store(signal);
      break;
    }
    spdlog::info("SIGHUP: reading the spec again");
    agent.request_reconcile("SIGHUP");
  }
  return signal;
}

// The agent: loop, HTTP API and (unless turned off) the responder, until SIGINT or SIGTERM.
int run_agent(const GlobalOptions& global, const ServeOptions& opts, const PeerAddress& rdma_listen) {
  auto interval = parse_duration(opts.interval);
  if (!interval) return report_error(Error{interval.error().kind, interval.error().message, "--interval"});
  // The timer is the fallback to inotify and netlink events: a reconcile observes the whole host,
  // and one every few milliseconds would be a busy loop.
  constexpr std::chrono::seconds kMinInterval{1};
  if (*interval < kMinInterval) {
    return report_error(make_error(ErrorKind::kUsage, "\"" + opts.interval + "\" is shorter than 1s, the shortest interval",
                                   "--interval"));
  }
  auto api_settings = api_settings_of(opts);
  if (!api_settings) return report_error(api_settings.error());

  const sigset_t stop_signals = block_stop_signals();

  AgentSettings settings;
  settings.spec_path = opts.spec;
  settings.node = node_name(global);
  settings.interval = *interval;
  settings.dry_run = opts.dry_run;
  settings.watch_netlink = !opts.no_link_events;
  // The PFC, pause and discard counters of the RDMA Ethernet netdevs in /metrics, read at each
  // scrape (under the agent's status lock: one at a time) from this namespace's netdevs; not for a
  // fixture tree (--root), whose netdevs are not this host's.
  std::shared_ptr<EthtoolStats> counters;
  if (global.root == "/" || global.root.empty()) {
    if (auto stats = EthtoolStats::open()) counters = std::make_shared<EthtoolStats>(std::move(*stats));
  }
  if (counters) {
    settings.read_counters = [counters](const std::string& netdev) { return counters->read(EthtoolDevice{0, netdev}); };
  }
  std::optional<FabricMonitor> fabric_monitor;
  if (auto added = add_fabric_monitor(opts, fabric_monitor, settings); !added) return report_error(added.error());
  // The process is already in --netns: every thread and socket from here on is too.
  // The API's address, where a netdev carries it (not a wildcard, not loopback): a firmware reset
  // that takes that netdev down cuts the agent off (reconcilers/firmware, the management path).
  std::vector<std::string> served;
  if (const std::string& host = api_settings->listen.host;
      !is_loopback_host(host) && host != "0.0.0.0" && host != "::" && !host.empty()) {
    served.push_back(host);
  }
  Agent agent(settings, std::make_unique<LiveHost>(global.root, settings.node, opts.allow_firmware, std::move(served)));
  auto api = HttpApi::bind(agent, *api_settings);
  if (!api) return report_error(api.error());

  std::optional<PeerResponder> responder = open_responder(opts, rdma_listen);

  agent.start();
  if (fabric_monitor) {
    fabric_monitor->start();
    spdlog::info("scanning the InfiniBand fabric every {} (rdmactl_fabric_* in /metrics)", opts.fabric_interval);
  }
  (*api)->start();
  spdlog::info("agent for node {}: spec {}, {} every {} (and on change), HTTP API on {}:{}{}", settings.node,
               opts.spec, opts.dry_run ? "plan (dry run)" : "apply", opts.interval, api_settings->listen.host, (*api)->port(),
               api_settings->token ? "" : " (POST endpoints off: no --token-file)");
  std::thread responder_thread;
  if (responder) {
    spdlog::info("answering rdma_cm self-test connections on {}", responder->listen_address());
    responder_thread = std::thread([&responder] {
      if (auto ran = responder->run_until(g_stop); !ran) spdlog::error("peer responder: {}", ran.error().to_string());
    });
  }

  const int signal = wait_for_stop_signal(stop_signals, agent);
  spdlog::info("stopping on signal {}", signal);
  g_stop.store(true);
  (*api)->stop();
  agent.stop();
  if (fabric_monitor) fabric_monitor->stop();
  if (responder_thread.joinable()) responder_thread.join();
  return kExitOk;
}

int run_serve(const GlobalOptions& global, const ServeOptions& opts) {
  if (opts.spec == "-") {
    return report_error(make_error(ErrorKind::kUsage,
                                   "serve watches its spec file for changes: give a path (-f /etc/rdmactl/fabric.yaml), "
                                   "not - (standard input)"));
  }
  // First, while the process has one thread: entering a namespace unshares the mount namespace,
  // which a multi-threaded process may not do.
  if (!global.netns.empty()) {
    if (auto entered = enter_netns(global.netns); !entered) return report_error(entered.error());
  }
  if (!opts.probe.empty()) return run_probe(global, opts);
  auto listen = parse_peer_address(opts.rdma_listen);
  if (!listen) return report_error(listen.error());
  if (!opts.spec.empty()) return run_agent(global, opts, *listen);
  install_stop_handlers();
  auto responder = PeerResponder::listen(listen->host, listen->port);
  if (!responder) return report_error(responder.error());
  spdlog::info("answering rdma_cm self-test connections on {}", responder->listen_address());
  auto ran = responder->run_until(g_stop);
  if (!ran) return report_error(ran.error());
  spdlog::info("stopping: {} connection(s) closed", responder->connection_count());
  return kExitOk;
}

// serve --help's footer: the triggers, the HTTP API's endpoints, the responder, examples.
std::string serve_footer() {
  return
      "Runs in the foreground until SIGINT or SIGTERM (it stops within about a second; a reconcile in\n"
      "progress stops at its next step and rolls back, and a firmware burn in progress ends without a\n"
      "reset); SIGHUP reads the spec again (a reconcile), never stops it.\n\n"
      "With -f SPEC, serve is the agent: it reconciles at start-up, when the spec file changes (inotify\n"
      "on its directory: a rename, a ConfigMap's ..data swap, a git checkout; polled every 2 s too),\n"
      "when links or addresses of its namespace change (a netlink notification, debounced: drift made\n"
      "by hand is repaired at once; not after a failed reconcile), every --interval and on POST\n"
      "/v1/reconcile; each of those only asks for a full\n"
      "reconcile, and requests made meanwhile coalesce into one. An invalid spec is reported in\n"
      "/v1/status (file:line errors) and the last valid one stays in force. A spec file is read once it\n"
      "has stopped changing and no process has it open for writing. A reconcile that applies holds the host lock (as\n"
      "rdmactl apply; waiting up to 30 s for one to finish), first rolls back what a killed apply left in\n"
      "its journal, and audits each write as agent:<trigger>. An apply that was rolled back is\n"
      "\"degraded\" in /v1/status (with the reason) and rdmactl_degraded 1 in /metrics.\n\n"
      "The HTTP API (loopback only, unless --insecure):\n"
      "  GET  /healthz        200 while the process runs (liveness)\n"
      "  GET  /readyz         200 once the first reconcile finished, 503 before (readiness)\n"
      "  GET  /metrics        Prometheus: drift, self-test, rdmactl_reconciles_total, ...\n"
      "  GET  /v1/status      node, spec file and sha256, mode, last reconcile, errors (JSON)\n"
      "  GET  /v1/plan        a fresh plan against the host now (JSON report)\n"
      "  GET  /v1/state       the host as last observed (JSON)\n"
      "  POST /v1/reconcile   queue a reconcile (202)          Authorization: Bearer <token>\n"
      "  POST /v1/selftest    run the self-test now (JSON)     Authorization: Bearer <token>\n"
      "Other methods answer 405 (with Allow), request bodies over 64 KiB (any for GET) 413; slow or\n"
      "silent clients are cut off after a few seconds.\n\n"
      "Other nodes' peer self-tests connect with rdma_cm to port " + std::to_string(kDefaultPeerPort) +
      " (not perftest's 18515;\n"
      "--rdma-listen ADDR:PORT for another), write a pattern into the buffer this node lends each\n"
      "connection (" + std::to_string(kPeerBufferBytes >> 20) + " MiB; at most " + std::to_string(PeerResponder::kMaxConnections) +
      " connections at once), read it back and measure round trip and\n"
      "bandwidth (one-sided RDMA: no CPU here). The connection takes ToS and SL from the client's\n"
      "request. --probe observes this host first, for the local port's rate and traffic class, and\n"
      "judges the bandwidth as the self-test does: that rate x --min-bandwidth-ratio.\n\n"
      "Examples:\n"
      "  rdmactl serve -f /etc/rdmactl/fabric.yaml --token-file /etc/rdmactl/token\n"
      "      the agent (packaging/systemd/rdmactl.service runs this)\n"
      "  rdmactl serve -f fabric.yaml --dry-run --interval 1m   # report drift, change nothing\n"
      "  curl -s 127.0.0.1:9473/v1/status\n"
      "  curl -s -X POST -H \"Authorization: Bearer $(cat /etc/rdmactl/token)\" 127.0.0.1:9473/v1/reconcile\n"
      "  Kubernetes (hostNetwork): livenessProbe httpGet /healthz, readinessProbe httpGet /readyz, port 9473\n"
      "  rdmactl serve                                  # only answer peer self-tests, on every RDMA device\n"
      "  rdmactl serve --rdma-listen 192.168.100.11     # only on the device with that address\n"
      "  rdmactl serve --probe 192.168.100.12 --format json   # check another node's responder\n"
      "  rdmactl serve --probe 10.99.0.2:18600 --min-bandwidth-ratio 0.0001 --duration 0.5   # Soft-RoCE";
}

}  // namespace

void register_serve(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Run the agent: keep the host converged to a spec, HTTP API, answer peer self-tests");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML) to keep this host converged to; without it, serve only "
                                           "answers peer self-tests")
      ->type_name("FILE");
  sub->add_option("--listen", opts->listen, "ADDR:PORT of the HTTP API (default 127.0.0.1:9473)");
  sub->add_option("--token-file", opts->token_file,
                  "File holding the bearer token that POST /v1/reconcile and /v1/selftest require "
                  "(without it they answer 403): at least 16 bytes, mode 0600 or stricter")
      ->type_name("FILE");
  sub->add_flag("--insecure", opts->insecure,
                "Accept a --listen address other than loopback and a token file that group or others can read "
                "(each with a warning)");
  sub->add_option("--interval", opts->interval, "Reconcile at least this often: 30s, 10m, 1h30m (default 10m; at least 1s)");
  sub->add_option("--fabric-interval", opts->fabric_interval,
                  "With -f: scan the InfiniBand subnet from this node's port this often (at least 10s) and export "
                  "rdmactl_fabric_* in /metrics: links by width and speed, SMs, error counters, findings per check "
                  "and by severity (against the spec's fabric:). Off by default: one or two nodes per fabric are "
                  "enough. Each scan is a child process (rdmactl fabric --format prom): one that crashes, fails or "
                  "outlasts --fabric-timeout is a failed scan (rdmactl_fabric_scan_success 0 and a warning), never the "
                  "agent's end")
      ->type_name("DURATION");
  sub->add_option("--fabric-timeout", opts->fabric_timeout,
                  "With --fabric-interval: kill a scan still running after this long and count it failed "
                  "(default 60s, or the interval when shorter; at least 1s, at most the interval)")
      ->type_name("DURATION");
  sub->add_flag("--dry-run", opts->dry_run, "Plan only, never apply: report drift (GitOps) in /v1/status and /metrics");
  sub->add_flag("--allow-firmware", opts->allow_firmware,
                "Let the agent burn and activate adapter firmware where the spec's firmware says policy: update "
                "(without it such a change is an error of the plan and nothing is applied: an agent must not "
                "flash a fleet by surprise)");
  sub->add_flag("--no-rdma-responder", opts->no_rdma_responder, "With -f: do not answer other nodes' peer self-tests");
  sub->add_flag("--no-link-events", opts->no_link_events,
                "With -f: do not reconcile on link and address notifications (the timer, spec changes, SIGHUP "
                "and the API still do)");
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
  sub->add_option("--min-bandwidth-ratio", opts->min_bandwidth_ratio,
                  "With --probe: pass mark as a fraction of the local port's rate (default 0.9)")
      ->check(CLI::Range(0.0, 1000.0))
      ->group("Diagnostics");
  sub->add_option("--duration", opts->duration_s, "With --probe: seconds of RDMA WRITEs for the bandwidth (default 2, at most 60)")
      ->check(CLI::Range(0.01, 60.0))
      ->group("Diagnostics");
  sub->add_option("--format", opts->format, "With --probe: text (default) or json")->type_name("text|json")->group("Diagnostics");
  sub->footer(serve_footer());
  sub->callback([opts, &global, &command] { command = [opts, &global] { return run_serve(global, *opts); }; });
}

}  // namespace rdmactl::cli
