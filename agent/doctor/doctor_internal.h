// SPDX-License-Identifier: Apache-2.0
// What the doctor's check files share: the Doctor that runs every check over one state (doctor.cpp
// runs them in order; each family of checks is in the file named for what it checks) and the helpers
// that more than one family uses.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/doctor/doctor.h"
#include "agent/spec/spec.h"
#include "agent/state/state.h"

namespace rdmactl {
struct FirmwareView;
}  // namespace rdmactl

namespace rdmactl::doctor_detail {

// "rdma/<dev>/<port>", the resource of a port's findings.
std::string port_resource(const DeviceState& d, const PortState& p);
// A rate in Gb/s to one decimal, "%g": 100, 12.5.
std::string format_gbps(double gbps);

class Doctor {
 public:
  Doctor(const HostState& state, const NodeSpec* spec) : state_(state), spec_(spec) {}

  DoctorReport run();

 private:
  void add(std::string check, std::string severity, std::string resource, std::string message,
           std::string fix);
  static bool selects(const Selector& s, const DeviceState& d, const PortState& p);

  // ports.cpp: the port's state, rate and error counters, and its link layer against the spec.
  void check_port_state(const DeviceState& d, const PortState& p);
  void check_port_rate(const DeviceState& d, const PortState& p);
  void check_counters(const DeviceState& d, const PortState& p);
  void check_link_layers();
  // subnet_manager.cpp
  void note_subnet_manager();
  void check_subnet_manager(const DeviceState& d, const PortState& p);
  // roce.cpp: the netdev MTU and the RoCE v2 GIDs.
  void check_roce(const DeviceState& d, const PortState& p);
  // lossless.cpp: PFC and ECN.
  void check_lossless(const DeviceState& d, const PortState& p);
  // pause.cpp: two samples of the PFC, pause and discard counters.
  void check_pause_counters(const DeviceState& d, const PortState& p);
  // dcbx.cpp: the switch port's DCBX advertisements, and who runs DCBX.
  void check_dcbx_peer(const DeviceState& d, const PortState& p);
  void check_dcbx_mode(const DeviceState& d, const PortState& p);
  // traffic_class.cpp: the priority that CNPs and applications' default traffic class land on.
  void check_cnp_priority(const DeviceState& d, const PortState& p);
  void check_traffic_class(const DeviceState& d, const PortState& p);
  std::optional<std::pair<int, std::string>> wanted_tos(const DeviceState& d, const PortState& p,
                                                        const nlohmann::json& qos, const std::string& driver) const;
  // pcie.cpp
  void group_pcie_links();
  void check_pcie(const DeviceState& d);
  void check_pcie_single(const DeviceState& d);
  void check_pcie_shared(const std::vector<const DeviceState*>& functions);
  void check_read_request();
  // firmware.cpp
  void check_firmware();
  // irq.cpp: where a function's interrupts run against its NUMA node.
  void check_interrupts();
  void check_irqbalance();
  // gpu.cpp: each GPU's nearest RDMA NIC in the PCI tree, by NCCL's path classes.
  void check_gpu_pairing();
  // access.cpp: locked memory limits and the RDMA device files.
  void check_memlock();
  void check_device_access();
  void pin_firmware_note(const std::string& adapter, const DeviceState& first, const FirmwareView& fw);

  const HostState& state_;
  const NodeSpec* spec_;
  DoctorReport report_;
  // PCI device (domain:bus:device) -> its functions that report a link, lowest function first.
  std::map<std::string, std::vector<const DeviceState*>> links_;
};

}  // namespace rdmactl::doctor_detail
