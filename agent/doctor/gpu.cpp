// SPDX-License-Identifier: Apache-2.0
// The doctor's GPU and NIC pairing, over HostState::gpus and each RDMA function's place in the PCI
// tree (DeviceState::interrupts' pciPath and numaNode, agent/platform/irq_sysfs.h). NCCL uses
// GPUDirect RDMA between a GPU and a NIC only when the path between them is at most PXB
// (src/graph/paths.cc ncclTopoCheckGdr: netGdrLevel = PATH_PXB unless NCCL_NET_GDR_LEVEL says
// otherwise); beyond it, every transfer is staged through host memory. The path classes are NCCL's
// (src/graph/topo.h), as xml.cc ncclTopoGetXmlFromSys builds the tree from the sysfs path (from the
// first PCI host bridge down, a switch's downstream port not counted as a hop):
//   PIX  at most one PCIe switch between them (two downstream ports of one switch)
//   PXB  several PCIe switches, below one root port
//   PHB  through the PCIe host bridge: different root ports or host bridges of one NUMA node
//        (nvidia-smi calls different host bridges of one node NODE; NCCL has no such class)
//   SYS  across the interconnect between NUMA nodes
// Not judged: NCCL's PXN (with NVLink, a peer GPU near a NIC relays: paths.cc), Grace's C2C path
// (not PCIe), and NICs without an ACTIVE port (NCCL skips them: transport/net_ib/init.cc).
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

enum class PathClass { kPix = 0, kPxb = 1, kPhb = 2, kSys = 3 };

const char* class_name(PathClass c) {
  switch (c) {
    case PathClass::kPix: return "PIX";
    case PathClass::kPxb: return "PXB";
    case PathClass::kPhb: return "PHB";
    case PathClass::kSys: return "SYS";
  }
  return "SYS";
}

// "pci0000:17" (a PCI host bridge's directory: pci<domain>:<bus>).
bool is_host_bridge(const std::string& part) {
  const size_t colon = part.find(':');
  return part.rfind("pci", 0) == 0 && colon != std::string::npos && colon > 3 && part.size() > colon + 1;
}

// The path from the function's PCI host bridge down: what comes before it (a VM's
// LNXSYSTM:00/.../VMBUS:01/<guid>/, an arm64 platform device) is not PCI, and each Hyper-V vPCI bus
// is a host bridge of its own.
std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty()) continue;
    if (is_host_bridge(part)) out.clear();
    out.push_back(part);
  }
  if (!out.empty() && !is_host_bridge(out.front())) out.clear();
  return out;
}

struct Placed {
  std::string pci;
  std::vector<std::string> path;  // host bridge ("pci0000:17"), bridges, the function
  long node = -1;
};

// The class of the path between two functions of the PCI tree. The bridges below the deepest
// common one are the switch ports each side goes through: one on each side is one switch (its
// downstream ports), more is a switch below a switch.
PathClass path_class(const Placed& a, const Placed& b) {
  if (a.node >= 0 && b.node >= 0 && a.node != b.node) return PathClass::kSys;
  if (a.path.empty() || b.path.empty() || a.path.front() != b.path.front()) return PathClass::kPhb;
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) ++common;
  if (common <= 1) return PathClass::kPhb;  // they meet at the host bridge: different root ports
  const size_t below_a = a.path.size() - common - 1, below_b = b.path.size() - common - 1;
  return std::max(below_a, below_b) <= 1 ? PathClass::kPix : PathClass::kPxb;
}

}  // namespace

void Doctor::check_gpu_pairing() {
  if (!state_.gpus || !state_.gpus->is_array() || state_.gpus->empty()) return;
  std::vector<std::pair<const DeviceState*, Placed>> nics;
  std::set<std::string> seen;
  for (const DeviceState& d : state_.devices) {
    if (!d.interrupts || !d.interrupts->is_object() || d.pci.empty() || !seen.insert(d.pci).second) continue;
    const bool active = std::any_of(d.ports.begin(), d.ports.end(), [](const PortState& p) { return p.state == "ACTIVE"; });
    if (!active) continue;  // NCCL uses no port that is not ACTIVE
    const std::string path = d.interrupts->value("pciPath", "");
    if (path.empty()) continue;
    nics.push_back({&d, Placed{d.pci, components(path), d.interrupts->value("numaNode", -1L)}});
  }
  if (nics.empty()) return;
  for (const nlohmann::json& g : *state_.gpus) {
    const Placed gpu{g.value("pci", ""), components(g.value("pciPath", "")), g.value("numaNode", -1L)};
    if (gpu.pci.empty() || gpu.path.empty()) continue;
    const DeviceState* best = nullptr;
    PathClass best_class = PathClass::kSys;
    for (const auto& [device, nic] : nics) {
      const PathClass c = path_class(gpu, nic);
      if (!best || c < best_class) {
        best = device;
        best_class = c;
      }
    }
    const std::string pair = "GPU " + gpu.pci + " and its nearest RDMA NIC " + best->name + " (" + best->pci + ")";
    if (best_class <= PathClass::kPxb) {
      report_.notes.push_back({"pci/" + gpu.pci, pair + " are " + class_name(best_class) +
                                                     " apart: NCCL uses GPUDirect RDMA between them"});
      continue;
    }
    std::string placement;
    for (const auto& [device, nic] : nics) {
      if (device == best) {
        placement = best_class == PathClass::kSys
                        ? "on different NUMA nodes (" + std::to_string(gpu.node) + " and " + std::to_string(nic.node) + ")"
                        : "behind different PCIe root ports or host bridges";
      }
    }
    add("gpu-nic-path", "warning", "pci/" + gpu.pci,
        pair + " are " + placement + ", " + class_name(best_class) +
            " apart: NCCL does not use GPUDirect RDMA beyond PXB by default (NCCL_NET_GDR_LEVEL), so this GPU's "
            "network traffic is copied through host memory unless PXN relays it through an NVLink peer",
        "put a NIC behind the same PCIe switch as the GPU (the server's manual pairs slots; rail-optimised "
        "servers have one NIC per GPU switch), or where the platform has no such slot, set NCCL_NET_GDR_LEVEL=" +
            std::string(class_name(best_class)) + " only after measuring that GPUDirect RDMA across it is faster");
  }
}

}  // namespace rdmactl::doctor_detail
