// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition of reports, self-tests and observed ports (see prom.h), and the
// prom format of a report (format.h render_prom).
#include "agent/report/prom.h"
#include "agent/state/firmware.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <regex>
#include <set>

#include "agent/core/text.h"
#include "agent/report/format.h"
#include "agent/state/port_guid.h"

namespace rdmactl {
namespace {

using nlohmann::json;

// A port counter of sysfs, as exported. `scale` turns the kernel's unit into the base unit:
// port_xmit_data and port_rcv_data count 4-octet words (IBA 16.1.3.5, PortCounters; the kernel's
// drivers/infiniband/core/sysfs.c shows the PMA value as is), exported in bytes as node_exporter's
// infiniband collector does.
struct PortCounter {
  const char* directory;  // "counters" (ports/N/counters) or "hw_counters" (ports/N/hw_counters)
  const char* file;
  const char* metric;
  const char* help;
  uint64_t scale = 1;
};

// The standard PMA counters every RDMA port has (error counters, traffic), and mlx5's RoCE
// congestion and transport-error counters (hw_counters; Documentation/networking/device_drivers/
// ethernet/mellanox/mlx5/counters.rst). Other drivers' hw_counters are in `show`, not exported.
//
// Named after node_exporter's infiniband collector (prometheus/node_exporter
// collector/infiniband_linux.go, NewInfiniBandCollector's `descriptions` and Update; hw_counters
// since v1.11.0), which reads the same files through prometheus/procfs (sysfs/class_infiniband.go,
// parseInfiniBandCounters: port_rcv_data and port_xmit_data x 4; parseInfiniBandHwCounters):
// rdmactl_infiniband_X{node,device,port} is node_infiniband_X{device,port}, the same quantity in
// the same unit, plus rdmactl's `node` label. Each counter below has its node_exporter twin:
//   counters/symbol_error                      node_infiniband_symbol_error_total
//   counters/link_error_recovery               node_infiniband_link_error_recovery_total
//   counters/link_downed                       node_infiniband_link_downed_total
//   counters/port_rcv_errors                   node_infiniband_port_errors_received_total
//   counters/port_rcv_remote_physical_errors   node_infiniband_port_receive_remote_physical_errors_total
//   counters/port_rcv_switch_relay_errors      node_infiniband_port_receive_switch_relay_errors_total
//   counters/port_rcv_constraint_errors        node_infiniband_port_constraint_errors_received_total
//   counters/port_xmit_discards                node_infiniband_port_discards_transmitted_total
//   counters/port_xmit_constraint_errors       node_infiniband_port_constraint_errors_transmitted_total
//   counters/local_link_integrity_errors       node_infiniband_local_link_integrity_errors_total
//   counters/excessive_buffer_overrun_errors   node_infiniband_excessive_buffer_overrun_errors_total
//   counters/VL15_dropped                      node_infiniband_vl15_dropped_total
//   counters/port_xmit_wait                    node_infiniband_port_transmit_wait_total
//   counters/port_rcv_data (x 4)               node_infiniband_port_data_received_bytes_total
//   counters/port_xmit_data (x 4)              node_infiniband_port_data_transmitted_bytes_total
//   counters/port_rcv_packets                  node_infiniband_port_packets_received_total
//   counters/port_xmit_packets                 node_infiniband_port_packets_transmitted_total
//   hw_counters/np_cnp_sent                    node_infiniband_np_cnp_packets_sent_total
//   hw_counters/np_ecn_marked_roce_packets     node_infiniband_np_ecn_marked_roce_packets_received_total
//   hw_counters/rp_cnp_handled                 node_infiniband_rp_cnp_packets_handled_total
//   hw_counters/rp_cnp_ignored                 node_infiniband_rp_cnp_ignored_packets_received_total
//   hw_counters/out_of_sequence                node_infiniband_out_of_sequence_packets_received_total
//   hw_counters/packet_seq_err                 node_infiniband_packet_sequence_errors_total
//   hw_counters/local_ack_timeout_err          node_infiniband_local_ack_timeout_errors_total
//   hw_counters/implied_nak_seq_err            node_infiniband_implied_nak_seq_errors_total
//   hw_counters/rnr_nak_retry_err              node_infiniband_rnr_nak_retry_packets_received_total
//   hw_counters/duplicate_request              node_infiniband_duplicate_requests_packets_total
//   hw_counters/out_of_buffer                  node_infiniband_out_of_buffer_drops_total
// A counter added here that node_exporter does not have is named rdmactl_port_<what>_total, so that
// rdmactl_infiniband_* stays exactly node_exporter's set. (rdmactl_port_rate_bytes_per_second is
// node_infiniband_rate_bytes_per_second; the port's state gauges are rdmactl's own: node_exporter
// exports the state as a number, state_id and physical_state_id.)
constexpr PortCounter kPortCounters[] = {
    {"counters", "symbol_error", "rdmactl_infiniband_symbol_error_total", "Minor link errors on any physical lane (counters/symbol_error)."},
    {"counters", "link_error_recovery", "rdmactl_infiniband_link_error_recovery_total", "Link error recoveries (counters/link_error_recovery)."},
    {"counters", "link_downed", "rdmactl_infiniband_link_downed_total", "Times the link went down after failing error recovery (counters/link_downed)."},
    {"counters", "port_rcv_errors", "rdmactl_infiniband_port_errors_received_total", "Received packets with errors (counters/port_rcv_errors)."},
    {"counters", "port_rcv_remote_physical_errors", "rdmactl_infiniband_port_receive_remote_physical_errors_total", "Received packets marked with the EBP delimiter (counters/port_rcv_remote_physical_errors)."},
    {"counters", "port_rcv_switch_relay_errors", "rdmactl_infiniband_port_receive_switch_relay_errors_total", "Received packets discarded because they could not be forwarded (counters/port_rcv_switch_relay_errors)."},
    {"counters", "port_rcv_constraint_errors", "rdmactl_infiniband_port_constraint_errors_received_total", "Received packets discarded for partition or raw-packet constraints (counters/port_rcv_constraint_errors)."},
    {"counters", "port_xmit_discards", "rdmactl_infiniband_port_discards_transmitted_total", "Outbound packets discarded, e.g. port down or congestion (counters/port_xmit_discards)."},
    {"counters", "port_xmit_constraint_errors", "rdmactl_infiniband_port_constraint_errors_transmitted_total", "Outbound packets not sent for partition or raw-packet constraints (counters/port_xmit_constraint_errors)."},
    {"counters", "local_link_integrity_errors", "rdmactl_infiniband_local_link_integrity_errors_total", "Times local physical errors exceeded the threshold (counters/local_link_integrity_errors)."},
    {"counters", "excessive_buffer_overrun_errors", "rdmactl_infiniband_excessive_buffer_overrun_errors_total", "Consecutive flow-control update periods with buffer overrun (counters/excessive_buffer_overrun_errors)."},
    {"counters", "VL15_dropped", "rdmactl_infiniband_vl15_dropped_total", "Incoming VL15 (subnet management) packets dropped (counters/VL15_dropped)."},
    {"counters", "port_xmit_wait", "rdmactl_infiniband_port_transmit_wait_total", "Ticks with data to send but no flow-control credits (counters/port_xmit_wait)."},
    {"counters", "port_rcv_data", "rdmactl_infiniband_port_data_received_bytes_total", "Data received, in bytes (counters/port_rcv_data x 4).", 4},
    {"counters", "port_xmit_data", "rdmactl_infiniband_port_data_transmitted_bytes_total", "Data sent, in bytes (counters/port_xmit_data x 4).", 4},
    {"counters", "port_rcv_packets", "rdmactl_infiniband_port_packets_received_total", "Packets received (counters/port_rcv_packets)."},
    {"counters", "port_xmit_packets", "rdmactl_infiniband_port_packets_transmitted_total", "Packets sent (counters/port_xmit_packets)."},
    {"hw_counters", "np_cnp_sent", "rdmactl_infiniband_np_cnp_packets_sent_total", "CNPs sent by the notification point for ECN-marked RoCE packets (hw_counters/np_cnp_sent)."},
    {"hw_counters", "np_ecn_marked_roce_packets", "rdmactl_infiniband_np_ecn_marked_roce_packets_received_total", "RoCE packets received with ECN congestion marks (hw_counters/np_ecn_marked_roce_packets)."},
    {"hw_counters", "rp_cnp_handled", "rdmactl_infiniband_rp_cnp_packets_handled_total", "CNPs the reaction point handled by slowing its sending (hw_counters/rp_cnp_handled)."},
    {"hw_counters", "rp_cnp_ignored", "rdmactl_infiniband_rp_cnp_ignored_packets_received_total", "CNPs the reaction point received and ignored (hw_counters/rp_cnp_ignored)."},
    {"hw_counters", "out_of_sequence", "rdmactl_infiniband_out_of_sequence_packets_received_total", "Out-of-sequence packets received (hw_counters/out_of_sequence)."},
    {"hw_counters", "packet_seq_err", "rdmactl_infiniband_packet_sequence_errors_total", "NAKs received for packet sequence errors (hw_counters/packet_seq_err)."},
    {"hw_counters", "local_ack_timeout_err", "rdmactl_infiniband_local_ack_timeout_errors_total", "Send queue ACK timeouts, each a retransmission (hw_counters/local_ack_timeout_err)."},
    {"hw_counters", "implied_nak_seq_err", "rdmactl_infiniband_implied_nak_seq_errors_total", "Implied NAK sequence errors (hw_counters/implied_nak_seq_err)."},
    {"hw_counters", "rnr_nak_retry_err", "rdmactl_infiniband_rnr_nak_retry_packets_received_total", "Receiver-not-ready NAKs received (hw_counters/rnr_nak_retry_err)."},
    {"hw_counters", "duplicate_request", "rdmactl_infiniband_duplicate_requests_packets_total", "Duplicate requests received (hw_counters/duplicate_request)."},
    {"hw_counters", "out_of_buffer", "rdmactl_infiniband_out_of_buffer_drops_total", "Packets dropped for lack of a receive WQE (hw_counters/out_of_buffer)."},
};

// Gb/s -> bytes/s: Prometheus' base unit of data is the byte (promtool's lint refuses "bits").
constexpr double kBytesPerSecondPerGbps = 1e9 / 8;
// Microseconds -> seconds, to the nanosecond (finer than any RDMA latency measurement): whole
// nanoseconds / 1e9 print as written (1.9 us: 1.9e-06), where 1.9 * 1e-6 gives 1.8999999999999998e-06.
double seconds_of_microseconds(double us) { return std::round(us * 1000) / 1e9; }

// A sysfs counter value: a non-negative integer; "N/A (no PMA)" and other text is left out.
std::optional<uint64_t> counter_value(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::optional<double> number_at(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return std::nullopt;
  return object[key].get<double>();
}

}  // namespace

std::string prom_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string prom_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

void PromText::family(const std::string& name, const std::string& type, const std::string& help) {
  for (const Family& f : families_) {
    if (f.name == name) return;
  }
  families_.push_back(Family{name, type, help, {}});
}

PromText::Family& PromText::find(const std::string& name) {
  for (Family& f : families_) {
    if (f.name == name) return f;
  }
  // A sample of an undeclared family is a programming error; declare it untyped rather than drop it.
  families_.push_back(Family{name, "untyped", name, {}});
  return families_.back();
}

void PromText::add_line(const std::string& name, const PromLabels& labels, const std::string& value,
                        const std::string& suffix) {
  std::string line = name + suffix;
  if (!labels.empty()) {
    line += "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) line += ",";
      // Label values must be UTF-8: a netdev name is any bytes the kernel took.
      const std::string& value_text = labels[i].second;
      line += labels[i].first + "=\"" +
              prom_escape(first_invalid_utf8(value_text) ? escape_for_display(value_text) : value_text) + "\"";
    }
    line += "}";
  }
  find(name).lines.push_back(line + " " + value);
}

void PromText::sample(const std::string& name, const PromLabels& labels, double value, const std::string& suffix) {
  add_line(name, labels, prom_number(value), suffix);
}

void PromText::sample_integer(const std::string& name, const PromLabels& labels, uint64_t value,
                              const std::string& suffix) {
  add_line(name, labels, std::to_string(value), suffix);
}

std::vector<PromText::FamilyText> PromText::families() const {
  std::vector<FamilyText> out;
  out.reserve(families_.size());
  for (const Family& f : families_) {
    // HELP text escapes backslash and newline only (exposition format 0.0.4).
    std::string help;
    for (char c : f.help) help += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
    FamilyText text{"# HELP " + f.name + " " + help + "\n# TYPE " + f.name + " " + f.type + "\n", {}};
    for (const std::string& line : f.lines) text.samples += line + "\n";
    out.push_back(std::move(text));
  }
  return out;
}

std::string PromText::text() const {
  std::string out;
  for (const FamilyText& f : families()) {
    if (!f.samples.empty()) out += f.header + f.samples;
  }
  return out;
}

void prom_build_info(PromText& out) {
  out.family("rdmactl_build_info", "gauge", "Always 1; the version of rdmactl that wrote these metrics.");
  out.sample("rdmactl_build_info", {{"version", RDMACTL_VERSION}}, 1);
}

void prom_report(PromText& out, const Report& report) {
  const PromLabels node = {{"node", report.node}};
  size_t drift = 0;
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kPlanned || c.status == ChangeStatus::kFailed ||
        c.status == ChangeStatus::kRolledBack) {
      ++drift;
    }
  }
  out.family("rdmactl_drift_changes", "gauge",
             "Fields that differ between the spec and the host now: planned (plan), failed or rolled back "
             "(apply). 0 once an apply converged the host.");
  out.sample_integer("rdmactl_drift_changes", node, drift);
  out.family("rdmactl_pending_reboot_changes", "gauge", "Firmware changes staged that take effect at the next reboot.");
  out.sample_integer("rdmactl_pending_reboot_changes", node, report.count(ChangeStatus::kPendingReboot));
  out.family("rdmactl_pending_reboot", "gauge", "1 when firmware changes wait for a reboot.");
  out.sample("rdmactl_pending_reboot", node, report.pending_reboot ? 1 : 0);
  out.family("rdmactl_errors", "gauge", "Spec entries that could not be planned or applied (e.g. a selector matching nothing).");
  out.sample_integer("rdmactl_errors", node, report.errors.size());
  out.family("rdmactl_drift", "gauge",
             "1 for each field that differs now (the changes behind rdmactl_drift_changes); absent when it does not.");
  for (const Change& c : report.changes) {
    if (c.status == ChangeStatus::kApplied || c.status == ChangeStatus::kPendingReboot) continue;
    out.sample("rdmactl_drift", {{"node", report.node}, {"resource", c.resource}, {"field", c.field}}, 1);
  }
}

void prom_selftest(PromText& out, const std::string& node, const json& selftest, double timestamp) {
  const std::string result = selftest.is_object() ? selftest.value("result", "") : "";
  // Absent until a self-test has run: a 0 would read as "failed" to `== 0` alerts. "None yet" is
  // rdmactl_selftest_info{result="none"} with rdmactl_selftest_timestamp_seconds 0.
  out.family("rdmactl_selftest_success", "gauge",
             "1 when the last RDMA self-test passed; 0 when it failed or was skipped; absent until one has run "
             "(then rdmactl_selftest_info{result=\"none\"} is 1 and rdmactl_selftest_timestamp_seconds is 0).");
  if (!result.empty()) out.sample("rdmactl_selftest_success", {{"node", node}}, result == "passed" ? 1 : 0);
  out.family("rdmactl_selftest_info", "gauge", "Always 1; the last self-test's result in words (passed, failed, skipped, none).");
  out.sample("rdmactl_selftest_info", {{"node", node}, {"result", result.empty() ? "none" : result}}, 1);
  out.family("rdmactl_selftest_timestamp_seconds", "gauge", "When the last self-test ran, in seconds since the epoch; 0: none yet.");
  out.sample("rdmactl_selftest_timestamp_seconds", {{"node", node}}, timestamp);
  if (!selftest.is_object()) return;

  out.family("rdmactl_selftest_test_success", "gauge", "1 for each self-test (port loopback or peer) that passed, 0 otherwise.");
  out.family("rdmactl_selftest_bandwidth_bytes_per_second", "gauge", "RDMA WRITE bandwidth the self-test measured, in bytes per second.");
  out.family("rdmactl_selftest_expected_bandwidth_bytes_per_second", "gauge",
             "The bandwidth a self-test must reach: the port's rate x minBandwidthRatio.");
  out.family("rdmactl_selftest_latency_seconds", "gauge",
             "Loopback small-message latency: typical (median, ib_write_lat's t_typical), average and p99.");
  out.family("rdmactl_selftest_round_trip_seconds", "gauge", "Peer self-test round trip.");
  for (const json& t : selftest.value("tests", json::array())) {
    if (!t.is_object()) continue;
    const std::string test = t.value("test", "");
    PromLabels labels = {{"node", node}, {"test", test}};
    if (test == "peer") {
      labels.emplace_back("peer", t.value("peer", ""));
    } else {
      labels.emplace_back("device", t.value("device", ""));
      labels.emplace_back("port", std::to_string(t.value("port", 0)));
    }
    out.sample("rdmactl_selftest_test_success", labels, t.value("result", "") == "passed" ? 1 : 0);
    if (auto gbps = number_at(t, "bandwidthGbps")) {
      out.sample("rdmactl_selftest_bandwidth_bytes_per_second", labels, *gbps * kBytesPerSecondPerGbps);
    }
    if (auto gbps = number_at(t, "expectedGbps")) {
      out.sample("rdmactl_selftest_expected_bandwidth_bytes_per_second", labels, *gbps * kBytesPerSecondPerGbps);
    }
    if (t.contains("latencyUs") && t["latencyUs"].is_object()) {
      for (const char* statistic : {"typical", "average", "p99"}) {
        if (auto us = number_at(t["latencyUs"], statistic)) {
          PromLabels with = labels;
          with.emplace_back("statistic", statistic);
          out.sample("rdmactl_selftest_latency_seconds", with, seconds_of_microseconds(*us));
        }
      }
    }
    if (auto us = number_at(t, "roundTripUs")) {
      out.sample("rdmactl_selftest_round_trip_seconds", labels, seconds_of_microseconds(*us));
    }
  }
}

void prom_ports(PromText& out, const HostState& state) {
  out.family("rdmactl_port_info", "gauge", "Always 1; an RDMA port's link layer and netdev.");
  out.family("rdmactl_port_active", "gauge", "1 when the port's logical state is ACTIVE.");
  out.family("rdmactl_port_physical_link_up", "gauge", "1 when the port's physical state is LinkUp.");
  out.family("rdmactl_port_rate_bytes_per_second", "gauge", "The port's signalling rate (ports/N/rate), in bytes per second (100 Gb/s: 1.25e+10).");
  for (const PortCounter& counter : kPortCounters) out.family(counter.metric, "counter", counter.help);
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      const PromLabels labels = {{"node", state.node}, {"device", d.name}, {"port", std::to_string(p.port)}};
      PromLabels info = labels;
      info.emplace_back("link_layer", p.link_layer);
      info.emplace_back("netdev", p.netdev);
      out.sample("rdmactl_port_info", info, 1);
      out.sample("rdmactl_port_active", labels, p.state == "ACTIVE" ? 1 : 0);
      out.sample("rdmactl_port_physical_link_up", labels, p.phys_state == "LinkUp" ? 1 : 0);
      out.sample("rdmactl_port_rate_bytes_per_second", labels, p.rate_gbps * kBytesPerSecondPerGbps);
      for (const PortCounter& counter : kPortCounters) {
        const auto& counters = std::string(counter.directory) == "counters" ? p.counters : p.hw_counters;
        const auto found = counters.find(counter.file);
        if (found == counters.end()) continue;
        if (auto value = counter_value(found->second)) out.sample_integer(counter.metric, labels, *value * counter.scale);
      }
    }
  }
}

void prom_subnet_manager(PromText& out, const HostState& state) {
  const nlohmann::json& sm = state.subnet_manager;
  if (!sm.is_object() || !sm.contains("local")) return;
  // Not asked (the spec does not manage the SM, so no MAD went out): nothing is known.
  if (sm.value("masterReason", std::string()).rfind("not asked", 0) == 0) return;
  const PromLabels node = {{"node", state.node}};
  out.family("rdmactl_subnet_manager_master", "gauge",
             "1 when sminfo through this node's port names a master SM (its GUID, LID and priority as labels); 0 "
             "when it names none (failover in progress, no SM, or sminfo failed).");
  out.family("rdmactl_subnet_manager_local_active", "gauge", "1 when this node's OpenSM service is active.");
  out.family("rdmactl_subnet_manager_local_master", "gauge", "1 when the master SM is this node's OpenSM.");
  const nlohmann::json master = sm.value("master", nlohmann::json());
  const bool has_master = master.is_object() && master.value("state", std::string()) == "SMINFO_MASTER";
  if (has_master) {
    out.sample("rdmactl_subnet_manager_master",
               {{"node", state.node},
                {"guid", master.value("guid", std::string())},
                {"lid", std::to_string(master.value("lid", 0))},
                {"priority", std::to_string(master.value("priority", 0))}},
               1);
  } else {
    out.sample("rdmactl_subnet_manager_master", node, 0);
  }
  const nlohmann::json& local = sm["local"];
  const bool active = local.value("active", nlohmann::json()) == nlohmann::json(true);
  out.sample("rdmactl_subnet_manager_local_active", node, active ? 1 : 0);
  bool local_master = false;
  if (has_master && active) {
    // This node's port GUIDs: the master is local when its GUID is one of them.
    for (const DeviceState& d : state.devices) {
      for (const PortState& p : d.ports) local_master = local_master || port_guid(p) == master.value("guid", std::string());
    }
  }
  out.sample("rdmactl_subnet_manager_local_master", node, local_master ? 1 : 0);
}

void prom_firmware(PromText& out, const HostState& state) {
  bool any = false;
  for (const DeviceState& d : state.devices) {
    const FirmwareView fw = firmware_view(d);
    if (d.pci.empty() || fw.running.empty()) continue;
    if (!any) {
      out.family("rdmactl_firmware_info", "gauge",
                 "Always 1; an adapter function's firmware: running and stored (on flash) version, PSID, and where "
                 "they were read (devlink, mstflint, sysfs; sysfs knows only the running one).");
      out.family("rdmactl_firmware_pending_activation", "gauge",
                 "1 when the flash holds another image than the running one: it runs after the next reset or "
                 "reboot.");
      any = true;
    }
    const PromLabels labels = {{"node", state.node}, {"device", d.name}, {"pci", d.pci}};
    PromLabels info = labels;
    info.emplace_back("running", fw.running);
    info.emplace_back("stored", fw.stored);
    info.emplace_back("psid", fw.psid);
    info.emplace_back("source", fw.source);
    out.sample("rdmactl_firmware_info", info, 1);
    out.sample("rdmactl_firmware_pending_activation", labels, fw.pending() ? 1 : 0);
  }
}

std::string render_prom(const Report& report, const HostState* state) {
  PromText out;
  prom_build_info(out);
  prom_report(out, report);
  // A report carries a self-test only when it ran one (apply), just now.
  if (report.selftest.is_object()) {
    const auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    prom_selftest(out, report.node, report.selftest, std::floor(now));
  }
  if (state) prom_ports(out, *state);
  return out.text();
}

std::string ethtool_metric_name(const std::string& stat) {
  // SanitizeMetricName: regexp `_*[^0-9A-Za-z_]+_*` -> "_".
  std::string sanitized;
  for (size_t i = 0; i < stat.size();) {
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    if (word(stat[i])) {
      sanitized += stat[i++];
      continue;
    }
    while (!sanitized.empty() && sanitized.back() == '_') sanitized.pop_back();
    while (i < stat.size() && !word(stat[i])) ++i;
    while (i < stat.size() && stat[i] == '_') ++i;
    sanitized += '_';
  }
  size_t start = 0;
  while (start < sanitized.size() && sanitized[start] == '_') ++start;
  std::string name = sanitized.substr(start);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // `(^|_)rx(_|$)` -> received, `(^|_)tx(_|$)` -> transmitted, word by word.
  std::string out;
  size_t at = 0;
  while (at <= name.size()) {
    const size_t end = std::min(name.find('_', at), name.size());
    const std::string part = name.substr(at, end - at);
    out += part == "rx" ? "received" : part == "tx" ? "transmitted" : part;
    if (end >= name.size()) break;
    out += '_';
    at = end + 1;
  }
  return out;
}

void prom_lossless(PromText& out, const std::string& node, const std::string& netdev, const EthtoolCounters& counters) {
  const LosslessCounters known = classify_lossless_counters(counters);
  if (known.naming == CounterNaming::kUnknown) return;
  // The stats the classifier picked out, by their own names: the per-priority pause and discard
  // counters, the global pause ones, rx_discards_phy, rx_out_of_buffer and the storm events.
  static const std::regex kLossless(
      "(rx|tx)_(prio[0-7]|global)_pause(_duration|_transition)?|rx_prio[0-7]_(discards|buf_discard|cong_discard)|"
      "rx_discards_phy|rx_out_of_buffer|tx_pause_storm_(warning|error)_events");
  for (const auto& [raw, value] : counters) {
    // A 2018 kernel's "tx_pause_storm_warning_events " (a trailing blank in en_stats.c) is the same
    // stat: its series keeps one name across kernels.
    std::string stat = raw;
    while (!stat.empty() && stat.back() == ' ') stat.pop_back();
    if (!std::regex_match(stat, kLossless)) continue;
    const std::string name = "rdmactl_ethtool_" + ethtool_metric_name(stat);
    out.family(name, "untyped", "Network interface " + stat + " (ethtool -S), as node_exporter's ethtool collector names it.");
    out.sample_integer(name, {{"node", node}, {"device", netdev}}, value);
  }
}

}  // namespace rdmactl
