// SPDX-License-Identifier: Apache-2.0
// RouteSocket and enter_netns against the real kernel, inside throwaway network namespaces.
//
// The RouteSocket is opened on a thread that has setns()'d into the test namespace
// (TestNamespace::run_in_thread): a netlink socket stays bound to the namespace it was created in,
// so the test thread then uses it while itself staying in the host namespace, and gtest
// assertions, sanitizers and the fixture's `ip -n` checks all run in the ordinary process.
// enter_netns changes the whole process (mount namespace, /sys), so it is tested in a forked child.
// Every result is checked through iproute2 (`ip -j`), never through RouteSocket itself.
#include <dirent.h>
// glibc's <net/if.h> before <linux/if.h>, which then leaves out what glibc defined
// (linux/libc-compat.h): in the other order the two collide, and a unity-build unit may include
// <net/if.h> later through httplib.h.
#include <net/if.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/platform/netlink.h"
#include "tests/netns/netns_fixture.h"

namespace rdmactl {
namespace netns_netlink_test {

using test::NetnsTest;
using test::TestNamespace;

constexpr unsigned kArphrdEther = 1;
constexpr unsigned kArphrdLoopback = 772;
constexpr int kManyPairs = 50;
// veth carrier follows the peer through linkwatch, which runs within about a second.
constexpr auto kOperStateWait = std::chrono::seconds(5);

const LinkInfo* find_link(const std::vector<LinkInfo>& links, const std::string& name) {
  auto it = std::find_if(links.begin(), links.end(), [&](const LinkInfo& l) { return l.name == name; });
  return it == links.end() ? nullptr : &*it;
}

bool has_flag(const nlohmann::json& link, const std::string& flag) {
  for (const auto& f : link.value("flags", nlohmann::json::array())) {
    if (f == flag) return true;
  }
  return false;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// (family, local/prefixlen) of every address `ip -j addr show dev <dev>` lists.
std::set<std::string> ip_addresses(const TestNamespace& ns, const std::string& dev) {
  std::set<std::string> out;
  const auto json = ns.ip_json({"addr", "show", "dev", dev});
  if (!json.is_array() || json.empty()) return out;
  for (const auto& a : json[0].value("addr_info", nlohmann::json::array())) {
    out.insert(a["family"].get<std::string>() + " " + a["local"].get<std::string>() + "/" +
               std::to_string(a["prefixlen"].get<int>()));
  }
  return out;
}

// The text after "Error: " that `ip` printed for the same failing request, i.e. the kernel's
// extended ack, or empty when this kernel sends none.
std::string ip_ext_ack(const std::string& ip_stderr) {
  const std::string marker = "Error: ";
  const auto at = ip_stderr.find(marker);
  if (at == std::string::npos) return {};
  std::string text = ip_stderr.substr(at + marker.size());
  text = text.substr(0, text.find('\n'));
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

class RouteSocketTest : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto added = ns().add_veth("veth0", "veth1");
    ASSERT_TRUE(added) << added.error().to_string();
    std::optional<Result<RouteSocket>> opened;
    auto entered = ns().run_in_thread([&] { opened.emplace(RouteSocket::open()); });
    ASSERT_TRUE(entered) << entered.error().to_string();
    ASSERT_TRUE(opened.has_value());
    ASSERT_TRUE(*opened) << opened->error().to_string();
    sock_.emplace(std::move(*opened).value());
    auto index = ns().ifindex("veth0");
    ASSERT_TRUE(index) << index.error().to_string();
    veth0_ = *index;
  }
  void TearDown() override {
    sock_.reset();  // before the namespace goes, so nothing keeps it alive
    NetnsTest::TearDown();
  }

  RouteSocket& sock() { return *sock_; }
  unsigned ip_mtu(const std::string& dev) {
    const auto json = ns().ip_json({"link", "show", "dev", dev});
    return json.is_array() && !json.empty() ? json[0].value("mtu", 0u) : 0u;
  }

  std::optional<RouteSocket> sock_;
  int veth0_ = 0;
};

TEST_F(RouteSocketTest, DumpLinksAgreesWithIpLinkShow) {
  auto links = sock().dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  const auto json = ns().ip_json({"-d", "link", "show"});
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(links->size(), json.size());
  for (const auto& entry : json) {
    const std::string name = entry["ifname"];
    SCOPED_TRACE(name);
    const LinkInfo* link = find_link(*links, name);
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->ifindex, entry["ifindex"].get<int>());
    EXPECT_EQ(link->mtu, entry["mtu"].get<unsigned>());
    EXPECT_EQ(link->admin_up, has_flag(entry, "UP"));
    EXPECT_EQ(link->oper_state, lower(entry["operstate"]));
    EXPECT_EQ(link->mac, entry.value("address", ""));
    const std::string kind = entry.contains("linkinfo") ? entry["linkinfo"].value("info_kind", "") : "";
    EXPECT_EQ(link->kind, kind);
    EXPECT_EQ(link->min_mtu, entry.value("min_mtu", 0u));
    EXPECT_EQ(link->max_mtu, entry.value("max_mtu", 0u));
  }

  const LinkInfo* veth0 = find_link(*links, "veth0");
  const LinkInfo* veth1 = find_link(*links, "veth1");
  const LinkInfo* lo = find_link(*links, "lo");
  ASSERT_NE(veth0, nullptr);
  ASSERT_NE(veth1, nullptr);
  ASSERT_NE(lo, nullptr);
  EXPECT_EQ(veth0->ifindex, veth0_);
  EXPECT_EQ(veth0->kind, "veth");
  EXPECT_EQ(veth1->kind, "veth");
  EXPECT_EQ(veth0->mtu, 1500u);
  EXPECT_FALSE(veth0->admin_up);
  EXPECT_EQ(veth0->oper_state, "down");
  EXPECT_EQ(veth0->arptype, kArphrdEther);
  EXPECT_EQ(veth0->mac.size(), 17u);  // aa:bb:cc:dd:ee:ff
  EXPECT_NE(veth0->mac, veth1->mac);
  EXPECT_EQ(veth0->min_mtu, 68u);     // ETH_MIN_MTU
  EXPECT_EQ(veth0->max_mtu, 65535u);  // ETH_MAX_MTU
  EXPECT_TRUE(lo->admin_up);          // the fixture brings lo up
  EXPECT_EQ(lo->oper_state, "unknown");
  EXPECT_EQ(lo->kind, "");
  EXPECT_EQ(lo->arptype, kArphrdLoopback);
  EXPECT_EQ(lo->mac, "00:00:00:00:00:00");
}

TEST_F(RouteSocketTest, SetMtuChangesOnlyThatNetdev) {
  auto set = sock().set_mtu(veth0_, 9000);
  ASSERT_TRUE(set) << set.error().to_string();
  EXPECT_EQ(ip_mtu("veth0"), 9000u);
  EXPECT_EQ(ip_mtu("veth1"), 1500u);
  EXPECT_FALSE(has_flag(ns().ip_json({"link", "show", "dev", "veth0"})[0], "UP"));
  auto again = sock().set_mtu(veth0_, 9000);  // setting the current value is not an error
  EXPECT_TRUE(again) << again.error().to_string();
  auto links = sock().dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  ASSERT_NE(find_link(*links, "veth0"), nullptr);
  EXPECT_EQ(find_link(*links, "veth0")->mtu, 9000u);
}

TEST_F(RouteSocketTest, SetMtuAboveMaximumIsEinvalWithKernelReason) {
  auto set = sock().set_mtu(veth0_, 70000);
  ASSERT_FALSE(set);
  const Error& e = set.error();
  EXPECT_EQ(e.err_no, EINVAL);
  EXPECT_EQ(e.kind, ErrorKind::kPlatform);
  EXPECT_EQ(e.where, "veth0");
  EXPECT_NE(e.message.find("set mtu 70000"), std::string::npos) << e.message;
  EXPECT_EQ(ip_mtu("veth0"), 1500u);

  // The same request through iproute2: whatever extended ack the kernel gave it, we must carry.
  std::string err;
  ASSERT_NE(ns().ip({"link", "set", "dev", "veth0", "mtu", "70000"}, nullptr, &err), 0);
  const std::string reason = ip_ext_ack(err);
  if (!reason.empty()) {
    EXPECT_NE(e.message.find(reason), std::string::npos)
        << "kernel said \"" << reason << "\", error was: " << e.to_string();
  }
}

TEST_F(RouteSocketTest, SetAdminStateUpAndDown) {
  auto up = sock().set_admin_state(veth0_, true);
  ASSERT_TRUE(up) << up.error().to_string();
  EXPECT_TRUE(has_flag(ns().ip_json({"link", "show", "dev", "veth0"})[0], "UP"));
  EXPECT_FALSE(has_flag(ns().ip_json({"link", "show", "dev", "veth1"})[0], "UP"));
  EXPECT_EQ(ip_mtu("veth0"), 1500u);

  // With both ends up the carrier comes and the kernel reports IF_OPER_UP.
  auto index1 = ns().ifindex("veth1");
  ASSERT_TRUE(index1) << index1.error().to_string();
  auto peer_up = sock().set_admin_state(*index1, true);
  ASSERT_TRUE(peer_up) << peer_up.error().to_string();
  std::string oper;
  const auto stop_at = std::chrono::steady_clock::now() + kOperStateWait;
  while (std::chrono::steady_clock::now() < stop_at) {
    auto links = sock().dump_links();
    ASSERT_TRUE(links) << links.error().to_string();
    ASSERT_NE(find_link(*links, "veth0"), nullptr);
    oper = find_link(*links, "veth0")->oper_state;
    if (oper == "up") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(oper, "up");

  auto down = sock().set_admin_state(veth0_, false);
  ASSERT_TRUE(down) << down.error().to_string();
  EXPECT_FALSE(has_flag(ns().ip_json({"link", "show", "dev", "veth0"})[0], "UP"));
  EXPECT_TRUE(has_flag(ns().ip_json({"link", "show", "dev", "veth1"})[0], "UP"));
  auto links = sock().dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  EXPECT_FALSE(find_link(*links, "veth0")->admin_up);
  EXPECT_TRUE(find_link(*links, "veth1")->admin_up);
}

TEST_F(RouteSocketTest, AddAndDeleteIpv4AndIpv6Addresses) {
  auto v4 = sock().add_address(veth0_, "10.0.0.1/24");
  ASSERT_TRUE(v4) << v4.error().to_string();
  auto v6 = sock().add_address(veth0_, "2001:db8::1/64");
  ASSERT_TRUE(v6) << v6.error().to_string();
  EXPECT_EQ(ip_addresses(ns(), "veth0"),
            (std::set<std::string>{"inet 10.0.0.1/24", "inet6 2001:db8::1/64"}));
  EXPECT_TRUE(ip_addresses(ns(), "veth1").empty());

  // Like `ip addr add 10.0.0.1/24 dev veth0`: global scope and no broadcast unless asked for.
  const auto json = ns().ip_json({"-4", "addr", "show", "dev", "veth0"});
  ASSERT_EQ(json[0]["addr_info"].size(), 1u);
  EXPECT_EQ(json[0]["addr_info"][0]["scope"], "global");
  EXPECT_FALSE(json[0]["addr_info"][0].contains("broadcast")) << json.dump();

  auto del4 = sock().delete_address(veth0_, "10.0.0.1/24");
  ASSERT_TRUE(del4) << del4.error().to_string();
  EXPECT_EQ(ip_addresses(ns(), "veth0"), (std::set<std::string>{"inet6 2001:db8::1/64"}));
  auto del6 = sock().delete_address(veth0_, "2001:db8::1/64");
  ASSERT_TRUE(del6) << del6.error().to_string();
  EXPECT_TRUE(ip_addresses(ns(), "veth0").empty());
}

TEST_F(RouteSocketTest, DumpAddressesIsCanonicalAndMatchesIpAddr) {
  ASSERT_TRUE(sock().add_address(veth0_, "2001:DB8:0:0:0:0:0:5/64"));
  ASSERT_TRUE(sock().add_address(veth0_, "10.1.2.3/16"));
  auto addrs = sock().dump_addresses();
  ASSERT_TRUE(addrs) << addrs.error().to_string();

  std::set<std::string> ours;
  for (const auto& a : *addrs) {
    ours.insert(std::to_string(a.ifindex) + " " + (a.family == AF_INET ? "inet " : "inet6 ") + a.cidr +
                " scope " + std::to_string(a.scope));
  }
  // ip -j prints scope names; these are the values of the ones a fresh namespace can have.
  const std::map<std::string, int> scopes = {{"global", 0}, {"link", 253}, {"host", 254}};
  std::set<std::string> theirs;
  for (const auto& link : ns().ip_json({"addr", "show"})) {
    for (const auto& a : link["addr_info"]) {
      theirs.insert(std::to_string(link["ifindex"].get<int>()) + " " + a["family"].get<std::string>() +
                    " " + a["local"].get<std::string>() + "/" + std::to_string(a["prefixlen"].get<int>()) +
                    " scope " + std::to_string(scopes.at(a["scope"])));
    }
  }
  EXPECT_EQ(ours, theirs);
  const std::string v0 = std::to_string(veth0_);
  EXPECT_TRUE(ours.count(v0 + " inet6 2001:db8::5/64 scope 0")) << ::testing::PrintToString(ours);
  EXPECT_TRUE(ours.count(v0 + " inet 10.1.2.3/16 scope 0")) << ::testing::PrintToString(ours);
  EXPECT_TRUE(ours.count("1 inet 127.0.0.1/8 scope 254")) << ::testing::PrintToString(ours);
  EXPECT_TRUE(ours.count("1 inet6 ::1/128 scope 254")) << ::testing::PrintToString(ours);

  const auto lo4 = std::find_if(addrs->begin(), addrs->end(),
                                [](const AddressInfo& a) { return a.cidr == "127.0.0.1/8"; });
  ASSERT_NE(lo4, addrs->end());
  EXPECT_FALSE(lo4->link_local());
}

TEST_F(RouteSocketTest, AddingAnExistingAddressIsEexistNamingTheNetdev) {
  ASSERT_TRUE(sock().add_address(veth0_, "10.0.0.1/24"));
  ASSERT_TRUE(sock().add_address(veth0_, "2001:db8::1/64"));
  for (const std::string cidr : {"10.0.0.1/24", "2001:db8::1/64"}) {
    SCOPED_TRACE(cidr);
    auto again = sock().add_address(veth0_, cidr);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().err_no, EEXIST);
    EXPECT_EQ(again.error().where, "veth0");
    EXPECT_NE(again.error().message.find("add address " + cidr), std::string::npos)
        << again.error().to_string();
    std::string err;
    ASSERT_NE(ns().ip({"addr", "add", cidr, "dev", "veth0"}, nullptr, &err), 0);
    const std::string reason = ip_ext_ack(err);
    if (!reason.empty()) {
      EXPECT_NE(again.error().message.find(reason), std::string::npos)
          << "kernel said \"" << reason << "\", error was: " << again.error().to_string();
    }
  }
  // The socket stays usable after an error, and the failed adds changed nothing.
  auto addrs = sock().dump_addresses();
  ASSERT_TRUE(addrs) << addrs.error().to_string();
  const auto on_veth0 = std::count_if(addrs->begin(), addrs->end(),
                                      [&](const AddressInfo& a) { return a.ifindex == veth0_; });
  EXPECT_EQ(on_veth0, 2);
}

TEST_F(RouteSocketTest, DeletingAMissingAddressFails) {
  auto del = sock().delete_address(veth0_, "10.9.9.9/24");
  ASSERT_FALSE(del);
  EXPECT_EQ(del.error().err_no, EADDRNOTAVAIL);
  EXPECT_EQ(del.error().where, "veth0");
  EXPECT_NE(del.error().message.find("delete address 10.9.9.9/24"), std::string::npos);
}

TEST_F(RouteSocketTest, UnknownIfindexIsNotFound) {
  auto set = sock().set_mtu(999999, 1500);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().err_no, ENODEV);
  EXPECT_EQ(set.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(set.error().where, "ifindex 999999");
}

TEST_F(RouteSocketTest, MalformedCidrIsRejectedBeforeTheKernel) {
  auto add = sock().add_address(veth0_, "10.0.0.1");
  ASSERT_FALSE(add);
  EXPECT_EQ(add.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_NE(add.error().message.find("no prefix length"), std::string::npos) << add.error().message;
  EXPECT_TRUE(ip_addresses(ns(), "veth0").empty());
}

TEST_F(RouteSocketTest, OneDumpListsFiftyVethPairs) {
  std::vector<std::string> batch;
  for (int i = 0; i < kManyPairs; ++i) {
    batch.push_back("link add va" + std::to_string(i) + " type veth peer name vb" + std::to_string(i));
  }
  auto added = ns().ip_batch(batch);
  ASSERT_TRUE(added) << added.error().to_string();

  auto links = sock().dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  std::map<std::string, int> ours;
  for (const auto& l : *links) ours[l.name] = l.ifindex;
  std::map<std::string, int> theirs;
  for (const auto& l : ns().ip_json({"link", "show"})) theirs[l["ifname"]] = l["ifindex"];
  EXPECT_EQ(ours, theirs);
  EXPECT_EQ(ours.size(), 2u * kManyPairs + 3u);  // + lo, veth0, veth1
  for (int i = 0; i < kManyPairs; ++i) {
    EXPECT_TRUE(ours.count("va" + std::to_string(i)) && ours.count("vb" + std::to_string(i))) << i;
  }
}

TEST_F(RouteSocketTest, MovedSocketKeepsWorking) {
  RouteSocket moved = std::move(sock());
  auto links = moved.dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  EXPECT_NE(find_link(*links, "veth0"), nullptr);

  sock() = std::move(moved);  // and back by assignment; the moved-from ones close nothing
  ASSERT_TRUE(sock().set_mtu(veth0_, 4000));
  EXPECT_EQ(ip_mtu("veth0"), 4000u);
}

// Links carry what snapshots need: ifi_flags, IFLA_LINK (a macvlan's lower device; a veth's
// peer) and IFLA_MASTER, as `ip -d link` shows them; mtu_related_links follows the macvlan and the
// bridge but not the veth peer.
TEST_F(RouteSocketTest, DumpLinksGivesFlagsLowerDeviceAndMaster) {
  ASSERT_EQ(ns().ip({"link", "add", "link", "veth0", "name", "mv0", "type", "macvlan", "mode", "bridge"}), 0);
  ASSERT_EQ(ns().ip({"link", "add", "br0", "type", "bridge"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "master", "br0"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up", "promisc", "on"}), 0);
  auto links = sock().dump_links();
  ASSERT_TRUE(links) << links.error().to_string();
  const auto json = ns().ip_json({"-d", "link", "show"});
  std::map<std::string, int> index;
  for (const auto& entry : json) index[entry["ifname"]] = entry["ifindex"];
  for (const auto& entry : json) {
    const std::string name = entry["ifname"];
    SCOPED_TRACE(name);
    const LinkInfo* link = find_link(*links, name);
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->link, entry.contains("link") ? index.at(entry["link"]) : 0);
    EXPECT_EQ(link->master, entry.contains("master") ? index.at(entry["master"]) : 0);
    EXPECT_EQ((link->flags & IFF_UP) != 0, has_flag(entry, "UP"));
    EXPECT_EQ((link->flags & IFF_PROMISC) != 0, has_flag(entry, "PROMISC"));
    EXPECT_EQ((link->flags & IFF_BROADCAST) != 0, has_flag(entry, "BROADCAST"));
  }
  EXPECT_EQ(find_link(*links, "mv0")->link, veth0_);
  EXPECT_EQ(find_link(*links, "veth0")->link, index.at("veth1"));  // the peer
  EXPECT_EQ(find_link(*links, "veth1")->master, index.at("br0"));
  EXPECT_EQ(mtu_related_links(*links, veth0_), std::vector<int>{index.at("mv0")});
  EXPECT_EQ(mtu_related_links(*links, index.at("veth1")), std::vector<int>{index.at("br0")});
  // What mtu_related_links claims, on the kernel: veth0 down to 1400 takes mv0 with it, the
  // bridge follows its only port, and neither comes back up with them.
  ASSERT_TRUE(sock().set_mtu(veth0_, 1400));
  ASSERT_TRUE(sock().set_mtu(index.at("veth1"), 1400));
  EXPECT_EQ(ip_mtu("mv0"), 1400u);
  EXPECT_EQ(ip_mtu("br0"), 1400u);
  ASSERT_TRUE(sock().set_mtu(veth0_, 1500));
  EXPECT_EQ(ip_mtu("mv0"), 1400u);
}

// `ip addr add` with every option an address can have; each (family, local) -> its addr_info.
std::map<std::string, nlohmann::json> add_flagged_addresses(const TestNamespace& ns) {
  const std::vector<std::vector<std::string>> adds = {
      {"addr", "add", "10.96.0.1/24", "dev", "veth0", "scope", "link", "noprefixroute"},
      {"addr", "add", "10.97.0.1", "peer", "10.97.0.2/32", "dev", "veth0"},
      {"addr", "add", "10.95.0.1/24", "dev", "veth0", "label", "veth0:a", "broadcast", "10.95.0.200", "valid_lft",
       "3600", "preferred_lft", "1800", "metric", "7"},
      {"addr", "add", "fd00:96::1/64", "dev", "veth0", "nodad", "noprefixroute", "valid_lft", "4000",
       "preferred_lft", "2000"},
      {"addr", "add", "fd00:95::1/64", "dev", "veth0", "metric", "50"},
  };
  for (const auto& a : adds) EXPECT_EQ(ns.ip(a), 0) << ::testing::PrintToString(a);
  std::map<std::string, nlohmann::json> out;
  const auto json = ns.ip_json({"addr", "show", "dev", "veth0"});
  for (const auto& a : json[0]["addr_info"]) out[a["local"].get<std::string>()] = a;
  return out;
}

TEST_F(RouteSocketTest, DumpAddressesCarriesEveryAttribute) {
  const auto theirs = add_flagged_addresses(ns());
  auto addrs = sock().dump_addresses();
  ASSERT_TRUE(addrs) << addrs.error().to_string();
  int seen = 0;
  for (const AddressInfo& a : *addrs) {
    if (a.ifindex != veth0_) continue;
    const std::string local = a.cidr.substr(0, a.cidr.find('/'));
    SCOPED_TRACE(local);
    ASSERT_TRUE(theirs.count(local));
    const auto& ip = theirs.at(local);
    ++seen;
    EXPECT_EQ(a.peer, ip.value("address", ""));
    EXPECT_EQ(a.broadcast, ip.value("broadcast", ""));
    EXPECT_EQ(a.label, ip.value("label", ""));
    EXPECT_EQ((a.flags & IFA_F_NODAD) != 0, ip.value("nodad", false));
    EXPECT_EQ((a.flags & IFA_F_NOPREFIXROUTE) != 0, ip.value("noprefixroute", false));
    EXPECT_EQ(a.link_local(), local.rfind("fe80:", 0) == 0);
    EXPECT_EQ(a.metric.has_value(), ip.contains("metric"));
    if (a.metric) {
      EXPECT_EQ(*a.metric, ip["metric"].get<unsigned>());
    }
    // The dump and `ip` ran moments apart: a lifetime may have ticked once.
    EXPECT_LE(std::llabs(static_cast<long long>(a.valid_lft) - ip["valid_life_time"].get<long long>()), 1);
    EXPECT_LE(std::llabs(static_cast<long long>(a.preferred_lft) - ip["preferred_life_time"].get<long long>()), 1);
  }
  EXPECT_EQ(seen, static_cast<int>(theirs.size()));
}

// Deleting each address as dumped (a point-to-point address is named by its peer) and adding it
// back from the dump gives `ip addr` exactly what it showed, lifetimes as they were then.
TEST_F(RouteSocketTest, AddressesPutBackFromTheDumpAreAsBefore) {
  const auto before = add_flagged_addresses(ns());
  auto addrs = sock().dump_addresses();
  ASSERT_TRUE(addrs) << addrs.error().to_string();
  std::vector<AddressInfo> ours;
  for (const AddressInfo& a : *addrs) {
    if (a.ifindex == veth0_ && !a.link_local()) ours.push_back(a);
  }
  ASSERT_EQ(ours.size(), 5u);
  for (const AddressInfo& a : ours) {
    auto del = sock().delete_address(a);
    ASSERT_TRUE(del) << del.error().to_string();
  }
  EXPECT_TRUE(ns().ip_json({"addr", "show", "dev", "veth0"})[0]["addr_info"].empty());
  // Oldest first for IPv6 (the kernel lists the newest first); IPv4 in order.
  for (const AddressInfo& a : ours) {
    if (a.family == AF_INET) {
      ASSERT_TRUE(sock().add_address(a)) << a.cidr;
    }
  }
  for (auto it = ours.rbegin(); it != ours.rend(); ++it) {
    if (it->family == AF_INET6) {
      ASSERT_TRUE(sock().add_address(*it)) << it->cidr;
    }
  }
  std::map<std::string, nlohmann::json> after;
  const auto json = ns().ip_json({"addr", "show", "dev", "veth0"});
  for (const auto& a : json[0]["addr_info"]) after[a["local"].get<std::string>()] = a;
  for (auto& [local, a] : after) {
    for (const char* field : {"valid_life_time", "preferred_life_time"}) {
      if (before.count(local) && std::llabs(a[field].get<long long>() - before.at(local)[field].get<long long>()) <= 2) {
        a[field] = before.at(local)[field];
      }
    }
  }
  EXPECT_EQ(nlohmann::json(after), nlohmann::json(before));
  // And `ip addr add CIDR` would not have: the same address without its attributes differs.
  AddressInfo plain;
  plain.ifindex = veth0_;
  plain.family = AF_INET;
  plain.cidr = "10.95.0.1/24";
  ASSERT_TRUE(sock().delete_address(plain));
  ASSERT_TRUE(sock().add_address(veth0_, "10.95.0.1/24"));
  const auto plain_json = ns().ip_json({"-4", "addr", "show", "dev", "veth0"});
  bool found = false;
  for (const auto& a : plain_json[0]["addr_info"]) {
    if (a["local"] != "10.95.0.1") continue;
    found = true;
    EXPECT_NE(a, before.at("10.95.0.1"));
  }
  EXPECT_TRUE(found);
}

// The IPv4 routes of every table as `ip -j route show table all` prints them, and the IPv6 ones.
nlohmann::json ip_routes(const TestNamespace& ns) {
  return {{"inet", ns.ip_json({"-4", "route", "show", "table", "all"})},
          {"inet6", ns.ip_json({"-6", "route", "show", "table", "all"})}};
}

// dump_routes lists every table of both families; restore_route sends a dumped route back so
// that `ip route` shows it exactly as before: tables, protocols, scopes, metrics, prefsrc, a
// multipath route, and a route dumped with the linkdown flag (veth0's peer is down), which the
// kernel refuses in a request.
TEST_F(RouteSocketTest, DumpedRoutesRestoreExactly) {
  ASSERT_EQ(ns().ip({"link", "add", "veth2", "type", "veth", "peer", "name", "veth3"}), 0);
  for (const char* dev : {"veth0", "veth2", "veth3"}) ASSERT_EQ(ns().ip({"link", "set", dev, "up"}), 0) << dev;
  ASSERT_EQ(ns().ip({"addr", "add", "10.99.0.1/24", "dev", "veth0"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "10.98.0.1/24", "dev", "veth2"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "fd00:99::1/64", "dev", "veth0", "nodad"}), 0);
  const std::vector<std::vector<std::string>> adds = {
      {"route", "add", "10.1.0.0/16", "via", "10.99.0.254", "dev", "veth0"},
      {"route", "add", "10.2.0.0/16", "via", "10.98.0.254", "dev", "veth2", "table", "100", "proto", "static",
       "metric", "5", "mtu", "1400", "initcwnd", "10"},
      {"route", "add", "10.3.0.0/16", "dev", "veth2", "src", "10.99.0.1", "proto", "42", "scope", "link"},
      {"route", "add", "10.4.0.0/16", "table", "101", "nexthop", "via", "10.99.0.254", "dev", "veth0", "weight", "2",
       "nexthop", "via", "10.98.0.254", "dev", "veth2"},
      {"route", "add", "blackhole", "10.5.0.0/16", "table", "102"},
      {"-6", "route", "add", "fd00:1::/64", "via", "fd00:99::fe", "dev", "veth0", "table", "200", "proto", "static",
       "metric", "100"},
      {"-6", "route", "add", "fd00:2::/64", "dev", "veth0", "src", "fd00:99::1", "metric", "300"},
  };
  for (const auto& a : adds) ASSERT_EQ(ns().ip(a), 0) << ::testing::PrintToString(a);
  const nlohmann::json before = ip_routes(ns());
  ASSERT_NE(before["inet"].dump().find("linkdown"), std::string::npos) << before.dump();  // veth1 is down

  auto routes = sock().dump_routes();
  ASSERT_TRUE(routes) << routes.error().to_string();
  // Every route ip shows, and no other (ip shows cloned routes only when asked).
  EXPECT_EQ(routes->size(), before["inet"].size() + before["inet6"].size());
  std::vector<RouteInfo> static_routes;
  for (const RouteInfo& r : *routes) {
    if (r.protocol != RTPROT_KERNEL) static_routes.push_back(r);
  }
  ASSERT_EQ(static_routes.size(), adds.size());
  const auto multipath = std::find_if(static_routes.begin(), static_routes.end(),
                                      [](const RouteInfo& r) { return r.dst == "10.4.0.0/16"; });
  ASSERT_NE(multipath, static_routes.end());
  EXPECT_EQ(multipath->nexthops.size(), 2u);
  EXPECT_EQ(multipath->table, 101u);
  const auto with_metrics = std::find_if(static_routes.begin(), static_routes.end(),
                                         [](const RouteInfo& r) { return r.dst == "10.2.0.0/16"; });
  ASSERT_NE(with_metrics, static_routes.end());
  EXPECT_EQ(with_metrics->metrics, (std::map<std::string, std::string>{{"initcwnd", "10"}, {"mtu", "1400"}}));
  EXPECT_EQ(with_metrics->priority, 5u);
  EXPECT_EQ(with_metrics->protocol, static_cast<unsigned>(RTPROT_STATIC));

  // Gone: every route we added (and the IPv6 prefsrc, with a delete and re-add of its address).
  for (const RouteInfo& r : static_routes) {
    const std::vector<std::string> del = {r.family == AF_INET ? "-4" : "-6", "route", "del", r.dst, "table",
                                          std::to_string(r.table)};
    std::vector<std::string> argv = del;
    if (r.type == RTN_BLACKHOLE) argv.insert(argv.begin() + 3, "blackhole");
    if (r.priority) {
      argv.push_back("metric");
      argv.push_back(std::to_string(*r.priority));
    }
    ASSERT_EQ(ns().ip(argv), 0) << ::testing::PrintToString(argv);
  }
  for (const RouteInfo& r : static_routes) {
    auto restored = sock().restore_route(r);
    EXPECT_TRUE(restored) << restored.error().to_string();
  }
  EXPECT_EQ(ip_routes(ns()), before);

  // An IPv6 route keeps its place when its prefsrc goes (fib6_remove_prefsrc): restore_route
  // replaces it rather than failing on EEXIST.
  ASSERT_EQ(ns().ip({"addr", "del", "fd00:99::1/64", "dev", "veth0"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "fd00:99::1/64", "dev", "veth0", "nodad"}), 0);
  const auto prefsrc = std::find_if(static_routes.begin(), static_routes.end(),
                                    [](const RouteInfo& r) { return r.dst == "fd00:2::/64"; });
  ASSERT_NE(prefsrc, static_routes.end());
  ASSERT_NE(ip_routes(ns()), before);
  auto replaced = sock().restore_route(*prefsrc);
  EXPECT_TRUE(replaced) << replaced.error().to_string();
  EXPECT_EQ(ip_routes(ns()), before);
}

// Names of the netdevs (symlinks; not files such as bonding_masters) in /sys/class/net.
std::set<std::string> sys_class_net() {
  std::set<std::string> names;
  DIR* dir = opendir("/sys/class/net");
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_type == DT_LNK) names.insert(entry->d_name);
  }
  closedir(dir);
  return names;
}

class EnterNetnsTest : public NetnsTest {};

TEST_F(EnterNetnsTest, ForkedChildSeesTheNamespacesNetdevs) {
  ASSERT_TRUE(ns().add_veth("veth0", "veth1"));
  const std::set<std::string> host_before = sys_class_net();
  ASSERT_FALSE(host_before.empty());

  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const std::string name = ns().name();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only the child enters: it writes what it sees and exits with a code the parent checks.
    close(report[0]);
    auto entered = enter_netns(name);
    std::string text;
    int code = 0;
    if (!entered) {
      text = "enter_netns failed: " + entered.error().to_string() + "\n";
      code = 2;
    } else {
      for (const auto& n : sys_class_net()) text += "sys " + n + "\n";
      auto sock = RouteSocket::open();
      auto links = sock ? sock->dump_links() : Result<std::vector<LinkInfo>>(sock.error());
      if (links) {
        std::set<std::string> names;  // dump order is ifindex order, not the name order of /sys
        for (const auto& l : *links) names.insert(l.name);
        for (const auto& n : names) text += "netlink " + n + "\n";
      } else {
        text += "dump_links failed: " + links.error().to_string() + "\n";
        code = 3;
      }
    }
    const ssize_t written = write(report[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? code : 4);
  }
  close(report[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_EQ(text, "sys lo\nsys veth0\nsys veth1\nnetlink lo\nnetlink veth0\nnetlink veth1\n");
  // The child's /sys remount stayed in its own mount namespace.
  EXPECT_EQ(sys_class_net(), host_before);
}

TEST(EnterNetns, MissingNamespaceIsNotFound) {
  const std::string name = "rdmactl-test-missing-" + std::to_string(getpid());
  ASSERT_NE(access(("/run/netns/" + name).c_str(), F_OK), 0);
  auto entered = enter_netns(name);  // fails at open, before anything changes in this process
  ASSERT_FALSE(entered);
  EXPECT_EQ(entered.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(entered.error().err_no, ENOENT);
  EXPECT_NE(entered.error().message.find("network namespace \"" + name + "\" not found (ip netns list)"),
            std::string::npos)
      << entered.error().message;
}

TEST(EnterNetns, PathLikeNameIsAUsageError) {
  for (const std::string name : {"", "..", "a/b", "../../proc/1/ns/net"}) {
    auto entered = enter_netns(name);
    ASSERT_FALSE(entered) << name;
    EXPECT_EQ(entered.error().kind, ErrorKind::kUsage) << name;
  }
}

// The fixture itself: other engineers' end-to-end tests rely on it.
class NetnsFixtureTest : public NetnsTest {};

TEST_F(NetnsFixtureTest, SysctlAndExecSeeTheNamespace) {
  ASSERT_TRUE(ns().add_veth("rdtsys0", "rdtsys1"));
  auto mtu = ns().sysctl("net.ipv6.conf.rdtsys0.mtu");
  ASSERT_TRUE(mtu) << mtu.error().to_string();
  EXPECT_EQ(*mtu, "1500");
  EXPECT_NE(access("/proc/sys/net/ipv6/conf/rdtsys0", F_OK), 0) << "the host must not see it";
  std::string out;
  ASSERT_EQ(ns().exec({"cat", "/sys/class/net/rdtsys1/mtu"}, &out), 0);
  EXPECT_EQ(out, "1500\n");
  auto missing = ns().sysctl("net.ipv6.conf.nosuchdev0.mtu");
  EXPECT_FALSE(missing);
}

TEST_F(NetnsFixtureTest, IpJsonShowsLoopbackUp) {
  const auto json = ns().ip_json({"link", "show", "dev", "lo"});
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["ifname"], "lo");
  EXPECT_TRUE(has_flag(json[0], "UP"));
  std::string err;
  EXPECT_NE(ns().ip({"link", "show", "dev", "nosuchdev0"}, nullptr, &err), 0);
  EXPECT_NE(err.find("nosuchdev0"), std::string::npos) << err;
}

TEST_F(NetnsFixtureTest, DestructorRemovesTheNamespace) {
  auto created = TestNamespace::create();
  ASSERT_TRUE(created) << created.error().to_string();
  const std::string name = created->name();
  EXPECT_NE(name, ns().name());
  {
    TestNamespace owned = std::move(created).value();
    ASSERT_TRUE(owned.add_veth("veth0", "veth1"));
    ASSERT_EQ(access(("/run/netns/" + name).c_str(), F_OK), 0);
  }
  EXPECT_NE(access(("/run/netns/" + name).c_str(), F_OK), 0);
  std::string list;
  ASSERT_EQ(test::run_command({"ip", "netns", "list"}, &list), 0);
  EXPECT_EQ(list.find(name + " "), std::string::npos) << list;
  EXPECT_EQ(list.find(name + "\n"), std::string::npos) << list;
}

TEST(RunCommand, CapturesStdoutStderrAndExitCode) {
  std::string out;
  std::string err;
  EXPECT_EQ(test::run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, &out, &err), 3);
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
  EXPECT_EQ(test::run_command({"/nonexistent/rdmactl-test-program"}, &out, &err), test::kSpawnFailed);
  EXPECT_NE(err.find("/nonexistent/rdmactl-test-program"), std::string::npos) << err;
  EXPECT_EQ(test::run_command({"sh", "-c", "kill -TERM $$"}), 128 + SIGTERM);
}

TEST(RunCommand, KillsAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  std::string err;
  EXPECT_EQ(test::run_command({"sleep", "30"}, nullptr, &err, std::chrono::milliseconds(200)),
            test::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(err.find("killed"), std::string::npos) << err;
}

}  // namespace netns_netlink_test
}  // namespace rdmactl
