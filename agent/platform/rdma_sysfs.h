// SPDX-License-Identifier: Apache-2.0
// The RDMA inventory from sysfs: devices, ports, GIDs, counters, the netdev behind each port and
// the PCIe link of each device, as ibstat, ibv_devinfo, show_gids, ibdev2netdev and lspci show them.
//
// Everything is read through HostFs, so a fixture tree under --root and a live host are the same
// to this code. Parsers of single sysfs values are separate, pure functions (table-driven tests).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/state/state.h"

namespace rdmactl {

// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp". nullopt when the text has no "N: NAME" form.
std::optional<std::string> parse_port_state(const std::string& text);
// "100 Gb/sec (4X EDR)" -> 100, "10 Gb/sec (4X)" -> 10, "2.5 Gb/sec (1X SDR)" -> 2.5,
// "53.125 Gb/sec (1X HDR)" -> 53.125 (the kernel itself prints only whole numbers and ".5", as
// it counts in deci-Gb/s). nullopt when no rate can be read.
std::optional<double> parse_rate_gbps(const std::string& text);
// The link width of a rate string: "100 Gb/sec (4X EDR)" -> 4; nullopt when absent.
std::optional<int> parse_rate_width(const std::string& text);
// "0x1a" -> 26 (lid, sm_lid). nullopt when not hex.
std::optional<int> parse_hex_int(const std::string& text);
// The vendor mlx5 driver's tc/<port>/traffic_class ("Global tclass=106", possibly followed by
// per-address rules, one per line; empty when unset: MLNX_OFED main_ext.c): the global value, or
// nullopt when there is none.
std::optional<int> parse_forced_traffic_class(const std::string& text);
// A counter file: a decimal number, or the text itself ("N/A (no PMA)").
nlohmann::json parse_counter(const std::string& text);
// True for an all-zero GID ("0000:0000:...:0000"): an empty slot of the table.
bool is_empty_gid(const std::string& gid);
// True for a PCI function address, "0000:3b:00.0" (domain:bus:device.function; five-digit VMD
// domains too): what the `device` link of a PCI-backed RDMA device or netdev ends in.
bool is_pci_address(std::string_view text);

// Every device under /sys/class/infiniband, or only `names` when given (the list from RDMA netlink
// on a live host), sorted by name. A device whose ports cannot be listed is an error naming the
// path; no /sys/class/infiniband at all (RDMA core not loaded) is an empty list.
Result<std::vector<DeviceState>> read_rdma_devices(const HostFs& fs,
                                                   const std::vector<std::string>* names = nullptr);
Result<DeviceState> read_rdma_device(const HostFs& fs, const std::string& name);

}  // namespace rdmactl
