// SPDX-License-Identifier: Apache-2.0
// doctor: the health checks of the manual procedure (ibstat, show_gids, ibdev2netdev, lspci -vv,
// perfquery), run over an observed or recorded HostState. Pure: every check is a function of the
// state (and the spec, when one is given), so each is tested table-driven on states.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {

struct Finding {
  // port-state, port-rate, link-layer, roce-gid, roce-mtu, pfc, ecn, dcbx-peer, dcbx, cnp-priority,
  // traffic-class, pcie-link, pcie-bandwidth, error-counters, subnet-manager, irq-numa,
  // irq-single-cpu, numa-cpus, gpu-nic-path, memlock, device-access, pfc-discards,
  // pause-priority, pause-storm, rx-out-of-buffer
  std::string check;
  std::string severity;  // "error": RDMA is broken or degraded; "warning": likely to hurt
  std::string resource;  // rdma/<dev>/<port>, netdev/<name>, pci/<bdf>
  std::string message;   // what is wrong, with the observed values
  std::string fix;       // what to do about it
};

// Facts a user needs that are not problems: which GID index a test should use for each address,
// the traffic class a vendor driver forces on every QP, the SL applications need under trust pcp.
struct Note {
  std::string resource;
  std::string message;
};

struct DoctorReport {
  std::string node;
  std::vector<Finding> findings;
  std::vector<Note> notes;
};

// The error counters that must stay at zero on a healthy link.
const std::vector<std::string>& doctor_error_counters();
// Usable PCIe bandwidth in Gb/s of a link: "8.0 GT/s PCIe" x16 -> 126.0 (after line encoding).
// 0 when the speed is not understood.
double pcie_bandwidth_gbps(const std::string& speed, int width);

// Runs every check. `spec` (merged for this node) enables the checks that compare with intent
// (link layer) and gives the ToS the traffic-class fix names (roce.tos); may be null.
DoctorReport run_doctor(const HostState& state, const NodeSpec* spec);

nlohmann::json to_json(const DoctorReport& report);
std::string render_doctor_text(const DoctorReport& report);
// Every check's name, in report order (the `check` of Finding).
const std::vector<std::string>& doctor_checks();
// JUnit: a suite for the node, a passing case per check that found nothing and a failing one per
// finding (type = severity, the fix in its body).
std::string render_doctor_junit(const DoctorReport& report);
// Prometheus text: rdmactl_doctor_findings{node,check,severity} for every check (0 included) and
// rdmactl_doctor_finding{node,check,severity,resource}, the findings of a check on a resource.
std::string render_doctor_prom(const DoctorReport& report);

}  // namespace rdmactl
