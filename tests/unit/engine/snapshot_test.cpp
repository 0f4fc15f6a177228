// SPDX-License-Identifier: Apache-2.0
// The snapshot comparison: every difference between two snapshots of the same netdevs is found
// and said in words, lifetimes that only counted down are not differences, and unexplained()
// keeps exactly the side effects of a plan. Also the pure helpers behind snapshots and restores:
// mtu_related_links (which netdevs' MTU follows a netdev's), RouteInfo::describe and
// AddressInfo::flag_names. The snapshots are built by hand in the shapes the kernel dumps (the
// real-kernel side is tests/netns/rollback_test.cpp and tests/netns/netlink_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
// glibc's <net/if.h> before <linux/if.h>, which then leaves out what glibc defined
// (linux/libc-compat.h): in the other order the two collide, and a unity-build unit may include
// <net/if.h> later through httplib.h.
#include <net/if.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include "agent/engine/snapshot.h"

namespace rdmactl {
namespace engine_snapshot_test {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

AddressInfo address(int ifindex, const std::string& cidr, std::uint32_t flags = IFA_F_PERMANENT) {
  AddressInfo a;
  a.ifindex = ifindex;
  a.family = cidr.find(':') == std::string::npos ? AF_INET : AF_INET6;
  a.cidr = cidr;
  a.flags = flags;
  a.scope = cidr.rfind("fe80:", 0) == 0 ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  if (a.family == AF_INET) a.label = ifindex == 2 ? "veth0" : "mv0";
  return a;
}

RouteInfo route(const std::string& dst, int ifindex, const std::string& gateway, unsigned protocol = RTPROT_STATIC,
                unsigned table = RT_TABLE_MAIN) {
  RouteInfo r;
  r.family = dst.find(':') == std::string::npos ? AF_INET : AF_INET6;
  r.dst = dst;
  r.table = table;
  r.protocol = protocol;
  r.type = RTN_UNICAST;
  r.scope = gateway.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  RouteNexthop hop;
  hop.ifindex = ifindex;
  hop.gateway = gateway;
  r.nexthops.push_back(hop);
  return r;
}

// veth0 (ifindex 2) with mv0 (ifindex 4, a macvlan on it): addresses, sysctls, routes.
Snapshot host() {
  Snapshot s;
  s.taken = std::chrono::steady_clock::time_point(std::chrono::seconds(1000));
  NetdevSnapshot veth0;
  veth0.ifindex = 2;
  veth0.name = "veth0";
  veth0.kind = "veth";
  veth0.mac = "02:00:00:00:00:01";
  veth0.mtu = 1500;
  veth0.flags = IFF_UP | IFF_BROADCAST | IFF_MULTICAST | IFF_RUNNING | IFF_LOWER_UP;
  veth0.oper_state = "up";
  veth0.link = 3;
  veth0.addresses = {address(2, "10.99.0.1/24"), address(2, "10.99.0.5/24", IFA_F_PERMANENT | IFA_F_SECONDARY),
                     address(2, "10.98.0.1/16"), address(2, "fd00:99::1/64", IFA_F_PERMANENT | IFA_F_NODAD),
                     address(2, "fe80::1/64")};
  veth0.sysctls = {{"net.ipv6.conf.veth0.mtu", "1500"}, {"net.ipv6.conf.veth0.accept_ra", "1"}};
  veth0.sysctls_read = true;
  NetdevSnapshot mv0;
  mv0.ifindex = 4;
  mv0.name = "mv0";
  mv0.kind = "macvlan";
  mv0.mac = "02:00:00:00:00:04";
  mv0.mtu = 1500;
  mv0.flags = veth0.flags;
  mv0.oper_state = "up";
  mv0.link = 2;
  mv0.addresses = {address(4, "fd00:55::1/64", IFA_F_PERMANENT | IFA_F_NODAD)};
  mv0.sysctls = {{"net.ipv6.conf.mv0.accept_ra", "2"}, {"net.ipv6.conf.mv0.keep_addr_on_down", "1"}};
  mv0.sysctls_read = true;
  s.netdevs = {veth0, mv0};
  RouteInfo with_src = route("10.3.0.0/16", 3, "");
  with_src.prefsrc = "10.99.0.1";
  with_src.protocol = RTPROT_BOOT;
  RouteInfo metric = route("10.2.0.0/16", 2, "10.98.0.254", RTPROT_STATIC, 100);
  metric.priority = 5;
  metric.metrics = {{"mtu", "1400"}};
  s.routes = {route("10.99.0.0/24", 2, "", RTPROT_KERNEL), route("10.1.0.0/16", 2, "10.99.0.254"), metric, with_src};
  return s;
}

Snapshot later(Snapshot s, int seconds) {
  s.taken += std::chrono::seconds(seconds);
  return s;
}

NetdevSnapshot& netdev(Snapshot& s, const std::string& name) {
  for (NetdevSnapshot& n : s.netdevs) {
    if (n.name == name) return n;
  }
  throw std::logic_error("no netdev " + name);
}

TEST(SnapshotCompare, TheSameHostHasNoDifferences) {
  const Snapshot before = host();
  EXPECT_THAT(describe(compare_snapshots(before, later(before, 3))), IsEmpty());
}

TEST(SnapshotCompare, AMacvlanWhoseMtuTheKernelLoweredIsADifference) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  netdev(after, "mv0").mtu = 1200;
  EXPECT_THAT(describe(compare_snapshots(before, after)), ElementsAre("netdev/mv0 mtu: 1500 before, 1200 now"));
}

TEST(SnapshotCompare, LinkAttributesEachSayWhatChanged) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  NetdevSnapshot& veth0 = netdev(after, "veth0");
  veth0.flags = (veth0.flags & ~IFF_UP) | IFF_PROMISC;
  veth0.oper_state = "down";
  veth0.master = 4;
  veth0.mac = "02:00:00:00:00:09";
  const auto diffs = compare_snapshots(before, after);
  EXPECT_THAT(describe(diffs), ElementsAre("netdev/veth0 state: up before, down now",
                                           "netdev/veth0 flags: 0x1002 before, 0x1102 now",
                                           "netdev/veth0 operstate: up before, down now",
                                           "netdev/veth0 master: none before, mv0 now",
                                           "netdev/veth0 address: 02:00:00:00:00:01 before, 02:00:00:00:00:09 now"));
  ASSERT_EQ(diffs.size(), 5u);
  EXPECT_TRUE(diffs[2].settles);  // the operstate follows the carrier
  EXPECT_FALSE(diffs[0].settles);
}

TEST(SnapshotCompare, CarrierFlagsAloneAreTheOperstatesBusiness) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  netdev(after, "veth0").flags &= ~(static_cast<unsigned>(IFF_RUNNING) | static_cast<unsigned>(IFF_LOWER_UP));
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
}

TEST(SnapshotCompare, AddressesGoneNewAndWithOtherAttributes) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  NetdevSnapshot& veth0 = netdev(after, "veth0");
  veth0.addresses.erase(veth0.addresses.begin() + 2);                  // 10.98.0.1/16
  veth0.addresses[2].flags = IFA_F_PERMANENT;                           // fd00:99::1 lost nodad
  veth0.addresses[0].label = "veth0:a";
  veth0.addresses[0].broadcast = "10.99.0.255";
  veth0.addresses.push_back(address(2, "10.77.0.1/24"));
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("netdev/veth0 address 10.99.0.1/24: broadcast \"\" before, \"10.99.0.255\" now",
                          "netdev/veth0 address 10.99.0.1/24: label \"veth0\" before, \"veth0:a\" now",
                          "netdev/veth0 address 10.98.0.1/16 (permanent) is gone",
                          "netdev/veth0 address fd00:99::1/64: flags nodad before, none now",
                          "netdev/veth0 address 10.77.0.1/24 is new"));
}

TEST(SnapshotCompare, PeerScopeMetricAndProtocolOfAnAddress) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  AddressInfo& a = netdev(after, "veth0").addresses[0];
  a.peer = "10.99.0.2";
  a.scope = RT_SCOPE_LINK;
  a.metric = 7;
  a.proto = 99;
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("netdev/veth0 address 10.99.0.1/24: scope 0 before, 253 now",
                          "netdev/veth0 address 10.99.0.1/24: peer \"\" before, \"10.99.0.2\" now",
                          "netdev/veth0 address 10.99.0.1/24: metric none before, 7 now",
                          "netdev/veth0 address 10.99.0.1/24: protocol none before, 99 now"));
}

// The flags the kernel decides are not the address's state: an address journaled while in
// duplicate address detection (tentative) is the same address once DAD is over, and no write
// could give its tentative flag back (the recovery that compared them never ended).
TEST(SnapshotCompare, FlagsTheKernelSetsByItselfAreNotDifferences) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  netdev(after, "veth0").addresses[4].flags |= IFA_F_TENTATIVE;  // fe80::1 re-made, DAD running
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
  netdev(after, "veth0").addresses[4].flags |= IFA_F_DADFAILED | IFA_F_DEPRECATED | IFA_F_OPTIMISTIC;
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
  Snapshot journaled = host();
  netdev(journaled, "veth0").addresses[4].flags |= IFA_F_TENTATIVE;  // taken during DAD
  EXPECT_THAT(describe(compare_snapshots(journaled, later(host(), 5))), IsEmpty());
  // A flag a request gives is compared.
  netdev(after, "veth0").addresses[4].flags |= IFA_F_NOPREFIXROUTE;
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("netdev/veth0 address fe80::1/64: flags none before, noprefixroute now"));
}

// The routes the kernel makes from addresses and links (proto kernel: prefix, local, multicast;
// the IPv6 local route of an address appears only when its DAD ends) and learns from router
// advertisements (proto ra) follow what is compared; they are not compared themselves.
TEST(SnapshotCompare, RoutesTheKernelMakesByItselfAreNotDifferences) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  RouteInfo local = route("fe80::1/128", 2, "", RTPROT_KERNEL, RT_TABLE_LOCAL);
  local.type = RTN_LOCAL;
  after.routes.push_back(local);
  after.routes.push_back(route("::/0", 2, "fe80::254", RTPROT_RA));
  after.routes.erase(after.routes.begin());  // the kernel's 10.99.0.0/24 prefix route
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
  after.routes.push_back(route("10.5.0.0/16", 2, "10.99.0.254", RTPROT_STATIC));
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("route 10.5.0.0/16 via 10.99.0.254 dev veth0 table main proto static scope universe is new"));
}

TEST(SnapshotCompare, LifetimesThatOnlyCountedDownAreTheSame) {
  Snapshot before = host();
  AddressInfo& a = netdev(before, "veth0").addresses[3];
  a.valid_lft = 4000;
  a.preferred_lft = 2000;
  a.flags &= ~IFA_F_PERMANENT;
  Snapshot after = later(before, 30);
  AddressInfo& b = netdev(after, "veth0").addresses[3];
  b.valid_lft = 3971;      // 29 s down in 30 s: the kernel rounds
  b.preferred_lft = 1970;  // exactly 30 s down
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
  b.valid_lft = 4000;  // put back with the lifetime it had at the first snapshot: 30 s too long
  b.preferred_lft = kForeverLifetime;
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("netdev/veth0 address fd00:99::1/64: valid_lft 4000s before, 4000s now",
                          "netdev/veth0 address fd00:99::1/64: preferred_lft 2000s before, forever now"));
}

TEST(SnapshotCompare, TheOrderOfAddressesIsPartOfTheState) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  auto& list = netdev(after, "veth0").addresses;
  std::swap(list[0], list[2]);  // 10.98.0.1 became the first primary
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("netdev/veth0 IPv4 address order: [10.99.0.1/24, 10.99.0.5/24, 10.98.0.1/16] before, "
                          "[10.98.0.1/16, 10.99.0.5/24, 10.99.0.1/24] now"));
}

TEST(SnapshotCompare, SysctlsChangedGoneAndAppeared) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  auto& mv0 = netdev(after, "mv0").sysctls;
  mv0["net.ipv6.conf.mv0.accept_ra"] = "1";           // reset to the default with the IPv6 state
  mv0.erase("net.ipv6.conf.mv0.keep_addr_on_down");
  mv0["net.ipv6.conf.mv0.addr_gen_mode"] = "0";
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              ElementsAre("sysctl net.ipv6.conf.mv0.accept_ra: \"2\" before, \"1\" now",
                          "sysctl net.ipv6.conf.mv0.keep_addr_on_down: \"1\" before, gone now",
                          "sysctl net.ipv6.conf.mv0.addr_gen_mode: absent before, \"0\" now"));
}

TEST(SnapshotCompare, RoutesGoneOrChangedAreNamedWithTheirNetdevs) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  after.routes.erase(after.routes.begin() + 2);  // table 100
  after.routes[2].prefsrc.clear();               // as fib6_remove_prefsrc leaves an IPv6 route
  EXPECT_THAT(describe(compare_snapshots(before, after)),
              UnorderedElementsAre(
                  "route 10.2.0.0/16 via 10.98.0.254 dev veth0 table 100 proto static scope universe metric 5 mtu 1400 is gone",
                  "route 10.3.0.0/16 dev #3 table main proto boot scope link src 10.99.0.1 is gone",
                  "route 10.3.0.0/16 dev #3 table main proto boot scope link is new"));
}

TEST(SnapshotCompare, ANetdevThatIsGone) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  after.netdevs.pop_back();
  EXPECT_THAT(describe(compare_snapshots(before, after)), ElementsAre("netdev/mv0 is gone"));
}

Change change(const std::string& netdev, const std::string& field, nlohmann::json current, nlohmann::json desired) {
  Change c;
  c.resource = "netdev/" + netdev;
  c.field = field;
  c.current = std::move(current);
  c.desired = std::move(desired);
  c.reconciler = field == "addresses" ? "addresses" : "netdev";
  return c;
}

TEST(SnapshotUnexplained, AnMtuChangeExplainsItsOwnMtuNotTheMacvlans) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  netdev(after, "veth0").mtu = 1400;
  netdev(after, "veth0").sysctls["net.ipv6.conf.veth0.mtu"] = "1400";
  netdev(after, "mv0").mtu = 1400;
  const auto left = unexplained(compare_snapshots(before, after), {change("veth0", "mtu", 1500, 1400)});
  EXPECT_THAT(describe(left), ElementsAre("netdev/mv0 mtu: 1500 before, 1400 now"));
}

TEST(SnapshotUnexplained, AnAddressChangeExplainsItsAddressesAndKernelRoutesNotStaticRoutes) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  NetdevSnapshot& veth0 = netdev(after, "veth0");
  veth0.addresses.erase(veth0.addresses.begin(), veth0.addresses.begin() + 2);  // 10.99.0.1 and its secondary
  veth0.addresses.push_back(address(2, "10.99.0.7/24"));
  after.routes = {route("10.99.0.0/24", 2, "", RTPROT_KERNEL), route("10.1.0.0/16", 2, "10.99.0.254"), before.routes[2]};
  after.routes[0].prefsrc = "10.99.0.7";
  const Change addresses = change("veth0", "addresses", {"10.98.0.1/16", "10.99.0.1/24", "10.99.0.5/24", "fd00:99::1/64"},
                                  {"10.98.0.1/16", "10.99.0.5/24", "10.99.0.7/24", "fd00:99::1/64"});
  const auto left = unexplained(compare_snapshots(before, after), {addresses});
  // 10.99.0.5 was to stay: the kernel took it with its primary. The route from 10.99.0.1 went with it.
  EXPECT_THAT(describe(left),
              ElementsAre("netdev/veth0 address 10.99.0.5/24 (secondary permanent) is gone",
                          "route 10.3.0.0/16 dev #3 table main proto boot scope link src 10.99.0.1 is gone"));
}

TEST(SnapshotUnexplained, AStateChangeExplainsStateAndLinkLocalButNotLostAddresses) {
  const Snapshot before = host();
  Snapshot after = later(before, 1);
  NetdevSnapshot& veth0 = netdev(after, "veth0");
  veth0.flags &= ~(IFF_UP | IFF_RUNNING | IFF_LOWER_UP);
  veth0.oper_state = "down";
  veth0.addresses.resize(3);  // the IPv6 addresses went down with the link
  const auto left = unexplained(compare_snapshots(before, after), {change("veth0", "state", "up", "down")});
  EXPECT_THAT(describe(left), ElementsAre("netdev/veth0 address fd00:99::1/64 (nodad permanent) is gone"));
}

TEST(SnapshotNetdevs, EachNetdevOfAPlanOnceInOrder) {
  Change sysctl;
  sysctl.resource = "sysctl/net.ipv4.tcp_ecn";
  EXPECT_THAT(netdevs_of({change("veth1", "mtu", 1500, 9000), sysctl, change("veth0", "state", "down", "up"),
                          change("veth1", "addresses", nlohmann::json::array(), {"10.0.0.1/24"})}),
              ElementsAre("veth1", "veth0"));
}

LinkInfo link(int ifindex, const std::string& name, const std::string& kind, int lower = 0, int master = 0) {
  LinkInfo l;
  l.ifindex = ifindex;
  l.name = name;
  l.kind = kind;
  l.link = lower;
  l.master = master;
  return l;
}

TEST(MtuRelatedLinks, StackedDevicesMastersAndABondsPortsButNotAVethPeer) {
  // As `ip -d link` shows them: veth0@veth1 (IFLA_LINK is the peer), mv0@veth0, mv1@veth0, vlan5@mv0
  // (stacked twice), veth0 a port of br0; bond0 with veth2 and veth3; an unrelated dummy.
  const std::vector<LinkInfo> links = {
      link(1, "lo", ""),           link(2, "veth0", "veth", 3, 7), link(3, "veth1", "veth", 2),
      link(4, "mv0", "macvlan", 2), link(5, "mv1", "macvtap", 2),  link(6, "vlan5", "vlan", 4),
      link(7, "br0", "bridge"),     link(8, "bond0", "bond"),      link(9, "veth2", "veth", 10, 8),
      link(10, "veth3", "veth", 9, 8), link(11, "dummy0", "dummy"), link(12, "br1", "bridge")};
  EXPECT_THAT(mtu_related_links(links, 2), UnorderedElementsAre(7, 4, 5, 6));
  EXPECT_THAT(mtu_related_links(links, 3), IsEmpty());
  EXPECT_THAT(mtu_related_links(links, 8), UnorderedElementsAre(9, 10));
  EXPECT_THAT(mtu_related_links(links, 11), IsEmpty());
  // A bridge's new MTU is its own (br_change_mtu): its ports keep theirs.
  EXPECT_THAT(mtu_related_links(links, 7), IsEmpty());
}

TEST(MtuRelatedLinks, ALoopOfLinksEnds) {
  // Not a stack the kernel allows, but a dump is input: the walk must end anyway.
  const std::vector<LinkInfo> links = {link(2, "a", "macvlan", 3), link(3, "b", "macvlan", 2)};
  EXPECT_THAT(mtu_related_links(links, 2), ElementsAre(3));
}

TEST(RouteDescribe, InIpRouteWordsWithoutTheKernelsOwnFlags) {
  RouteInfo r = route("10.2.0.0/16", 2, "10.98.0.254", RTPROT_STATIC, 100);
  r.priority = 5;
  r.metrics = {{"mtu", "1400"}, {"congctl", "cubic"}};
  r.prefsrc = "10.98.0.1";
  r.nexthops[0].flags = RTNH_F_ONLINK | RTNH_F_LINKDOWN | RTNH_F_DEAD;
  EXPECT_EQ(r.describe([](int) { return std::string("veth0"); }),
            "10.2.0.0/16 via 10.98.0.254 dev veth0 onlink table 100 proto static scope universe metric 5 src 10.98.0.1 "
            "congctl cubic mtu 1400");
  RouteInfo local = route("10.98.0.1/32", 2, "", RTPROT_KERNEL, RT_TABLE_LOCAL);
  local.type = RTN_LOCAL;
  local.scope = RT_SCOPE_HOST;
  EXPECT_EQ(local.describe(), "local 10.98.0.1/32 dev #2 table local proto kernel scope host");
  RouteInfo multipath = route("fd00:1::/64", 2, "fe80::1", 42, 200);
  RouteNexthop second;
  second.ifindex = 3;
  second.gateway = "fe80::2";
  second.weight = 3;
  multipath.nexthops.push_back(second);
  EXPECT_EQ(multipath.describe(), "fd00:1::/64 nexthop via fe80::1 dev #2 weight 1 nexthop via fe80::2 dev #3 weight 3 "
                                  "table 200 proto 42 scope universe");
  EXPECT_TRUE(multipath.through(3));
  EXPECT_FALSE(multipath.through(4));
}

TEST(AddressFlagNames, AsIpAddrShowsThem) {
  AddressInfo a = address(2, "fd00::1/64", IFA_F_NODAD | IFA_F_NOPREFIXROUTE | IFA_F_SECONDARY | 0x10000);
  EXPECT_EQ(a.flag_names(), "temporary nodad noprefixroute 0x10000");
  a.family = AF_INET;
  EXPECT_EQ(a.flag_names(), "secondary nodad noprefixroute 0x10000");
  EXPECT_TRUE(address(2, "fe80::1/64").link_local());
  AddressInfo v4 = address(2, "169.254.1.1/16");
  v4.scope = RT_SCOPE_LINK;
  EXPECT_FALSE(v4.link_local());  // docs/spec.md: only IPv6 fe80::/10 is never managed
}

// An RTM_NEWROUTE message as the kernel dumps one (fib_dump_info): 10.2.0.0/16 via 10.98.0.254
// dev 2, table 100, proto static, metric 5, mtu 1400, with the linkdown flag.
std::vector<unsigned char> route_message() {
  nl_msg* msg = nlmsg_alloc_simple(RTM_NEWROUTE, NLM_F_MULTI);
  rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  rtm.rtm_dst_len = 16;
  rtm.rtm_table = 100;
  rtm.rtm_protocol = RTPROT_STATIC;
  rtm.rtm_scope = RT_SCOPE_UNIVERSE;
  rtm.rtm_type = RTN_UNICAST;
  rtm.rtm_flags = RTNH_F_LINKDOWN;
  const unsigned char dst[4] = {10, 2, 0, 0};
  const unsigned char gateway[4] = {10, 98, 0, 254};
  EXPECT_EQ(nlmsg_append(msg, &rtm, sizeof rtm, NLMSG_ALIGNTO), 0);
  EXPECT_EQ(nla_put_u32(msg, RTA_TABLE, 100), 0);
  EXPECT_EQ(nla_put(msg, RTA_DST, 4, dst), 0);
  EXPECT_EQ(nla_put_u32(msg, RTA_PRIORITY, 5), 0);
  nlattr* metrics = nla_nest_start(msg, RTA_METRICS);
  EXPECT_EQ(nla_put_u32(msg, RTAX_MTU, 1400), 0);
  nla_nest_end(msg, metrics);
  EXPECT_EQ(nla_put(msg, RTA_GATEWAY, 4, gateway), 0);
  EXPECT_EQ(nla_put_u32(msg, RTA_OIF, 2), 0);
  const nlmsghdr* hdr = nlmsg_hdr(msg);
  const auto* bytes = reinterpret_cast<const unsigned char*>(hdr);
  std::vector<unsigned char> out(bytes, bytes + hdr->nlmsg_len);
  nlmsg_free(msg);
  return out;
}

TEST(RouteMessage, ParsesAsTheDumpDoes) {
  auto parsed = parse_route_message(route_message());
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(parsed->describe(), "10.2.0.0/16 via 10.98.0.254 dev #2 table 100 proto static scope universe metric 5 mtu 1400");
  EXPECT_TRUE(parsed->through(2));
  EXPECT_EQ(parsed->flags, static_cast<unsigned>(RTNH_F_LINKDOWN));  // kept as seen; describe and restores leave it out
  std::vector<unsigned char> cut = route_message();
  cut.resize(cut.size() - 4);
  EXPECT_FALSE(parse_route_message(cut));
}

// A netdev whose sysctls no planned write can change has none read (SnapshotScope): nothing to
// compare, nothing in the journal, and a journal that has them (an older version's) loads them.
TEST(SnapshotCompare, SysctlsNotReadAreNeitherComparedNorJournalled) {
  Snapshot before = host();
  netdev(before, "mv0").sysctls.clear();
  netdev(before, "mv0").sysctls_read = false;
  Snapshot after = later(before, 1);
  netdev(after, "mv0").sysctls = {{"net.ipv6.conf.mv0.accept_ra", "1"}};
  netdev(after, "mv0").sysctls_read = true;
  EXPECT_THAT(describe(compare_snapshots(before, after)), IsEmpty());
  const nlohmann::json text = to_json(before);
  EXPECT_FALSE(text["netdevs"][1].contains("sysctls")) << text.dump();
  EXPECT_TRUE(text["netdevs"][0].contains("sysctls")) << text.dump();
  auto loaded = snapshot_from_json(text);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  EXPECT_FALSE(loaded->find("mv0")->sysctls_read);
  EXPECT_TRUE(loaded->find("veth0")->sysctls_read);
}

TEST(SnapshotJson, ARoundTripIsTheSameSnapshot) {
  Snapshot before = host();
  auto parsed = parse_route_message(route_message());
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  before.routes.push_back(*parsed);
  AddressInfo& a = netdev(before, "veth0").addresses[0];
  a.metric = 7;
  a.proto = 99;
  a.peer = "10.99.0.2";
  a.valid_lft = 3600;
  const nlohmann::json text = nlohmann::json::parse(to_json(before).dump());
  auto loaded = snapshot_from_json(text);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  // Hand-made routes have no message to keep: only the dumped one travels.
  Snapshot expected = before;
  expected.routes = {*parsed};
  expected.taken = loaded->taken;
  netdev(expected, "veth0").addresses[0].valid_lft = 3600;
  EXPECT_THAT(describe(compare_snapshots(expected, *loaded)), IsEmpty());
  EXPECT_EQ(loaded->routes.at(0).message, parsed->message);
  EXPECT_EQ(loaded->find("mv0")->sysctls, netdev(before, "mv0").sysctls);
  EXPECT_FALSE(snapshot_from_json(nlohmann::json{{"netdevs", 1}}));
}

}  // namespace engine_snapshot_test
}  // namespace rdmactl
