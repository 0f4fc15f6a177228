// SPDX-License-Identifier: Apache-2.0
// What the reconcilers of a PCI function's settings share (sriov, pcie, nvconfig): which functions to observe,
// the spec entries that name one function (several selectors may), and reading a concern's
// observed JSON out of HostState::pci_functions. Their resource is "pci/<bdf>".
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/engine/reconciler.h"

namespace rdmactl::reconcilers {

inline std::string pci_resource(const std::string& bdf) { return "pci/" + bdf; }
// "pci/0000:3b:00.0" -> "0000:3b:00.0".
Result<std::string> pci_of_resource(const std::string& resource);

// The functions to observe: those the spec's interfaces with `wanted` resolve to; with no spec
// (show), every RDMA device's function that the host lists under /sys/bus/pci/devices.
std::vector<std::string> pci_functions_to_observe(const HostFs& fs, const NodeSpec* spec, const HostState& state,
                                                  const std::function<bool(const InterfaceSpec&)>& wanted);

// The PF of a VF: the target of /sys/bus/pci/devices/<bdf>/physfn, which the kernel links for
// VFs only (drivers/pci/iov.c pci_iov_sysfs_link); nullopt for any other function.
std::optional<std::string> physical_function_of(const HostFs& fs, const std::string& bdf);

// One spec interface that sets the concern, and the PCI function it resolves to.
struct PciTarget {
  const InterfaceSpec* iface = nullptr;
  std::string pci;
};

// The interfaces with `wanted` set, by function; a selector that resolves to no function is a diff
// error. Two entries that name one function with different values (`value_of`) are an error on
// the second; equal ones are planned once.
std::vector<PciTarget> pci_targets(const NodeSpec& spec, const HostState& state, DiffResult& out,
                                   const std::function<bool(const InterfaceSpec&)>& wanted,
                                   const std::function<nlohmann::json(const InterfaceSpec&)>& value_of,
                                   const std::string& field);

// The observed JSON of one concern of a function (`member` of its PciFunctionState), or the error
// diff reports: not observed, not in the recorded state, not an object, or {"error": ...}.
Result<const nlohmann::json*> observed_pci_json(const HostState& state, const std::string& pci,
                                                std::optional<nlohmann::json> PciFunctionState::*member,
                                                const std::string& what);

// The PCI vendor ID of NVIDIA's (Mellanox's) adapters, as sysfs `vendor` reads it
// (include/linux/pci_ids.h PCI_VENDOR_ID_MELLANOX): mstconfig configures no others.
inline constexpr const char* kMellanoxVendor = "0x15b3";

// The PCI vendor of `pci` when the nvconfig reconciler's observe found it is not NVIDIA's (its
// {"vendor": ...}, reconcilers/nvconfig/nvconfig.h); nullopt otherwise.
std::optional<std::string> other_vendor_of(const HostState& state, const std::string& pci);

// Whether SR-IOV of `pci` has a firmware side (SRIOV_EN, NUM_OF_VFS) that the nvconfig reconciler
// stages: not on another vendor's function, nor on one whose driver is known and is not mlx4/mlx5
// (ixgbe, ice, bnxt_en, nvme, ...), whose VFs are sriov_numvfs' alone. The driver is the PF's as the
// sriov reconciler observed it, else that of a netdev on the function. nvconfig (what it stages)
// and sriov (whether a count above sriov_totalvfs waits for a reboot) ask this one function, so
// that they never disagree.
bool sriov_in_nvidia_firmware(const HostState& state, const std::string& pci);

// Whether sriov.numVfs `num_vfs` on `pci` needs the firmware's SR-IOV parameters: the function has
// no SR-IOV capability now (a ConnectX with SRIOV_EN off shows none) or offers fewer VFs
// (sriov_totalvfs). When it offers enough, sysfs alone makes them and mstconfig is not asked: a
// host without mstflint, or where it cannot open the device, still gets its VFs. From the sriov
// reconciler's observed state; before that (the nvconfig reconciler observes first) from sysfs
// through `fs`; with neither, whether the nvconfig reconciler asked mstconfig. A VF (physfn)
// needs nothing: the sriov reconciler refuses it.
bool sriov_needs_firmware(const HostState& state, const HostFs* fs, const std::string& pci, int num_vfs);

// The firmware parameter that gives an NVIDIA function its VF count (its TotalVFs): PF_NUM_OF_VF,
// the function's own, when PF_NUM_OF_VF_VALID is True; NUM_OF_VFS, one for every PF of the adapter,
// when it is False (mstflint's mlxconfig_host.db: "When TRUE, the number of VFs is defined for each
// networking PF individually in PF_NUM_OF_VF"; NUM_OF_VFS is "Valid when PF_NUM_OF_VF_VALID is
// FALSE"). `next_boot`: after the next boot, where the spec's PF_NUM_OF_VF_VALID (when `iface` sets
// it) decides over the staged value; else what the firmware runs. From the mstconfig table the
// nvconfig reconciler observed; NUM_OF_VFS when it was not observed.
std::string firmware_vf_count_param(const HostState& state, const std::string& pci, const InterfaceSpec& iface,
                                    bool next_boot);

}  // namespace rdmactl::reconcilers
