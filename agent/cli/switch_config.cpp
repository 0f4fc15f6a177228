// rdmactl switch-config: the switch-side QoS that agrees with the hosts (agent/fleet/switch_config.h).
#include <iostream>
#include <sstream>

#include "agent/cli/common.h"
#include "agent/fleet/switch_config.h"

namespace rdmactl::cli {
namespace {

struct SwitchConfigOptions {
  std::string spec;
  std::string vendor;
  std::string ports;
  long ecn_min = 150000;
  long ecn_max = 1500000;
  int ecn_probability = 100;
};

int run_switch_config(const SwitchConfigOptions& opts) {
  auto spec = load_spec(opts.spec);
  if (!spec) return print_spec_error(spec.error());
  auto qos = switch_qos_of(*spec);
  if (!qos) return print_spec_error(qos.error());
  SwitchOptions options;
  options.vendor = opts.vendor;
  std::istringstream list(opts.ports);
  // "swp1, swp2" as "swp1,swp2"; every other character is the port name's, checked by switch_config.
  for (std::string port; std::getline(list, port, ',');) {
    const auto first = port.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    options.ports.push_back(port.substr(first, port.find_last_not_of(" \t") - first + 1));
  }
  if (opts.ecn_min < 1 || opts.ecn_max < opts.ecn_min) {
    return report_error(make_error(ErrorKind::kUsage, "--ecn-min must be at least 1 and --ecn-max at least --ecn-min"));
  }
  if (opts.ecn_probability < 1 || opts.ecn_probability > 100) {
    return report_error(make_error(ErrorKind::kUsage, "--ecn-probability is a percentage, 1 to 100"));
  }
  options.ecn_min_bytes = opts.ecn_min;
  options.ecn_max_bytes = opts.ecn_max;
  options.ecn_probability = opts.ecn_probability;
  auto text = switch_config(*spec, *qos, options);
  if (!text) return report_error(text.error());
  std::cout << *text << std::flush;
  return kExitOk;
}

}  // namespace

void register_switch_config(CLI::App& app, const GlobalOptions&, Command& command) {
  auto opts = std::make_shared<SwitchConfigOptions>();
  CLI::App* sub = app.add_subcommand("switch-config", "Print the switch-side QoS that agrees with the spec's hosts");
  sub->add_option("-f,--file", opts->spec, "The spec (YAML); - reads standard input")->required()->type_name("FILE");
  sub->add_option("--vendor", opts->vendor, "nvue (Cumulus Linux), sonic (CONFIG_DB JSON) or eos (Arista)")
      ->required()
      ->check(CLI::IsMember({"nvue", "sonic", "eos"}).description(""))  // the type name lists them
      ->type_name("nvue|sonic|eos");
  sub->add_option("--ports", opts->ports,
                  "The switch ports facing the hosts, comma-separated as the vendor names them\n"
                  "(swp1-32; Ethernet0,Ethernet4; Ethernet1-32); ranges N-M for nvue and eos only")
      ->required()
      ->type_name("LIST");
  sub->add_option("--ecn-min", opts->ecn_min, "ECN marking starts at this queue depth, bytes (default 150000)")
      ->type_name("BYTES");
  sub->add_option("--ecn-max", opts->ecn_max, "ECN marks with --ecn-probability at this depth, bytes (default 1500000)")
      ->type_name("BYTES");
  sub->add_option("--ecn-probability", opts->ecn_probability, "percent of packets marked at --ecn-max (default 100)")
      ->type_name("PERCENT");
  sub->footer(
      "From the spec's interfaces (defaults and every nodes: entry, qos profiles expanded): classify\n"
      "by DSCP with the hosts' map (all 64 DSCPs: the spec's rows, DSCP >> 3 for the others, as the\n"
      "hosts' firmware holds them), priority N on queue N, PFC on the spec's lossless priorities\n"
      "only, ECN marking on their queues (the thresholds of NVUE's `nv set qos roce` unless given),\n"
      "the CNP priority strict, and the vendor's largest port MTU. Hosts whose QoS disagree cannot\n"
      "share a switch: that is an invalid spec (65), naming both places. Buffers are left to the\n"
      "switch's own (NVUE's traffic pools are set; SONiC's lossless priority groups and EOS's MMU\n"
      "are the platform's).\n\n"
      "Exit codes: 0 printed, 65 invalid spec or hosts that disagree, 64 usage.\n\n"
      "Examples:\n"
      "  rdmactl switch-config -f fabric.yaml --vendor nvue --ports swp1-32 > roce.nvue && sh roce.nvue\n"
      "  rdmactl switch-config -f fabric.yaml --vendor sonic --ports Ethernet0,Ethernet4 > qos.json \\\n"
      "    && sudo sonic-cfggen -j qos.json --write-to-db\n"
      "  rdmactl switch-config -f fabric.yaml --vendor eos --ports Ethernet1-32");
  sub->callback([opts, &command] { command = [opts] { return run_switch_config(*opts); }; });
}

}  // namespace rdmactl::cli
