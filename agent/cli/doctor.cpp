// SPDX-License-Identifier: Apache-2.0
// rdmactl doctor: the health checks of the manual procedure.
#include <chrono>
#include <iostream>
#include <thread>
#include <variant>

#include "agent/cli/checked_node.h"
#include "agent/cli/common.h"
#include "agent/core/json_text.h"
#include "agent/doctor/doctor.h"
#include "agent/platform/irq_sysfs.h"
#include "agent/platform/lossless_sample.h"
#include "agent/platform/rdma_access.h"

namespace rdmactl::cli {
namespace {

struct DoctorOptions {
  std::string spec;
  std::string state_file;
  std::string format = "text";
  double interval = 2;  // seconds between the two samples of the lossless counters
};

// Two samples of each RDMA Ethernet netdev's lossless counters, `seconds` apart (no wait when no
// netdev has counters rdmactl knows).
void sample_lossless_counters(HostState& state, double seconds) {
  auto stats = EthtoolStats::open();
  if (!stats) return;
  const CounterReader read = [&](const std::string& netdev) { return stats->read(EthtoolDevice{0, netdev}); };
  const auto interval = std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  observe_lossless_counters(read, [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }, interval, state);
}

int run_doctor_command(const GlobalOptions& global, const DoctorOptions& opts) {
  auto format = parse_format_for(opts.format, {Format::kText, Format::kJson, Format::kJunit, Format::kProm});
  if (!format) return report_error(format.error());
  auto checked = load_checked_node(global, opts.spec, opts.state_file, *format);
  if (const int* failed = std::get_if<int>(&checked)) return *failed;
  auto& [state, node_spec] = std::get<CheckedNode>(checked);
  // Where the interrupts run is read for doctor alone (a few files per interrupt: not every plan's
  // cost); a recorded state carries it when it was recorded with it.
  if (opts.state_file.empty()) {
    const HostFs fs(global.root);
    observe_interrupts(fs, state);
    observe_access(fs, state);
    // The netns mode is the running kernel's: not read for a fixture tree (--root).
    if (global.root == "/" || global.root.empty()) {
      if (auto mode = read_rdma_netns_mode()) (*state.access)["netnsMode"] = *mode;
      if (opts.interval > 0) sample_lossless_counters(state, opts.interval);
    }
  }
  const DoctorReport report = run_doctor(state, node_spec ? &*node_spec : nullptr);
  if (*format == Format::kJson) {
    std::cout << json_text(to_json(report), 2) << "\n";
  } else if (*format == Format::kJunit) {
    std::cout << render_doctor_junit(report);
  } else if (*format == Format::kProm) {
    // As plan's: exit 0, so that a textfile collector's write-then-rename publishes the findings.
    std::cout << render_doctor_prom(report) << std::flush;
    return kExitOk;
  } else {
    std::cout << render_doctor_text(report);
  }
  std::cout << std::flush;
  return report.findings.empty() ? kExitOk : kExitDrift;
}

}  // namespace

void register_doctor(CLI::App& app, const GlobalOptions& global, Command& command) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* sub = app.add_subcommand("doctor", "Check the RDMA health of this host, with a fix for each finding");
  sub->add_option("-f,--file", opts->spec, "A spec, to also check the link layer against linkType and name its roce.tos in fixes")
      ->type_name("FILE");
  sub->add_option("--state", opts->state_file, "Check a recorded state (`show --format json`) instead of this host")
      ->type_name("FILE");
  sub->add_option("--interval", opts->interval,
                  "Seconds between the two samples of the PFC, pause and discard counters (default 2; 0: no sample)")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.0, 60.0));
  sub->add_option("--format", opts->format,
                  "text (default), json, junit (a case per check, a failure per finding) or prom (gauges per check "
                  "and finding; exit 0)")
      ->type_name("text|json|junit|prom");
  sub->footer(
      "Checks: port ACTIVE and LinkUp; rate against the adapter's best and full link width; link layer\n"
      "against the spec; a RoCE v2 GID for every IPv4 address of a RoCE netdev (and which GID index\n"
      "tests should use); RoCE MTU (netdev MTU of at least 4192; 9000 is the norm); PFC on the\n"
      "priority DSCP 26 maps to, ECN on each PFC priority (where DCB was observed); the traffic\n"
      "class NCCL and perftest send by default (0, i.e. DSCP 0) on a priority without PFC, or the one\n"
      "the DOCA/MLNX-OFED driver forces (tc/<port>/traffic_class), with the NCCL_IB_TC and perftest\n"
      "settings that fix it (-f: the spec's roce.tos); PCIe width and speed against the device's\n"
      "maximum, and its bandwidth against the ACTIVE ports of every function sharing the link;\n"
      "PCIe Max_Read_Request_Size of each RDMA function (below 512 bytes: `pcie: {maxReadRequest: 4096}`);\n"
      "error counters (symbol_error, link_downed, port_rcv_errors, local_link_integrity_errors,\n"
      "excessive_buffer_overrun_errors); a subnet manager for InfiniBand ports; each RDMA function's\n"
      "interrupts against its NUMA node (irq-numa: served on another node's CPUs; irq-single-cpu: every\n"
      "completion interrupt on one CPU; numa-cpus: the function on a node without CPUs); each NVIDIA\n"
      "GPU's nearest active RDMA NIC by\n"
      "NCCL's PCIe path classes (gpu-nic-path: beyond PXB, where NCCL turns GPUDirect RDMA off); the\n"
      "locked memory limit of all users in limits.conf/limits.d and systemd's DefaultLimitMEMLOCK\n"
      "(memlock: anything but unlimited); /dev/infiniband/uverbs* and rdma_cm present and mode 0666\n"
      "(device-access); the RDMA netns mode, as a note; and, from two samples of mlx5's counters\n"
      "--interval apart: discards on a PFC priority (pfc-discards), pauses on a priority the spec does\n"
      "not make lossless (pause-priority), a pause storm (pause-storm), rx_out_of_buffer growing.\n\n"
      "Exit codes: 0 healthy (and always with --format prom), 2 findings, 1 the host could not be observed,\n"
      "65 an invalid -f SPEC.\n\n"
      "Examples:\n  rdmactl doctor\n  rdmactl doctor --format json --state gpu-01.json -f fabric.yaml\n"
      "  rdmactl doctor --format prom > /var/lib/node_exporter/rdmactl-doctor.prom.tmp");
  sub->callback([opts, &global, &command] {
    command = [opts, &global] { return run_doctor_command(global, *opts); };
  });
}

}  // namespace rdmactl::cli
