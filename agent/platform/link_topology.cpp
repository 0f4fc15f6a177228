// SPDX-License-Identifier: Apache-2.0
// LinkTopology and mtu_related_links: which netdevs the kernel moves when one netdev's MTU changes,
// read from a link dump (stacked devices, masters, bond and team ports).
#include "agent/platform/netlink.h"

#include <set>
#include <utility>

namespace rdmactl {

bool mtu_follows_link(const std::string& kind) {
  // Kinds whose IFLA_LINK is the device below them and whose driver changes their MTU when the
  // lower device's changes: macvlan_device_event, vlan_device_event, ipvlan_device_event
  // (ipvlan_adjust_mtu), macsec_notify, all on NETDEV_CHANGEMTU.
  static const std::set<std::string> kStacked = {"macvlan", "macvtap", "vlan", "ipvlan", "ipvtap", "macsec"};
  return kStacked.count(kind) > 0;
}

bool sets_port_mtu(const std::string& kind) {
  // A bond (bond_change_mtu) and a team (team_change_mtu) set their ports' MTU.
  return kind == "bond" || kind == "team";
}

LinkTopology::LinkTopology(const std::vector<LinkInfo>& links) {
  by_ifindex_.reserve(links.size());
  for (const LinkInfo& l : links) {
    by_ifindex_[l.ifindex] = &l;
    if (l.link != 0 && l.link != l.ifindex && mtu_follows_link(l.kind)) followers_[l.link].push_back(l.ifindex);
    if (l.master != 0) ports_[l.master].push_back(l.ifindex);
  }
}

const LinkInfo* LinkTopology::find(int ifindex) const {
  auto it = by_ifindex_.find(ifindex);
  return it == by_ifindex_.end() ? nullptr : it->second;
}

std::vector<int> LinkTopology::mtu_related(int ifindex) const {
  constexpr int kMaxDepth = 8;  // stacks deeper than this do not occur; the bound keeps a loop finite
  std::vector<int> out;
  std::set<int> seen = {ifindex};
  std::vector<int> level = {ifindex};
  for (int depth = 0; depth < kMaxDepth && !level.empty(); ++depth) {
    std::vector<int> next;
    auto visit = [&](int index) {
      if (index == 0 || !seen.insert(index).second) return;
      out.push_back(index);
      next.push_back(index);
    };
    for (const int index : level) {
      const LinkInfo* self = find(index);
      if (self == nullptr) continue;
      visit(self->master);
      if (auto it = followers_.find(index); it != followers_.end()) {
        for (const int follower : it->second) visit(follower);
      }
      if (sets_port_mtu(self->kind)) {
        if (auto it = ports_.find(index); it != ports_.end()) {
          for (const int port : it->second) visit(port);
        }
      }
    }
    level = std::move(next);
  }
  return out;
}

std::vector<int> mtu_related_links(const std::vector<LinkInfo>& links, int ifindex) {
  return LinkTopology(links).mtu_related(ifindex);
}

}  // namespace rdmactl
