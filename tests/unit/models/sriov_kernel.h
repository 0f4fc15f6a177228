// SPDX-License-Identifier: Apache-2.0
// SriovKernel: a model of a PF's sriov_numvfs behind a fixture tree (HostFs's KernelModel seam), from
// the kernel's drivers/pci/iov.c (sriov_numvfs_store, sriov_enable, sriov_disable,
// pci_iov_add_virtfn, pci_iov_sysfs_link, pci_iov_virtfn_bus/devfn) and, for a PF under mlx5_core,
// drivers/net/ethernet/mellanox/mlx5/core/sriov.c (mlx5_core_sriov_configure, mlx5_sriov_disable).
// A write to sriov_numvfs takes exactly what sriov_numvfs_store takes, and leaves in the tree what
// the kernel makes: the PF's virtfn<N> links, each VF's directory with its physfn link, its
// /sys/bus/pci/devices link, and its netdev once a driver probes it.
//
// Not modelled: drivers other than mlx5_core and "a driver without sriov_configure"; the VF's
// driver binding (sriov_drivers_autoprobe); SR-IOV through the firmware (that is nvconfig's).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/platform/host_fs.h"

namespace rdmactl::test {

struct SriovPf {
  std::string bdf;         // 0000:3b:00.0
  std::string device_dir;  // its host path under /sys/devices
  int total_vfs = 8;       // pci_sriov_get_totalvfs
  // The bound driver: "mlx5_core" (mlx5_core_sriov_configure), "" none bound, or "no-sriov-configure"
  // (a driver whose pci_driver has no .sriov_configure).
  std::string driver = "mlx5_core";
  int vf_offset = 2;     // First VF Offset of the SR-IOV capability (routing IDs after the PF's)
  int vf_stride = 1;     // VF Stride
  std::string netdev;    // the PF's netdev: a VF's is <netdev>v<N> (systemd's naming of mlx5 VFs)
  int assigned_vfs = 0;  // VFs a guest holds (PCI_DEV_FLAGS_ASSIGNED, counted by pci_vfs_assigned)
  // Whether the driver's sriov_configure refuses to disable SR-IOV while VFs are assigned (-EPERM):
  // ixgbe's ixgbe_pci_sriov_disable and older mlx5 ("cannot modify number of VFs while VFs are
  // assigned") do; Linux 6.1's mlx5_sriov_disable does not check (pci_disable_sriov at once).
  bool refuses_assigned = false;
  // The driver each new VF binds to (sriov_drivers_autoprobe): mlx5_core gives it a netdev.
  std::string vf_driver = "mlx5_core";
  // How many VFs the IOV BAR space the BIOS reserved holds: more is sriov_enable's "not enough
  // MMIO resources for SR-IOV" (-ENOMEM: vf_bar_sz * nr_virtfn > resource_size).
  std::optional<int> mmio_room_vfs;
  // A driver that enables fewer VFs than asked (sriov_numvfs_store warns "only %d enabled").
  std::optional<int> enables_at_most;
};

class SriovKernel final : public HostFs::KernelModel {
 public:
  explicit SriovKernel(std::string root) : root_(std::move(root)) {}
  // Writes the PF's sriov_totalvfs and sriov_numvfs (0) files and its driver link.
  void add_pf(SriovPf pf);
  SriovPf& pf(const std::string& bdf) { return pfs_.at(bdf); }
  // The PF's num_VFs, as sriov_numvfs_show prints it.
  int num_vfs(const std::string& bdf) const { return num_vfs_.at(bdf); }

  struct Write {
    std::string value;
    int result = 0;  // 0 or the errno
  };
  const std::vector<Write>& writes() const { return writes_; }

  std::optional<int> stored(std::string_view path, const std::string& real_path, const std::string& previous,
                            std::string_view value) override;
  std::optional<int> made_directory(std::string_view, const std::string&) override { return std::nullopt; }
  void removing_directory(std::string_view, const std::string&) override {}

 private:
  int store(const std::string& bdf, std::string_view value);
  int configure(SriovPf& pf, int num_vfs);
  void add_vfs(const SriovPf& pf, int count);
  void remove_vfs(const SriovPf& pf);
  std::string vf_address(const SriovPf& pf, int id) const;
  void show(const std::string& bdf);

  std::string root_;
  std::map<std::string, SriovPf> pfs_;
  std::map<std::string, int> num_vfs_;
  std::vector<Write> writes_;
};

}  // namespace rdmactl::test
