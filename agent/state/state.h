// SPDX-License-Identifier: Apache-2.0
// HostState: what rdmactl observed on a host, in the contract's `show --format json` shape.
//
// The same structure is produced by observing a live host and by loading a recorded state
// (`plan --state FILE`), so that the pure diff cannot tell the two apart.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/spec/spec.h"

namespace rdmactl {

struct GidEntry {
  int index = 0;
  std::string gid;     // full 8x4-hex form, as sysfs writes it
  std::string type;    // "IB/RoCE v1" | "RoCE v2" | "" (InfiniBand ports have no type file)
  std::string netdev;  // "" on InfiniBand ports
};

struct PortState {
  int port = 1;
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  std::string state;       // "ACTIVE", "DOWN", "INIT", "ARMED", ...
  std::string phys_state;  // "LinkUp", "Disabled", "Polling", ...
  double rate_gbps = 0;
  std::string rate;           // as sysfs writes it: "100 Gb/sec (4X EDR)", "10 Gb/sec (4X)"
  std::optional<int> lid;     // InfiniBand only
  std::optional<int> sm_lid;  // InfiniBand only
  std::string netdev;
  std::vector<GidEntry> gids;
  std::map<std::string, nlohmann::json> counters;     // ports/N/counters: number, or "N/A (no PMA)"
  std::map<std::string, nlohmann::json> hw_counters;  // ports/N/hw_counters (driver-specific)
  // The firmware's port protocol (mstconfig LINK_TYPE_P<n>), in the spec's form:
  // {"default": "infiniband", "current": "ethernet", "nextBoot": "infiniband"}, or {"error": why}
  // when it could not be read; absent when not observed (no spec asks for it).
  std::optional<nlohmann::json> link_type;
  // The vendor (MLNX/DOCA-OFED) mlx5 driver's /sys/class/infiniband/<dev>/tc/<port>/traffic_class:
  // a traffic class forced on every QP of the port ("Global tclass=106"); nullopt when the file is
  // absent (upstream drivers) or holds no global value.
  std::optional<int> forced_traffic_class;
};

struct PcieLink {
  std::string speed;      // "8.0 GT/s PCIe"
  std::optional<int> width;
  std::string max_speed;
  std::optional<int> max_width;
};

struct DeviceState {
  std::string name;  // mlx5_0
  std::string pci;   // 0000:3b:00.0
  std::string fw_version;  // sysfs fw_ver: the running version only
  // The adapter firmware, observed by the firmware reconciler (its shape: reconcilers/firmware/
  // firmware.h; read it through agent/state/firmware.h); absent when not observed.
  std::optional<nlohmann::json> firmware;
  std::string node_guid;
  std::string hca_type;
  std::string board_id;
  // sysfs node_type's number (drivers/infiniband/core/sysfs.c show_node_type, "1: CA"): 1 CA,
  // 2 switch, 3 router, 4 RNIC (iWARP), 5 usNIC, 6 usNIC UDP; 0 where not read (the state's JSON
  // does not carry it). libibumad lists only types 1-3 (umad.c is_ib_type), so OpenSM does too.
  int node_type = 0;
  PcieLink pcie;
  std::vector<PortState> ports;
  // Where the PCI function sits and where its interrupts run, read for `doctor`
  // (agent/platform/irq_sysfs.h): {"numaNode": 0, "pciPath": "pci0000:3a/0000:3a:00.0/0000:3b:00.0",
  // "irqs": [{"irq": 45, "name": "mlx5_comp0@pci:0000:3b:00.0", "affinity": "0-15", "effective": "3"}]};
  // absent when not read.
  std::optional<nlohmann::json> interrupts;
};

struct NetdevState {
  std::string name;
  int ifindex = 0;
  int mtu = 0;
  std::string state;       // administrative state: "up" | "down" (the spec's `state`)
  std::string oper_state;  // the kernel's operational state: "up", "down", "lowerlayerdown", ...
  std::string mac;
  std::string kind;        // "veth", "bond", ... ; "" for hardware
  std::string pci;         // PCI address of the device behind it, "" when none
  // The kernel driver bound to that device (/sys/class/net/<n>/device/driver): "mlx5_core", ...;
  // "" for virtual netdevs. Reconcilers follow the driver's own rules (mlx5's DCB table).
  std::string driver;
  std::optional<int> dev_port;  // /sys/class/net/<n>/dev_port: 0-based port of a multi-port NIC
  // Addresses the spec manages: every address but IPv6 link-local (fe80::/10, which the kernel
  // assigns itself and RoCE needs for its link-local GIDs). Canonical CIDR text, sorted.
  std::vector<std::string> addresses;
  // Concerns observed by later reconcilers, in the spec's form; absent when not observed.
  std::optional<nlohmann::json> qos;
  std::optional<nlohmann::json> ecn;
  std::optional<nlohmann::json> roce;
  std::optional<nlohmann::json> ipoib;
  std::optional<nlohmann::json> ethtool;  // rings, channels, pause: reconcilers/ethtool/ethtool.h
  // Not part of a recorded state (to_json leaves them out): what the live observe knew besides.
  // The link's ARPHRD_* type from the link dump (ifi_type: 32 is IPoIB); 0 when not observed.
  unsigned arptype = 0;
  // Whether the netdev's sysfs (PCI function, driver, dev_port) was read: only for the netdevs the
  // spec or the RDMA inventory names (every netdev when there is no spec).
  bool sysfs_observed = false;
};

// One PCI function's settings that the spec manages whether or not it carries an RDMA device: its
// firmware parameters, SR-IOV and PCIe Device Control. Observed only for the functions a spec
// interface names with nvconfig, sriov or pci (show without a spec: every RDMA device's function
// for sriov and pcieControl, which cost a sysfs read each). Each concern's shape is documented by
// its reconciler (reconcilers/nvconfig, sriov, pci); absent when not observed.
struct PciFunctionState {
  std::string pci;  // 0000:3b:00.0
  std::optional<nlohmann::json> nvconfig;
  std::optional<nlohmann::json> sriov;
  std::optional<nlohmann::json> pcie_control;  // JSON "pcieControl"
  std::optional<nlohmann::json> irq_affinity;  // JSON "irqAffinity" (reconcilers/irq_affinity)
};

struct DeviceState;

// One port of one RDMA device, as a selector names it.
struct PortRef {
  const DeviceState* device = nullptr;
  const PortState* port = nullptr;
};

struct HostState {
  std::string node;
  std::vector<DeviceState> devices;
  std::vector<NetdevState> netdevs;
  nlohmann::json subnet_manager = nlohmann::json::object();
  std::map<std::string, std::string> sysctl;  // dotted key -> value as read (trailing newline cut)
  // By PCI address, lowest first (JSON "pciFunctions", a list): see PciFunctionState.
  std::vector<PciFunctionState> pci_functions;
  // The host's NUMA nodes and whether irqbalance runs, read for `doctor` with the devices'
  // interrupts (agent/platform/irq_sysfs.h): {"nodes": {"0": "0-15", "1": "16-31"}, "irqbalance":
  // false}; absent when not read (JSON "cpus").
  std::optional<nlohmann::json> cpus;
  // The host's NVIDIA GPUs, read for `doctor` with the interrupts (agent/platform/irq_sysfs.h):
  // [{"pci": "0000:18:00.0", "class": "0x030200", "numaNode": 0, "pciPath": "pci0000:17/..."}];
  // absent when not read, [] on a host without one (JSON "gpus").
  std::optional<nlohmann::json> gpus;
  // Locked memory limits, the RDMA device files and the RDMA netns mode, read for `doctor`
  // (agent/platform/rdma_access.h); absent when not read (JSON "access").
  std::optional<nlohmann::json> access;
  // Two samples of each RDMA Ethernet netdev's PFC, pause and discard counters, read for `doctor`
  // (agent/platform/lossless_sample.h); absent when not read (JSON "lossless").
  std::optional<nlohmann::json> lossless;
  // The file a recorded state came from (`plan --state`); empty for a live observation. Lets
  // messages say "not in the recorded state" rather than "not on this host".
  std::string recorded_from;

 private:
  std::unordered_map<std::string, size_t> netdev_index_;
 public:

  // Lookups by name go through an index of `netdevs` (index_netdevs()); a name the index does not
  // hold, or holds for another entry (netdevs changed since), is looked up the long way.
  const NetdevState* find_netdev(const std::string& name) const;
  NetdevState* find_netdev(const std::string& name);
  const DeviceState* find_device(const std::string& name) const;
  // Rebuilds the name index of `netdevs`; an observe and a recorded state's load end with it.
  void index_netdevs();
  // The netdev an interface selector names on this host, or kNotFound saying what is missing.
  Result<const NetdevState*> resolve(const Selector& selector) const;
  // The RDMA port a selector names: rdmaDevice+port directly, pci through the device on that
  // function, name through the port whose netdev it is. InfiniBand ports need no netdev here.
  Result<PortRef> resolve_port(const Selector& selector) const;
  // The PCI function a selector names: pci directly, rdmaDevice through its device's function,
  // name through the netdev's (kNotFound for a netdev without one: veth, a bond, a VLAN).
  Result<std::string> resolve_pci(const Selector& selector) const;
  const PciFunctionState* find_pci_function(const std::string& pci) const;
  // The entry of `pci`, added in address order when there is none. The reference is good until the
  // next entry is added.
  PciFunctionState& pci_function(const std::string& pci);
};

nlohmann::json to_json(const HostState& state);
// Parses a recorded state (`show --format json`). Unknown fields are ignored so that states
// recorded by newer versions still load; wrong types are errors naming the JSON path.
Result<HostState> host_state_from_json(const nlohmann::json& json);
// A recorded state is at most this large (a host with thousands of netdevs records a few MB) and
// nests no deeper (it is a few levels deep).
inline constexpr std::size_t kMaxStateBytes = 16u << 20;
inline constexpr int kMaxStateDepth = 32;
Result<HostState> load_host_state(const std::string& path);

}  // namespace rdmactl
