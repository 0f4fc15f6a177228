// SPDX-License-Identifier: Apache-2.0
// FixtureKernel: models of the kernel files rdmactl writes, behind a fixture tree (HostFs's
// KernelModel seam). Each attribute takes exactly what its kernel store function takes and then
// reads back what its show function prints; each rule carries a comment naming the function and
// source it follows. A behaviour no source shows is left out (and said so), never guessed.
//
//   auto kernel = std::make_shared<test::FixtureKernel>();
//   kernel->add_rdma_cm_device("mlx5_0", {test::RdmaCmPort{}});
//   fs.set_kernel_model(kernel);
//   ... apply ...; EXPECT_EQ(kernel->rdma_cm_port("mlx5_0", 1).tos, 106);
//
// Modelled:
//  - configfs rdma_cm (drivers/infiniband/core/cma_configfs.c, cma.c, cache.c): mkdir of a device
//    group, its ports/<n>/default_roce_mode and default_roce_tos, rmdir; the values live in the
//    cma_device, so they survive the directory.
//  - the vendor (MLNX/DOCA-OFED) mlx5 driver's /sys/class/net/<if>/ecn/{roce_np,roce_rp}/enable/<p>
//    and roce_np/cnp_dscp (en_ecn.c of the MLNX_OFED-derived tree oracle/linux-uek f57c630, and the
//    layout of en_sysfs.c in knneth/mlnx-ofa_kernel 16568c9).
//  - the upstream mlx5_ib debugfs DCQCN parameters /sys/kernel/debug/mlx5/<pci>/cc_params/<name>
//    (drivers/infiniband/hw/mlx5/cong.c).
//  - an IPoIB netdev's /sys/class/net/<ib>/mode (drivers/infiniband/ulp/ipoib: ipoib_set_mode,
//    show_mode), with the MTU it resets.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/platform/host_fs.h"

namespace rdmactl::test {

// One port of an RDMA device as rdma_cm keeps it (struct cma_device's default_gid_type[] and
// default_roce_tos[]), and which GID types the port has (roce_gid_type_mask_support).
struct RdmaCmPort {
  bool roce_v1 = true;   // IB_GID_TYPE_ROCE supported (rdma_protocol_roce_eth_encap)
  bool roce_v2 = true;   // IB_GID_TYPE_ROCE_UDP_ENCAP supported (rdma_protocol_roce_udp_encap)
  // cma_add_one: RoCE v2 where the port supports it (CMA_PREFERRED_ROCE_GID_TYPE), ToS 0.
  std::string mode = "RoCE v2";
  unsigned tos = 0;
};

class FixtureKernel final : public HostFs::KernelModel {
 public:
  // An RDMA device rdma_cm knows (a group may be made for it), with its ports 1..N.
  void add_rdma_cm_device(const std::string& name, std::vector<RdmaCmPort> ports);
  const RdmaCmPort& rdma_cm_port(const std::string& device, int port) const;

  // The vendor driver's ecn/ tree of `netdev`: the fixture holds its files; writes follow the
  // driver's store functions.
  void add_mlx5_vendor_ecn(const std::string& netdev);

  // An IPoIB netdev whose mode file the fixture holds: `connected_mode` is IPOIB_CM_SUPPORTED
  // (the RC flag of a legacy IPoIB netdev's address); `broadcast_mtu` the IB MTU of the broadcast
  // group the subnet manager made (OpenSM's default partition: 2048).
  void add_ipoib_netdev(const std::string& netdev, bool connected_mode, int broadcast_mtu = 2048);

  // The upstream driver's cc_params of PCI function `pci`: the fixture holds its files.
  void add_mlx5_cc_params(const std::string& pci);

  // Failure injection: the next write to `path` fails with `err` (EIO: a firmware command that
  // failed), whatever the store function would do.
  void refuse_next_write(const std::string& path, int err) { refused_[path] = err; }

  struct Write {
    std::string path;   // host path
    std::string value;  // the bytes written
    int result = 0;     // 0, or the errno the store function returned
  };
  // Every write to a modelled file, accepted or refused, in order.
  const std::vector<Write>& writes() const { return writes_; }
  // Writes whose host path starts with `prefix`.
  size_t write_count(std::string_view prefix = "") const;
  void clear_writes() { writes_.clear(); }
  // mkdir and rmdir of rdma_cm device groups, for assertions.
  int rdma_cm_mkdirs() const { return mkdirs_; }
  int rdma_cm_rmdirs() const { return rmdirs_; }

  std::optional<int> stored(std::string_view path, const std::string& real_path, const std::string& previous,
                            std::string_view value) override;
  std::optional<int> made_directory(std::string_view path, const std::string& real_path) override;
  void removing_directory(std::string_view path, const std::string& real_path) override;

 private:
  std::optional<int> store_rdma_cm(std::string_view path, const std::string& real_path, std::string_view value);
  std::optional<int> store_vendor_ecn(std::string_view path, const std::string& real_path,
                                      const std::string& previous, std::string_view value);
  std::optional<int> store_ipoib_mode(std::string_view path, const std::string& real_path,
                                      const std::string& previous, std::string_view value);
  std::optional<int> store_cc_param(std::string_view path, const std::string& real_path,
                                    const std::string& previous, std::string_view value);

  std::map<std::string, std::vector<RdmaCmPort>> rdma_cm_;
  std::map<std::string, int> refused_;
  std::vector<std::string> vendor_ecn_;  // netdevs
  std::vector<std::string> cc_params_;   // PCI functions
  struct Ipoib {
    bool connected_mode;
    int broadcast_mtu;
  };
  std::map<std::string, Ipoib> ipoib_;
  std::vector<Write> writes_;
  int mkdirs_ = 0;
  int rmdirs_ = 0;
};

// The 20 parameter files of cc_params in kernels from 2020 to 2023 (mlx5_ib_dbg_cc_name, without
// the two rtt_resp_dscp files that need the roce_cc_general capability), with the firmware's
// default values (ConnectX-4 Lx `mstconfig -e q` capture: ROCE_CC_* / RPG_* / CNP_* rows;
// np_cnp_prio_mode's default is in no capture: 0, CNP_802P_PRIO used, is assumed).
const std::vector<std::pair<std::string, unsigned>>& mlx5_cc_params_defaults();

// Writes the files of a cc_params directory for `pci` under a fixture root, as "%u\n".
void write_mlx5_cc_params(const std::string& root, const std::string& pci);

}  // namespace rdmactl::test
