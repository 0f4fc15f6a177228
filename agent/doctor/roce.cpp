// SPDX-License-Identifier: Apache-2.0
// The doctor's RoCE checks: the netdev MTU against the 4096-byte path MTU, and a RoCE v2 GID for
// every IPv4 address (a note names its index for tests).
#include <cstdio>
#include <string>

#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

// The bytes the kernel takes off a netdev MTU before choosing a RoCE path MTU: iboe_get_mtu
// (include/rdma/ib_addr.h) subtracts IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 +
// IB_EXT_XRC_BYTES 4 + IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4 (include/rdma/ib_pack.h) = 96,
// then takes the largest IB MTU that fits. So 4096 needs a netdev MTU of 4192; 9000 is the norm.
constexpr int kIboeHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;
constexpr int kRoceMtuThreshold = 4096 + kIboeHeaderBytes;
static_assert(kRoceMtuThreshold == 4192);

// The RoCE path MTU the kernel derives from a netdev MTU (iboe_get_mtu); 0 below 256 + 96, where
// iboe_get_mtu returns 0 (no valid IB MTU).
int roce_active_mtu(int netdev_mtu) {
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (netdev_mtu - kIboeHeaderBytes >= mtu) return mtu;
  }
  return 0;
}

std::string ipv4_of(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// "192.168.100.11" -> "0000:0000:0000:0000:0000:ffff:c0a8:640b", as sysfs writes IPv4 GIDs.
std::string ipv4_gid(const std::string& ipv4) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(ipv4.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

}  // namespace

void Doctor::check_roce(const DeviceState& d, const PortState& p) {
  const NetdevState* netdev = p.netdev.empty() ? nullptr : state_.find_netdev(p.netdev);
  if (!netdev) return;
  if (netdev->mtu > 0 && netdev->mtu < kRoceMtuThreshold) {
    const int active = roce_active_mtu(netdev->mtu);
    add("roce-mtu", "warning", "netdev/" + netdev->name,
        netdev->name + " has MTU " + std::to_string(netdev->mtu) + ", so RoCE on " + d.name + " port " +
            std::to_string(p.port) +
            (active > 0 ? " uses " + std::to_string(active) + "-byte packets"
                        : " has no valid path MTU (iboe_get_mtu needs at least " +
                              std::to_string(256 + kIboeHeaderBytes) + ")") +
            " (4096 needs an MTU of at least " + std::to_string(kRoceMtuThreshold) + ")",
        "set mtu: 9000 on the interface (and jumbo frames on the switch ports)");
  }
  for (const std::string& cidr : netdev->addresses) {
    if (cidr.find(':') != std::string::npos) continue;  // IPv6: RoCE v2 GIDs of IPv4 first
    const std::string ip = ipv4_of(cidr);
    const std::string wanted = ipv4_gid(ip);
    const GidEntry* v2 = nullptr;
    for (const GidEntry& g : p.gids) {
      if (g.gid == wanted && g.type == "RoCE v2") {
        v2 = &g;
        break;
      }
    }
    if (!v2) {
      add("roce-gid", "error", port_resource(d, p),
          "no RoCE v2 GID for " + ip + " (on " + netdev->name + ")",
          "the GID table follows the netdev's addresses: check that " + ip + " is on " + netdev->name +
              " itself and the port is up; `rdma link show " + d.name + "/" + std::to_string(p.port) + "`");
      continue;
    }
    report_.notes.push_back({port_resource(d, p), "RoCE v2 GID index " + std::to_string(v2->index) + " is " +
                                                      ip + ": use it for tests (ib_write_bw -x " +
                                                      std::to_string(v2->index) + ", NCCL_IB_GID_INDEX=" +
                                                      std::to_string(v2->index) + ")"});
  }
}

}  // namespace rdmactl::doctor_detail
