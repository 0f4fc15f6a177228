// SPDX-License-Identifier: Apache-2.0
// rdmactl fabric: the InfiniBand subnet seen from one of this node's ports, and its findings.
#include <iostream>

#include "agent/cli/fabric.h"

#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/fabric/checks.h"
#include "agent/fabric/discover.h"
#include "agent/fabric/dot.h"
#include "agent/fabric/format.h"

namespace rdmactl::cli {

int run_fabric(const FabricOptions& options, const GlobalOptions& /*global*/) {
  // libibumad reads the host's /sys/class/infiniband and /dev/infiniband itself: --root and
  // --netns do not apply to a fabric scan.
  auto format = parse_format_for(options.format, {Format::kText, Format::kJson, Format::kJunit, Format::kProm, Format::kDot});
  if (!format) return report_error(format.error());
  if (options.collapse && *format != Format::kDot) {
    return report_error(make_error(ErrorKind::kUsage,
                                   std::string("only --format dot draws a graph to collapse (not --format ") + format_name(*format) + ")",
                                   "--collapse"));
  }
  if (options.port < 0 || options.port > 254) {
    return report_error(make_error(ErrorKind::kUsage, "--port: a port number is 1..254 (0: the first ACTIVE one)"));
  }
  std::optional<FabricSpec> spec;
  if (!options.spec.empty()) {
    auto loaded = load_spec(options.spec, SpecInput::kFileOrPipe);
    if (!loaded) return print_spec_error(loaded.error(), *format, options.spec);
    spec = std::move(loaded).value();
  }
  const std::optional<FabricExpectation> expectation = spec ? fabric::expectation_of(*spec) : std::nullopt;
  const FabricExpectation* expect = expectation ? &*expectation : nullptr;

  fabric::DiscoverOptions discover;
  discover.ca = options.ca;
  discover.port = options.port;
  auto scan = fabric::discover_fabric(discover);
  if (!scan) {
    // Each format still reports the failure, so that a textfile collector gets
    // rdmactl_fabric_scan_success 0 instead of an empty file (docs/infiniband.md).
    const int code = report_error(scan.error());
    const std::string error = scan.error().to_string();
    switch (*format) {
      case Format::kJson: std::cout << json_text(fabric::fabric_failed_json(error, discover), 2) << "\n"; break;
      case Format::kJunit: std::cout << fabric::render_fabric_failed_junit(error, discover); break;
      case Format::kProm: std::cout << fabric::render_fabric_failed_prom(); break;
      case Format::kDot: std::cout << fabric::render_fabric_failed_dot(error, discover); break;
      default: break;
    }
    std::cout << std::flush;
    return *format == Format::kProm ? kExitOk : code;
  }
  const std::vector<fabric::FabricFinding> findings = fabric::check_fabric(*scan, expect);

  switch (*format) {
    case Format::kJson: std::cout << json_text(fabric::fabric_json(*scan, findings), 2) << "\n"; break;
    case Format::kJunit: std::cout << fabric::render_fabric_junit(*scan, findings); break;
    case Format::kProm: std::cout << fabric::render_fabric_prom(*scan, findings); break;
    case Format::kDot: std::cout << fabric::render_fabric_dot(*scan, findings, {.collapse = options.collapse}); break;
    default: std::cout << fabric::render_fabric_text(*scan, findings); break;
  }
  std::cout << std::flush;
  if (*format == Format::kProm) return kExitOk;
  return findings.empty() ? kExitOk : kExitDrift;
}

void register_fabric(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<FabricOptions>();
  CLI::App* sub = app.add_subcommand(
      "fabric", "Scan the InfiniBand subnet from this node: switches, CAs, links, subnet managers, error counters");
  sub->add_option("--ca", opts->ca, "Local device to scan from (default: the first with an ACTIVE InfiniBand port)")
      ->type_name("DEV");
  sub->add_option("--port", opts->port, "Its port (default: its first ACTIVE port)")->type_name("N");
  sub->add_option("-f,--file", opts->spec,
                  "A spec whose `fabric:` gives linkWidth, linkSpeed, switches, cas, subnetManagers, thresholds")
      ->type_name("SPEC");
  sub->add_option("--format", opts->format, "text (default), json, junit, prom or dot (a Graphviz graph)")
      ->type_name("text|json|junit|prom|dot");
  sub->add_flag("--collapse", opts->collapse,
                "dot: draw each leaf switch with its healthy CAs as one node; every CA with a finding stays");
  sub->footer(
      "Discovers the subnet through libibnetdisc (as ibnetdiscover), asks every port with the IsSM\n"
      "capability for its SMInfo (as sminfo) and reads every port's PortCounters (as ibqueryerrors).\n"
      "It only reads: no Set, no counter reset. Needs access to /dev/infiniband/umad* (root, or the\n"
      "rdma group where udev grants it).\n\n"
      "Checks, each finding with its fix:\n"
      "  port-state         a link whose end is not Active/LinkUp while its peer is up\n"
      "  link-width         narrower than both ends support (1x instead of 4x), or than fabric.linkWidth\n"
      "  link-speed         slower than both ends support (HDR on an NDR link), or than fabric.linkSpeed\n"
      "  error-counters     SymbolErrorCounter, LinkErrorRecoveryCounter, LinkDownedCounter, PortRcvErrors,\n"
      "                     PortRcvRemotePhysicalErrors, PortXmitDiscards, LocalLinkIntegrityErrors,\n"
      "                     ExcessiveBufferOverrunErrors, VL15Dropped above fabric.thresholds (default 0,\n"
      "                     as ibqueryerrors)\n"
      "  subnet-manager     no master SM, two masters, other than fabric.subnetManagers SMs\n"
      "  duplicate-guid     one node or port GUID at two places\n"
      "  unresponsive-node  a LinkUp port whose peer does not answer (missing from the scan)\n"
      "  node-description   a node description left at its default (empty, \"... Mellanox Technologies\")\n"
      "  node-count         other than fabric.switches / fabric.cas\n\n"
      "Exit codes: 0 healthy, 2 findings, 1 the subnet could not be scanned (no InfiniBand port,\n"
      "libibumad failure: the error on standard error; json says \"scanSuccess\": false with the error,\n"
      "junit has one failing case naming it), 64 usage, 65 an invalid -f SPEC. prom exits 0 whenever it\n"
      "wrote the metrics: findings and a failed scan (rdmactl_fabric_scan_success 0) are in them, so\n"
      "`> FILE.tmp && mv FILE.tmp FILE` publishes every run.\n\n"
      "dot is the subnet as a Graphviz graph: switches and CAs with their descriptions and GUIDs, links\n"
      "labelled with width and speed (\"4x HDR\"), subnet managers with a double border (\"SM master\").\n"
      "A link or node with an error is red and bold, with a warning orange and dashed; its label names\n"
      "the check, its tooltip (in SVG) gives the finding and the fix. Ranks follow the topology: CAs at\n"
      "the bottom, leaves above them (switches linked to a CA, but not a spine with a host or two on\n"
      "it; and a leaf with no host, cabled to the leaves' spines), then each switch one rank above its\n"
      "nearest leaf (spines, core). Exit codes as text, so a picture with findings exits 2 (publish it\n"
      "on 0, 1 and 2, as below); a failed scan gives a graph whose caption is the error. --collapse\n"
      "keeps large fabrics readable: a leaf and its healthy CAs are one node (\"+ 18 CAs\"); a CA with\n"
      "a finding on it or its link, with a subnet manager, or linked to two leaves, stays.\n\n"
      "Examples:\n"
      "  rdmactl fabric\n"
      "  rdmactl fabric --ca mlx5_0 --port 1 --format json > fabric.json\n"
      "  rdmactl fabric -f fabric.yaml --format junit > fabric-junit.xml\n"
      "  rdmactl fabric --format dot | dot -Tsvg > fabric.svg\n"
      "  rdmactl fabric --format dot --collapse | dot -Tsvg > fabric.svg\n"
      "  rdmactl fabric --format dot > fabric.dot.tmp; [ $? -le 2 ] && dot -Tsvg fabric.dot.tmp > fabric.svg.tmp \\\n"
      "    && mv fabric.svg.tmp fabric.svg   # on a timer: a picture with findings (exit 2) is published too\n"
      "  rdmactl fabric --format prom > /var/lib/prometheus/node-exporter/rdmactl_fabric.prom.tmp \\\n"
      "    && mv /var/lib/prometheus/node-exporter/rdmactl_fabric.prom.tmp /var/lib/prometheus/node-exporter/rdmactl_fabric.prom");
  sub->callback([opts, &global, &command] {
    command = [opts, &global] { return run_fabric(*opts, global); };
  });
}

}  // namespace rdmactl::cli
