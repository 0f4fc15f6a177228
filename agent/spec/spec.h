// SPDX-License-Identifier: Apache-2.0
// The fabric spec (apiVersion rdmactl/v1) as typed data.
//
// Every optional field is "not managed" when empty: the diff never touches what the spec leaves out.
// load_spec() turns YAML into a FabricSpec (structure checked against
// schemas/fabric-spec.schema.json, then semantic checks); merge_for_node() folds `defaults` and the
// matching `nodes` entries into the NodeSpec that one host converges to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

// Where a spec element came from, for errors found after loading (e.g. a selector that matches
// nothing on this host).
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  // e.g. nodes[0].interfaces[1]

  bool operator==(const SourceMark&) const = default;
};

// Selects one port/netdev: exactly one of name (netdev), pci, rdmaDevice; port defaults to 1.
struct Selector {
  enum class Kind { kName, kPci, kRdmaDevice };
  Kind kind = Kind::kName;
  std::string value;
  int port = 1;  // meaningful for kPci and kRdmaDevice

  // Stable identity used for matching entries across defaults/nodes: "name=ens1f0np0",
  // "pci=0000:3b:00.0/1", "rdmaDevice=mlx5_0/1".
  std::string key() const;
  // For messages: "netdev ens1f0np0", "rdmaDevice mlx5_0 port 1".
  std::string describe() const;
  bool operator==(const Selector& other) const { return key() == other.key(); }
};

struct QosSpec {
  std::optional<std::string> profile;        // "roce-lossless" shorthand (expanded by the qos issue)
  std::optional<int> profile_priority;       // priority for the profile, default 3
  std::optional<std::string> trust;          // dscp | pcp
  std::optional<std::map<int, int>> dscp_to_priority;  // DSCP 0-63 -> priority 0-7
  std::optional<std::vector<int>> pfc;       // priorities with PFC on (sorted, unique)

  bool operator==(const QosSpec&) const = default;
};

struct EcnSpec {
  std::optional<std::vector<int>> priorities;  // sorted, unique
  std::optional<int> cnp_dscp;

  bool operator==(const EcnSpec&) const = default;
};

struct RoceSpec {
  std::optional<std::string> mode;  // v1 | v2
  std::optional<int> tos;           // 0-255

  bool operator==(const RoceSpec&) const = default;
};

struct IpoibSpec {
  std::optional<std::string> mode;  // datagram | connected

  bool operator==(const IpoibSpec&) const = default;
};

// The adapter's firmware (both ports of a dual-port card share it), selected through any of its
// interfaces: the wanted version, where images are, and what rdmactl may do about a mismatch.
struct FirmwareSpec {
  std::optional<std::string> version;     // "28.42.1000"
  std::optional<std::string> images;      // a directory of images; a relative one is the spec file's
  std::optional<std::string> policy;      // validate (the default): a mismatch is an error | update: burn
  std::optional<std::string> activation;  // reboot (the default) | reset: mstfwreset or devlink fw_activate
  // An activation by reset may take down a netdev that carries a default route (the host's
  // management path): refused unless this is true.
  std::optional<bool> allow_management_outage;
  SourceMark origin;                      // the firmware map the version came from, for messages
  bool any() const { return version || images || policy || activation || allow_management_outage; }

  bool operator==(const FirmwareSpec&) const = default;
};

// SR-IOV of the interface's PCI function (`sriov:`): how many VFs it has. The firmware must allow
// them (SRIOV_EN, NUM_OF_VFS, staged for the next boot by the nvconfig reconciler); then sysfs
// sriov_numvfs creates them (reconcilers/sriov).
struct SriovSpec {
  std::optional<int> num_vfs;  // 0-kMaxVfs

  bool operator==(const SriovSpec&) const = default;
};

// Firmware parameters of the interface's PCI function (`nvconfig:`), by the names `mstconfig -d
// <bdf> q` prints (ADVANCED_PCI_SETTINGS, NUM_OF_VFS, PCI_DOWNSTREAM_PORT_OWNER[4]), each value as
// the spec writes it: a boolean as "True" or "False", an integer in decimal, an enum name as given
// ("ETH", "DEVICE_DEFAULT"). Staged for the next boot (reconcilers/nvconfig).
using NvconfigSpec = std::map<std::string, std::string>;

// The PCI function's runtime PCIe settings (`pcie:`; `pci:` is the selector), in its PCI Express
// capability's Device Control register; lost at a reset or reboot, set again by the next reconcile
// (reconcilers/pcie).
struct PcieSpec {
  std::optional<int> max_read_request;  // bytes: 128, 256, 512, 1024, 2048 or 4096

  bool operator==(const PcieSpec&) const = default;
};

// The netdev's queues and pause frames through the kernel's ethtool netlink family (`ethtool:`,
// reconcilers/ethtool). Every field is optional: an unset one is not managed.
struct EthtoolRingsSpec {
  std::optional<uint32_t> rx, rx_mini, rx_jumbo, tx;  // ETHTOOL_A_RINGS_{RX,RX_MINI,RX_JUMBO,TX}

  bool any() const { return rx || rx_mini || rx_jumbo || tx; }
  bool operator==(const EthtoolRingsSpec&) const = default;
};
struct EthtoolChannelsSpec {
  std::optional<uint32_t> rx, tx, other, combined;  // ETHTOOL_A_CHANNELS_{RX,TX,OTHER,COMBINED}_COUNT

  bool any() const { return rx || tx || other || combined; }
  bool operator==(const EthtoolChannelsSpec&) const = default;
};
struct EthtoolPauseSpec {
  std::optional<bool> autoneg, rx, tx;  // ETHTOOL_A_PAUSE_{AUTONEG,RX,TX}: global (802.3x) pause

  bool any() const { return autoneg || rx || tx; }
  bool operator==(const EthtoolPauseSpec&) const = default;
};
struct EthtoolSpec {
  EthtoolRingsSpec rings;
  EthtoolChannelsSpec channels;
  EthtoolPauseSpec pause;

  bool any() const { return rings.any() || channels.any() || pause.any(); }
  bool operator==(const EthtoolSpec&) const = default;
};

struct InterfaceSpec {
  Selector selector;
  std::optional<std::string> link_type;  // ethernet | infiniband
  FirmwareSpec firmware;
  std::optional<int> mtu;
  std::optional<std::string> state;      // up | down
  std::optional<std::vector<std::string>> addresses;  // CIDR, canonical text, in spec order
  QosSpec qos;
  EcnSpec ecn;
  RoceSpec roce;
  IpoibSpec ipoib;
  SriovSpec sriov;
  NvconfigSpec nvconfig;
  PcieSpec pcie;
  // Where the PCI function's interrupts may run (`irqAffinity:`, reconcilers/irq_affinity): "local",
  // the CPUs of the function's NUMA node. Unset: not managed (irqbalance or the driver places them).
  std::optional<std::string> irq_affinity;
  EthtoolSpec ethtool;
  // The rail this port is cabled to (`rail: NAME`): the cross-node checks compare subnets and MTUs
  // only among the ports of one named rail, whatever their selectors on each node role.
  std::optional<std::string> rail;
  SourceMark origin;
  // Where a nodes: entry merged over this interface set a field ("mtu", "addresses"), when one did:
  // a finding about that field names the entry that says it, not the one that introduced the
  // interface. origin_of(field) is that, or `origin`.
  std::map<std::string, SourceMark> field_origins;
  // Where each field this interface's entries write is, by its path below the interface ("mtu",
  // "qos", "qos.pfc", "firmware.version"): the entry that set it last wins, as in the merge. For
  // reports that point at the line a change comes from (JUnit).
  std::map<std::string, SourceMark> field_marks;
  // The line of `field` ("qos.pfc"), else of its mapping ("qos": a profile sets qos.pfc), else of
  // the entry that set it (origin_of without the path suffix).
  SourceMark mark_of(const std::string& field) const;
  SourceMark origin_of(const std::string& field) const {
    auto it = field_origins.find(field);
    SourceMark mark = it != field_origins.end() ? it->second : origin;
    mark.path += (mark.path.empty() ? "" : ".") + field;
    return mark;
  }

  bool operator==(const InterfaceSpec&) const = default;
};

// One partition of OpenSM's partitions.conf (subnetManager.partitions): its line is
// `name=pkey[, ipoib][, mtu=CODE][, rate=CODE][, sl=N] : member=membership, ... ;`.
struct PartitionMemberSpec {
  std::string who;         // ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF, or a port GUID "0x" + 16 hex digits
  std::string membership;  // full, limited or both

  bool operator==(const PartitionMemberSpec&) const = default;
};
struct PartitionSpec {
  std::string name;
  int pkey = 0;                // 0x0001-0x7fff (the membership bit is the members' business)
  bool ipoib = false;          // OpenSM creates the IPoIB broadcast group in it
  std::optional<int> mtu;      // bytes: 256, 512, 1024, 2048 or 4096
  std::optional<double> rate;  // Gb/s, one OpenSM has a code for
  std::optional<int> sl;       // 0-15
  std::vector<PartitionMemberSpec> members;
  SourceMark origin;           // the list item, for messages

  bool operator==(const PartitionSpec&) const = default;
};

struct SubnetManagerSpec {
  std::optional<bool> enabled;
  std::optional<int> priority;  // 0-15
  std::optional<Selector> port;
  // The whole of partitions.conf's definitions, in order; unset: the file is not managed.
  std::optional<std::vector<PartitionSpec>> partitions;
  // The InfiniBand subnet of `port` (without one, of the node's InfiniBand ports), OpenSM or not:
  // the subnet this SM serves (`subnet: NAME`); unset: the fabric's one subnet. SMs of different
  // subnets never compete in an election (fleet checks sm-priority, sm-missing).
  std::optional<std::string> subnet;
  // Where priority (else enabled, else the subnetManager mapping) was last set, for findings.
  SourceMark origin;

  bool operator==(const SubnetManagerSpec&) const = default;
};

struct SelftestSpec {
  std::optional<bool> enabled;
  std::optional<double> min_bandwidth_ratio;
  std::optional<std::vector<std::string>> peers;

  bool operator==(const SelftestSpec&) const = default;
};

// One rail of a rail-optimised fabric (top-level `rails:`): the ports that name it (`rail:` on an
// interface) are cabled to the same leaf; `subnet` lists the subnets their addresses must be in
// (several for a design with a subnet per scalable unit), `mtu` the MTU every one must have.
struct RailSpec {
  std::string name;
  std::vector<std::string> subnets;  // canonical network CIDRs ("10.0.1.0/24"); empty: not declared
  std::optional<int> mtu;
  SourceMark origin;

  bool operator==(const RailSpec&) const = default;
};

struct NodeSpec {
  std::vector<InterfaceSpec> interfaces;
  SubnetManagerSpec subnet_manager;
  std::map<std::string, std::string> sysctl;  // key in sysctl(8)'s dotted form -> value
  // Where each sysctl key was last set (the entry that wins the merge), for plan errors.
  std::map<std::string, SourceMark> sysctl_origins;
  SelftestSpec selftest;
  // The spec's `rails:` declarations (top level), copied by merge_for_node so that the cross-node
  // checks, which see merged NodeSpecs, know them.
  std::vector<RailSpec> rails;

  bool operator==(const NodeSpec&) const = default;
};

struct NodeEntry {
  std::vector<std::string> match;  // globs (fnmatch) against the node name
  NodeSpec spec;
  SourceMark origin;

  bool operator==(const NodeEntry&) const = default;
};

// What the InfiniBand fabric should be (`fabric:`, top level beside defaults): `rdmactl fabric`
// reports where the subnet it scans differs. Every field is optional; without linkWidth and
// linkSpeed a link is compared with what both of its ends support.
struct FabricExpectation {
  std::optional<int> link_width;          // lanes: 1, 2, 4, 8 or 12 (the spec writes "4x")
  std::optional<std::string> link_speed;  // SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR
  std::optional<int> switches;            // how many switches the subnet has
  std::optional<int> cas;                 // how many channel adapters (HCAs) it has
  std::optional<int> subnet_managers;     // how many ports run an SM (IsSM), master included
  // PortCounters name as ibqueryerrors spells it (SymbolErrorCounter, ...) -> the most allowed;
  // a counter not named keeps ibqueryerrors' default (0: any error is a finding).
  std::map<std::string, uint64_t> thresholds;
  SourceMark origin;  // the `fabric` mapping, for messages

  bool operator==(const FabricExpectation&) const = default;
};

struct SpecWarning {
  std::string check;  // "cnp-pfc"
  Diagnostic diagnostic;

  bool operator==(const SpecWarning&) const = default;
};

struct FabricSpec {
  std::string file;    // as given on the command line ("-" shows as "<stdin>"); bytes that are
                       // not UTF-8 or are control characters shown escaped (it goes into JSON)
  std::string sha256;  // of the spec's bytes
  std::string text;    // the spec's bytes, for apply's journal (an interrupted run's recovery)
  std::string name;    // metadata.name
  NodeSpec defaults;
  std::vector<NodeEntry> nodes;
  std::optional<FabricExpectation> fabric;
  std::vector<RailSpec> rails;  // top-level `rails:`, in spec order
  // What is legal but most likely a mistake (say, CNPs on a PFC priority), in file order: validate
  // prints them as "file:line:column: path: warning [check] message" (spec_warning_findings in
  // agent/fleet/checks.h); they never make a spec invalid.
  std::vector<SpecWarning> warnings;

  bool operator==(const FabricSpec&) const = default;
};

// A spec is a few kilobytes; anything near this is a mistake or an attack (a spec path pointed
// at a log, an endless device). Larger input is refused before it is parsed.
// The most VFs a spec may ask of one PCI function: the PCI SR-IOV capability's TotalVFs is 16 bits,
// and sriov_numvfs_store (drivers/pci/iov.c) parses the count with kstrtou16.
inline constexpr int kMaxVfs = 65535;

inline constexpr std::size_t kMaxSpecBytes = 4 * 1024 * 1024;

// Loads and validates a spec from a file, or standard input when path is "-".
// On failure: kInvalidSpec with every problem in Error::diagnostics (file:line:column, field path).
// Only a regular file of at most kMaxSpecBytes is read, without blocking (a FIFO or a device is
// refused after a stat, see input.h); standard input is read up to kMaxSpecBytes + 1 bytes.
// The text must be UTF-8 without control characters other than tab, CR and LF.
// What a spec path may name: a regular file only (the agent, which must never block on a FIFO
// nobody writes), or a pipe too (a command line: `-f <(render spec)`, `-f /dev/stdin` on a pipe,
// read with standard input's bounds and blocking as it does).
enum class SpecInput { kRegularFile, kFileOrPipe };
Result<FabricSpec> load_spec(const std::string& path, SpecInput input = SpecInput::kRegularFile);
// Same, from text already in memory; `file` is the name used in messages.
Result<FabricSpec> load_spec_text(const std::string& text, const std::string& file);
// load_spec in two steps: the bytes of `path` ("-": standard input), within the same bounds, and
// the name they are shown under (escaped; "<stdin>" for "-").
Result<std::string> read_spec_input(const std::string& path, SpecInput input = SpecInput::kRegularFile);
std::string spec_input_name(const std::string& path);

// The roce-lossless profile (as NVUE's `nv set qos roce`): RDMA traffic marked DSCP 26 on
// priority 3 (or the profile's priority), trust DSCP, PFC on that priority only, DCQCN (ECN) on
// every priority as NVIDIA keeps it, CNPs on DSCP 48 / priority 6, and rdma_cm sending ToS 106
// (DSCP 26 with ECT(0)).
inline constexpr const char* kRoceLosslessProfile = "roce-lossless";
inline constexpr int kRoceLosslessPriority = 3;
inline constexpr int kRoceDscp = 26;
inline constexpr int kCnpDscp = 48;
inline constexpr int kCnpPriority = 6;
inline constexpr int kEcnCapable = 2;  // ECT(0) in the ToS byte's two low bits

// Expands every `qos.profile` of a merged NodeSpec into the explicit fields it stands for, so
// that plan shows (and apply converges) the expanded values. Fields the spec sets explicitly in
// ecn and roce are kept.
void expand_qos_profiles(NodeSpec& spec);

// The spec field that sets firmware parameter `param` through another reconciler, when one does, so
// that nvconfig never sets it too: LINK_TYPE_P<n> is linkType's (reconcilers/link_type),
// ROCE_CC_PRIO_MASK_P<n> ecn.priorities' (reconcilers/ecn stages it on the upstream driver),
// CNP_DSCP_P<n> ecn.cnpDscp's when the interface sets ecn.cnpDscp (ecn writes the CNP DSCP at
// runtime, mlx5 debugfs cc_params/np_cnp_dscp, over the firmware's value at every boot). Two writers
// of one value would undo each other at every reconcile. validate asks it of each entry; the nvconfig
// reconciler's diff of the merged interface (a nodes entry's ecn over the defaults' nvconfig).
std::optional<std::string> nvconfig_owner(const std::string& param, const InterfaceSpec& iface);
// Whether firmware parameter `param` is `base` + "_P<n>": one of mlxconfig's per-port parameters
// (mstflint MlxcfgDBManager::getMlxconfigNamePortModule splits the suffix off).
bool is_port_parameter(std::string_view param, std::string_view base);

// defaults, then every nodes entry whose globs match `node`, in order; interfaces merged field by
// field, matched by selector key; sysctl merged key by key; subnetManager and selftest field by
// field; then qos profiles expanded (expand_qos_profiles).
NodeSpec merge_for_node(const FabricSpec& spec, const std::string& node);

// Whether any of the entry's globs matches the node name (fnmatch, no flags).
bool entry_matches_node(const NodeEntry& entry, const std::string& node);

// "3b:00.0" or "0000:3B:00.0" -> "0000:3b:00.0", the form sysfs uses; std::nullopt when the text
// is not a PCI address ([domain:]bus:device.function).
std::optional<std::string> canonical_pci_address(const std::string& text);

}  // namespace rdmactl
