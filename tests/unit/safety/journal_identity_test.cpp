// SPDX-License-Identifier: Apache-2.0
// Which journal is this namespace's, and which of its netdevs are the host's (issue 24 item 2):
// netns_mismatch on the recorded namespace and boot, match_netdevs on ifindex, kind and MAC, and
// apply_match rewriting a journal to the host's names and dropping what is not there any more.
// The real-kernel side (a journal moved under another namespace's inode number, a netdev renamed
// or made again) is tests/netns/recovery_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/engine/snapshot.h"
#include "agent/safety/journal.h"
#include "agent/safety/netns_identity.h"

namespace rdmactl {
namespace safety_journal_identity_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(NetnsIdentity, AnotherBootOrCookieIsAnotherNamespace) {
  const NetnsIdentity now{"4026532173", 7, "5c8ee387-45ee-4cf9-acab-5101e351de01"};
  EXPECT_EQ(netns_mismatch(now, now), std::nullopt);
  NetnsIdentity reused = now;
  reused.cookie = 3;
  ASSERT_TRUE(netns_mismatch(reused, now).has_value());
  EXPECT_THAT(*netns_mismatch(reused, now), HasSubstr("another network namespace (cookie 3, this one's is 7)"));
  NetnsIdentity rebooted = now;
  rebooted.boot_id = "00000000-0000-4000-8000-000000000000";
  EXPECT_THAT(netns_mismatch(rebooted, now).value_or(""), HasSubstr("before the host last booted"));
  // A journal of an older rdmactl has none of it: nothing tells them apart (its netdevs will).
  EXPECT_EQ(netns_mismatch(NetnsIdentity{}, now), std::nullopt);
  // A kernel without SO_NETNS_COOKIE (before 5.14): the boot id still tells.
  NetnsIdentity old_kernel = now;
  old_kernel.cookie.reset();
  EXPECT_EQ(netns_mismatch(old_kernel, now), std::nullopt);
  EXPECT_EQ(netns_identity_from_json(to_json(now)).cookie, 7u);
  EXPECT_EQ(netns_identity_from_json(to_json(now)).boot_id, now.boot_id);
}

TEST(NetnsIdentity, ThisProcessHasOne) {
  const NetnsIdentity here = this_netns();
  EXPECT_EQ(here.inode, netns_id());
  EXPECT_FALSE(here.boot_id.empty());
  EXPECT_TRUE(here.cookie.has_value()) << "SO_NETNS_COOKIE is in every kernel since 5.14";
}

LinkInfo link(int ifindex, const std::string& name, const std::string& kind, const std::string& mac) {
  LinkInfo l;
  l.ifindex = ifindex;
  l.name = name;
  l.kind = kind;
  l.mac = mac;
  return l;
}

NetdevState netdev(int ifindex, const std::string& name, const std::string& mac, int mtu) {
  NetdevState n;
  n.ifindex = ifindex;
  n.name = name;
  n.kind = "veth";
  n.mac = mac;
  n.mtu = mtu;
  n.state = "up";
  return n;
}

Change mtu_change(const std::string& netdev_name, int from, int to) {
  Change c;
  c.resource = "netdev/" + netdev_name;
  c.field = "mtu";
  c.current = from;
  c.desired = to;
  c.reconciler = "netdev";
  return c;
}

// A killed run's journal of eth-a (ifindex 5) and eth-b (ifindex 6), MTU 1500 -> 9000 each, with
// their snapshot (a static route through each).
Journal journal_of_two() {
  Journal j;
  j.before.netdevs = {netdev(5, "eth-a", "02:00:00:00:00:05", 1500), netdev(6, "eth-b", "02:00:00:00:00:06", 1500)};
  j.before.index_netdevs();
  j.changes = {mtu_change("eth-a", 1500, 9000), mtu_change("eth-b", 1500, 9000)};
  for (auto it = j.changes.rbegin(); it != j.changes.rend(); ++it) j.revert_plan.push_back(it->reverted());
  Snapshot snap;
  for (const NetdevState& n : j.before.netdevs) {
    NetdevSnapshot s;
    s.ifindex = n.ifindex;
    s.name = n.name;
    s.kind = n.kind;
    s.mac = n.mac;
    s.mtu = 1500;
    AddressInfo a;
    a.ifindex = n.ifindex;
    a.family = AF_INET;
    a.cidr = "10.0." + std::to_string(n.ifindex) + ".1/24";
    a.label = n.name;
    s.addresses.push_back(a);
    s.sysctls["net.ipv6.conf." + n.name + ".mtu"] = "1500";
    s.sysctls_read = true;
    snap.netdevs.push_back(s);
  }
  snap.index_netdevs();
  j.snapshot = to_json(snap);
  return j;
}

TEST(JournalMatch, TheSameNetdevsMatchAsTheyAre) {
  const Journal j = journal_of_two();
  const JournalMatch m = match_netdevs(j, {link(5, "eth-a", "veth", "02:00:00:00:00:05"),
                                           link(6, "eth-b", "veth", "02:00:00:00:00:06")});
  EXPECT_THAT(m.renamed, IsEmpty());
  EXPECT_THAT(m.gone, IsEmpty());
}

TEST(JournalMatch, ARenamedNetdevIsTheSameOneUnderItsNewName) {
  Journal j = journal_of_two();
  const JournalMatch m = match_netdevs(j, {link(5, "eth-x", "veth", "02:00:00:00:00:05"),
                                           link(6, "eth-b", "veth", "02:00:00:00:00:06")});
  EXPECT_THAT(m.renamed, ElementsAre(Pair("eth-a", "eth-x")));
  EXPECT_THAT(m.gone, IsEmpty());
  apply_match(j, m);
  EXPECT_EQ(j.changes[0].resource, "netdev/eth-x");
  EXPECT_EQ(j.revert_plan[1].resource, "netdev/eth-x");
  ASSERT_NE(j.before.find_netdev("eth-x"), nullptr);
  EXPECT_EQ(j.before.find_netdev("eth-x")->ifindex, 5);
  auto snap = snapshot_from_json(j.snapshot);
  ASSERT_TRUE(snap.has_value());
  ASSERT_NE(snap->find(5), nullptr);
  EXPECT_EQ(snap->find(5)->name, "eth-x");
  EXPECT_EQ(snap->find(5)->addresses[0].label, "eth-x") << "the kernel renames IPv4 labels with the netdev";
  EXPECT_THAT(snap->find(5)->sysctls, ElementsAre(Pair("net.ipv6.conf.eth-x.mtu", "1500")));
}

// Deleted and made again under its name (a new ifindex), or its ifindex now a netdev of another
// kind or MAC: not the journaled netdev. Nothing of it stays in the journal, and the netdev that
// has its name now is named as another one.
TEST(JournalMatch, ANetdevGoneOrReplacedIsDroppedAndItsNameNeverReached) {
  Journal j = journal_of_two();
  const JournalMatch m = match_netdevs(j, {link(9, "eth-a", "veth", "02:00:00:00:00:99"),
                                           link(6, "eth-b", "dummy", "02:00:00:00:00:06")});
  ASSERT_EQ(m.gone.size(), 2u);
  EXPECT_THAT(m.gone.at("eth-a"), HasSubstr("netdev/eth-a (ifindex 5) no longer exists"));
  EXPECT_THAT(m.gone.at("eth-a"), HasSubstr("the netdev named eth-a now (ifindex 9) is another one, left alone"));
  EXPECT_THAT(m.gone.at("eth-b"), HasSubstr("is not the journaled netdev any more"));
  apply_match(j, m);
  EXPECT_THAT(j.changes, IsEmpty());
  EXPECT_THAT(j.revert_plan, IsEmpty());
  EXPECT_THAT(j.before.netdevs, IsEmpty());
  auto snap = snapshot_from_json(j.snapshot);
  ASSERT_TRUE(snap.has_value());
  EXPECT_THAT(snap->netdevs, IsEmpty());
}

// An IPoIB hardware address holds the queue pair number: it is not compared, the kind is.
TEST(JournalMatch, AnIpoibHardwareAddressIsNotTheIdentity) {
  Journal j;
  j.before.netdevs = {netdev(4, "ib0", "00:00:10:87:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20", 2044)};
  j.before.netdevs[0].kind = "";
  j.before.index_netdevs();
  const JournalMatch m =
      match_netdevs(j, {link(4, "ib0", "", "00:00:10:89:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20")});
  EXPECT_THAT(m.gone, IsEmpty());
}

}  // namespace safety_journal_identity_test
}  // namespace rdmactl
