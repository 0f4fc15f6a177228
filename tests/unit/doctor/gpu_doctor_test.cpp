// SPDX-License-Identifier: Apache-2.0
// doctor's GPU and NIC pairing (agent/doctor/gpu.cpp) on the PCI tree of a two-socket GPU server as
// sysfs shows it (/sys/bus/pci/devices/<bdf> -> ../../../devices/pci<host bridge>/<root port>/
// <switch upstream port>/<downstream port>/<function>): each socket has a PCIe switch carrying two
// GPUs and one ConnectX, as rail-optimised servers are built. The classes are NCCL's (topo.h) and
// the PXB limit its GPUDirect RDMA default (paths.cc ncclTopoCheckGdr).
#include "agent/doctor/doctor.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmactl {
namespace doctor_gpu_doctor_test {

using json = nlohmann::json;

DeviceState nic(const std::string& name, const std::string& pci, const std::string& path, int node) {
  DeviceState d;
  d.name = name;
  d.pci = pci;
  d.interrupts = json{{"numaNode", node}, {"pciPath", path}, {"irqs", json::array()}};
  PortState p;
  p.state = "ACTIVE";
  d.ports = {p};
  return d;
}

json gpu(const std::string& pci, const std::string& path, int node) {
  return {{"pci", pci}, {"class", "0x030200"}, {"pciPath", path}, {"numaNode", node}};
}

HostState gpu_server() {
  HostState s;
  s.node = "gpu-01";
  s.devices = {nic("mlx5_0", "0000:1b:00.0", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:02.0/0000:1b:00.0", 0),
               nic("mlx5_1", "0000:9b:00.0", "pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:02.0/0000:9b:00.0", 1)};
  s.gpus = json::array({gpu("0000:1a:00.0", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1a:00.0", 0),
                        gpu("0000:1c:00.0", "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:03.0/0000:1c:00.0", 0),
                        gpu("0000:9a:00.0", "pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9a:00.0", 1)});
  return s;
}

std::vector<Finding> paths_of(const DoctorReport& r) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == "gpu-nic-path") out.push_back(f);
  }
  return out;
}

TEST(DoctorGpu, GpusBehindTheirNicsSwitchAreHealthyAndNoted) {
  const DoctorReport report = run_doctor(gpu_server(), nullptr);
  EXPECT_TRUE(paths_of(report).empty()) << to_json(report).dump(2);
  int pix = 0;
  for (const Note& n : report.notes) pix += n.message.find(" are PIX apart") != std::string::npos ? 1 : 0;
  EXPECT_EQ(pix, 3);
}

TEST(DoctorGpu, AGpuWhoseNearestNicIsOnTheOtherSocketIsFoundOnce) {
  HostState s = gpu_server();
  s.devices.pop_back();  // mlx5_1 gone: socket 1's GPU has only mlx5_0, across the sockets
  const auto found = paths_of(run_doctor(s, nullptr));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].resource, "pci/0000:9a:00.0");
  EXPECT_EQ(found[0].message,
            "GPU 0000:9a:00.0 and its nearest RDMA NIC mlx5_0 (0000:1b:00.0) are on different NUMA nodes (1 and 0), "
            "SYS apart: NCCL does not use GPUDirect RDMA beyond PXB by default (NCCL_NET_GDR_LEVEL), so this GPU's "
            "network traffic is copied through host memory unless PXN relays it through an NVLink peer");
}

TEST(DoctorGpu, DifferentRootPortsOfOneSocketArePhbAndASecondSwitchIsPxb) {
  HostState s = gpu_server();
  // The GPU on its own root port of socket 0's host bridge.
  (*s.gpus)[1]["pciPath"] = "pci0000:17/0000:17:03.0/0000:1c:00.0";
  auto found = paths_of(run_doctor(s, nullptr));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].resource, "pci/0000:1c:00.0");
  EXPECT_NE(found[0].message.find("behind different PCIe root ports or host bridges, PHB apart"), std::string::npos)
      << found[0].message;
  // Another host bridge of the same node: still PHB.
  (*s.gpus)[1]["pciPath"] = "pci0000:30/0000:30:01.0/0000:31:00.0";
  EXPECT_EQ(paths_of(run_doctor(s, nullptr)).size(), 1u);
  // Below a second switch under socket 0's: PXB, which NCCL still takes.
  (*s.gpus)[1]["pciPath"] = "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1d:00.0/0000:1e:01.0/0000:1c:00.0";
  const DoctorReport report = run_doctor(s, nullptr);
  EXPECT_TRUE(paths_of(report).empty());
  bool pxb = false;
  for (const Note& n : report.notes) pxb = pxb || n.message.find("0000:1c:00.0 and its nearest RDMA NIC mlx5_0 (0000:1b:00.0) are PXB apart") != std::string::npos;
  EXPECT_TRUE(pxb) << to_json(report).dump(2);
}

TEST(DoctorGpu, ANicWithoutAnActivePortIsNoCandidate) {
  // NCCL uses no port that is not ACTIVE: socket 1's GPU then has only mlx5_0, across the nodes.
  HostState s = gpu_server();
  s.devices[1].ports[0].state = "DOWN";
  const auto found = paths_of(run_doctor(s, nullptr));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].resource, "pci/0000:9a:00.0");
}

TEST(DoctorGpu, AVmsVpciBusesAreHostBridgesOfTheirOwn) {
  // Hyper-V: every vPCI bus is a host bridge below VMBUS; the components before it are not PCI, so
  // a GPU and a NIC on two buses of one node are PHB apart, as NCCL's xml.cc reads them.
  HostState s;
  s.node = "vm";
  s.devices = {nic("mlx5_0", "0101:00:00.0", "LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/b5a5d2f4-0101/pci0101:00/0101:00:00.0", 0)};
  s.gpus = json::array({gpu("0102:00:00.0", "LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/c2d2e1a0-0102/pci0102:00/0102:00:00.0", 0)});
  const auto found = paths_of(run_doctor(s, nullptr));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("PHB apart"), std::string::npos) << found[0].message;
}

TEST(DoctorGpu, NoGpusOrNoPlacementIsNotChecked) {
  HostState s = gpu_server();
  s.gpus = json::array();
  EXPECT_TRUE(run_doctor(s, nullptr).notes.empty());
  s = gpu_server();
  s.gpus.reset();  // a recorded state without them
  for (const Note& n : run_doctor(s, nullptr).notes) EXPECT_EQ(n.message.find("GPU"), std::string::npos);
}

}  // namespace doctor_gpu_doctor_test
}  // namespace rdmactl
