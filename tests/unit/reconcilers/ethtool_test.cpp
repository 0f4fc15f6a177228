// SPDX-License-Identifier: Apache-2.0
// The ethtool reconciler: its diff against HostStates built here (every refusal ethtool.cpp cites,
// the disruptive notes), and observe/apply/rollback against FakeEthtoolKernel at the message level
// (one SET per message family per netdev). The real kernel: tests/netns/ethtool_test.cpp (veth)
// and tests/vm/checks/41-ethtool-netdevsim.sh (netdevsim).
#include "reconcilers/ethtool/ethtool.h"

#include <gtest/gtest.h>
#include <linux/ethtool_netlink.h>

#include <algorithm>
#include <string>

#include "tests/unit/platform/fake_ethtool.h"

namespace rdmactl {
namespace reconcilers_ethtool_test {

using nlohmann::json;

NetdevState netdev(const std::string& name, int ifindex, const std::string& driver, const std::string& kind,
                   json ethtool) {
  NetdevState n;
  n.name = name;
  n.ifindex = ifindex;
  n.state = "up";
  n.driver = driver;
  n.kind = kind;
  n.ethtool = std::move(ethtool);
  return n;
}

// What observe records for each driver (fake_ethtool.h's defaults).
const json kNsim = {{"rings", {{"rx", 0}, {"rxMax", 4096}, {"rxMini", 0}, {"rxMiniMax", 4096},
                               {"rxJumbo", 0}, {"rxJumboMax", 4096}, {"tx", 0}, {"txMax", 4096}}},
                    {"channels", {{"combined", 2}, {"combinedMax", 4}}},
                    {"pause", {{"autoneg", false}, {"rx", false}, {"tx", false}}}};
const json kVeth = {{"rings", {{"unsupported", true}}},
                    {"channels", {{"rx", 1}, {"rxMax", 4}, {"tx", 1}, {"txMax", 4}}},
                    {"pause", {{"unsupported", true}}}};
const json kMlx5 = {{"rings", {{"rx", 1024}, {"rxMax", 8192}, {"tx", 1024}, {"txMax", 8192}}},
                    {"channels", {{"combined", 8}, {"combinedMax", 63}}},
                    {"pause", {{"autoneg", false}, {"rx", true}, {"tx", true}}}};

HostState host() {
  HostState s;
  s.netdevs.push_back(netdev("eni1np1", 4, "netdevsim", "", kNsim));
  s.netdevs.push_back(netdev("veth0", 5, "", "veth", kVeth));
  s.netdevs.push_back(netdev("ens1f0np0", 6, "mlx5_core", "", kMlx5));
  s.index_netdevs();
  return s;
}

InterfaceSpec iface(const std::string& name) {
  InterfaceSpec i;
  i.selector.kind = Selector::Kind::kName;
  i.selector.value = name;
  i.origin = SourceMark{"fabric.yaml", 12, 7, "nodes[0].interfaces[0]"};
  return i;
}

DiffResult diff(const InterfaceSpec& i, const HostState& state = host()) {
  NodeSpec spec;
  spec.interfaces.push_back(i);
  DiffResult out;
  reconcilers::make_ethtool_reconciler()->diff(spec, state, out);
  return out;
}

std::string errors_of(const DiffResult& d) {
  std::string all;
  for (const Error& e : d.errors) all += e.where + ": " + e.message + "\n";
  return all;
}

TEST(EthtoolDiff, AnEqualValueIsComparedOnly) {
  InterfaceSpec i = iface("eni1np1");
  i.ethtool.channels.combined = 2;
  i.ethtool.pause.rx = false;
  const DiffResult d = diff(i);
  EXPECT_TRUE(d.changes.empty());
  EXPECT_TRUE(d.errors.empty()) << errors_of(d);
  ASSERT_EQ(d.checked.size(), 2u);
  EXPECT_EQ(d.checked[0].resource, "netdev/eni1np1");
  EXPECT_EQ(d.checked[0].field, "ethtool.channels.combined");
  EXPECT_EQ(d.checked[1].field, "ethtool.pause.rx");
}

TEST(EthtoolDiff, AChangeCarriesTheObservedValueAsCurrent) {
  InterfaceSpec i = iface("eni1np1");
  i.ethtool.rings.rx = 512;
  i.ethtool.pause.tx = true;
  const DiffResult d = diff(i);
  ASSERT_EQ(d.changes.size(), 2u) << errors_of(d);
  EXPECT_EQ(d.changes[0].field, "ethtool.rings.rx");
  EXPECT_EQ(d.changes[0].current, 0);
  EXPECT_EQ(d.changes[0].desired, 512);
  EXPECT_FALSE(d.changes[0].disruptive);  // nsim_set_ringparam stores the sizes
  EXPECT_EQ(d.changes[0].via, "ethtool netlink ETHTOOL_MSG_RINGS_SET");
  EXPECT_EQ(d.changes[1].field, "ethtool.pause.tx");
  EXPECT_EQ(d.changes[1].current, false);
  EXPECT_EQ(d.changes[1].desired, true);
}

TEST(EthtoolDiff, RingsOrPauseOnVethAreErrorsNamingVeth) {
  InterfaceSpec i = iface("veth0");
  i.ethtool.rings.rx = 512;
  i.ethtool.rings.tx = 512;
  i.ethtool.pause.rx = false;
  const DiffResult d = diff(i);
  EXPECT_TRUE(d.changes.empty());
  ASSERT_EQ(d.errors.size(), 2u) << errors_of(d);  // one per message family, not per field
  EXPECT_EQ(d.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_NE(d.errors[0].message.find("veth (veth0) does not support ethtool rings"), std::string::npos);
  EXPECT_NE(d.errors[0].where.find("fabric.yaml:12:7"), std::string::npos) << d.errors[0].where;
  EXPECT_NE(d.errors[1].message.find("does not support ethtool pause"), std::string::npos);
}

TEST(EthtoolDiff, AValueAboveTheMaximumIsAnErrorGivingIt) {
  InterfaceSpec i = iface("eni1np1");
  i.ethtool.rings.tx = 8192;
  const DiffResult d = diff(i);
  EXPECT_TRUE(d.changes.empty());
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("8192 is above the maximum of netdevsim on eni1np1: 4096"), std::string::npos)
      << d.errors[0].message;
}

TEST(EthtoolDiff, ARingOrChannelKindTheDriverLacksIsAnError) {
  InterfaceSpec i = iface("ens1f0np0");
  i.ethtool.rings.rx_jumbo = 256;
  i.ethtool.channels.rx = 4;
  const DiffResult d = diff(i);
  EXPECT_TRUE(d.changes.empty());
  const std::string all = errors_of(d);
  EXPECT_NE(all.find("mlx5_core (ens1f0np0) has no rxJumbo ring"), std::string::npos) << all;
  EXPECT_NE(all.find("has no rx channels"), std::string::npos) << all;
}

TEST(EthtoolDiff, ChannelsThatLeaveNoRxOrTxAreRefusedAsTheKernelDoes) {
  HostState state = host();
  // A driver with separate rx/tx and combined channels (ethnl_set_channels' own rule).
  state.netdevs.push_back(netdev("eth9", 9, "ixgbe", "",
                                 {{"channels", {{"rx", 0}, {"rxMax", 8}, {"tx", 0}, {"txMax", 8},
                                                {"combined", 4}, {"combinedMax", 8}}}}));
  state.index_netdevs();
  InterfaceSpec i = iface("eth9");
  i.ethtool.channels.combined = 0;
  const DiffResult d = diff(i, state);
  EXPECT_TRUE(d.changes.empty());
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("no RX channel"), std::string::npos) << d.errors[0].message;
  EXPECT_NE(d.errors[0].message.find("ethnl_set_channels"), std::string::npos);

  i.ethtool.channels.rx = 2;
  i.ethtool.channels.tx = 2;
  const DiffResult fine = diff(i, state);
  EXPECT_TRUE(fine.errors.empty()) << errors_of(fine);
  EXPECT_EQ(fine.changes.size(), 3u);
}

// veth_set_channels refuses rx or tx 0 itself, but veth has no combined channels: the core's rule
// (ethnl_set_channels) refuses it first, as it does mlx5's combined 0 (mlx5 has nothing else).
TEST(EthtoolDiff, VethWithoutRxAndMlx5WithoutCombinedAreRefusedByTheCoresRule) {
  InterfaceSpec veth = iface("veth0");
  veth.ethtool.channels.tx = 0;
  DiffResult d = diff(veth);
  EXPECT_TRUE(d.changes.empty());
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("rx 1, tx 0 would leave veth0 no TX channel"), std::string::npos)
      << d.errors[0].message;
  InterfaceSpec mlx5 = iface("ens1f0np0");
  mlx5.ethtool.channels.combined = 0;
  d = diff(mlx5);
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("no RX channel, which the kernel refuses (ethnl_set_channels)"),
            std::string::npos)
      << d.errors[0].message;
}

TEST(EthtoolDiff, Mlx5QueueChangesAreDisruptiveWithANote) {
  InterfaceSpec i = iface("ens1f0np0");
  i.ethtool.rings.rx = 8192;
  i.ethtool.channels.combined = 32;
  const DiffResult d = diff(i);
  ASSERT_EQ(d.changes.size(), 2u) << errors_of(d);
  for (const Change& c : d.changes) {
    EXPECT_TRUE(c.disruptive) << c.field;
    EXPECT_NE(c.note.find("mlx5e_safe_switch_params"), std::string::npos) << c.note;
  }
  // Administratively down: mlx5e_safe_switch_params resets nothing (MLX5E_STATE_OPENED is clear),
  // the new sizes wait for the next open.
  HostState down = host();
  for (NetdevState& n : down.netdevs) {
    if (n.name == "ens1f0np0") n.state = "down";
  }
  const DiffResult quiet = diff(i, down);
  ASSERT_EQ(quiet.changes.size(), 2u) << errors_of(quiet);
  for (const Change& c : quiet.changes) {
    EXPECT_FALSE(c.disruptive) << c.field;
    EXPECT_EQ(c.note, "") << c.field;
  }
}

TEST(EthtoolDiff, PauseOnAnMlx5VirtualOrSubFunctionIsAPlanError) {
  // mlx5e_ethtool_set_pauseparam returns EOPNOTSUPP without vport_group_manager (a VF, an SF).
  for (const char* function : {"vf", "sf"}) {
    HostState s = host();
    for (NetdevState& n : s.netdevs) {
      if (n.name == "ens1f0np0") (*n.ethtool)["function"] = function;
    }
    InterfaceSpec i = iface("ens1f0np0");
    i.ethtool.pause.rx = false;
    i.ethtool.channels.combined = 16;  // the other groups stay the driver's
    const DiffResult d = diff(i, s);
    ASSERT_EQ(d.errors.size(), 1u) << function;
    EXPECT_NE(d.errors[0].message.find("mlx5_core sets pause only on the function that manages the port "
                                       "(vport_group_manager), and ens1f0np0 is on a"),
              std::string::npos)
        << d.errors[0].message;
  }
}

TEST(EthtoolDiff, Mlx5RingSizesArePowersOfTwoAndTxAtLeast64) {
  InterfaceSpec i = iface("ens1f0np0");
  i.ethtool.rings.rx = 1000;
  i.ethtool.rings.tx = 32;
  const DiffResult d = diff(i);
  EXPECT_TRUE(d.changes.empty());
  const std::string all = errors_of(d);
  EXPECT_NE(all.find("1000 would never be observed"), std::string::npos) << all;
  EXPECT_NE(all.find("tx ring below 64"), std::string::npos) << all;
}

TEST(EthtoolDiff, VethChannelsTakeTheCarrierDownOnlyWhenUp) {
  InterfaceSpec i = iface("veth0");
  i.ethtool.channels.rx = 4;
  i.ethtool.channels.tx = 4;
  DiffResult d = diff(i);
  ASSERT_EQ(d.changes.size(), 2u) << errors_of(d);
  EXPECT_TRUE(d.changes[0].disruptive);
  EXPECT_NE(d.changes[0].note.find("veth_set_channels"), std::string::npos);
  HostState down = host();
  down.find_netdev("veth0")->state = "down";
  d = diff(i, down);
  ASSERT_EQ(d.changes.size(), 2u);
  EXPECT_FALSE(d.changes[0].disruptive);
}

TEST(EthtoolDiff, PauseAutonegIsRefusedWhereTheDriverRefusesIt) {
  for (const char* name : {"eni1np1", "ens1f0np0"}) {
    InterfaceSpec i = iface(name);
    i.ethtool.pause.autoneg = true;
    const DiffResult d = diff(i);
    EXPECT_TRUE(d.changes.empty()) << name;
    ASSERT_EQ(d.errors.size(), 1u) << name;
    EXPECT_NE(d.errors[0].message.find("refuses pause autonegotiation"), std::string::npos);
  }
}

TEST(EthtoolDiff, GlobalPauseBesidePfcOnMlx5GetsANote) {
  HostState state = host();
  state.find_netdev("ens1f0np0")->ethtool = json{{"pause", {{"autoneg", false}, {"rx", false}, {"tx", false}}}};
  InterfaceSpec i = iface("ens1f0np0");
  i.ethtool.pause.rx = true;
  i.qos.pfc = std::vector<int>{3};
  const DiffResult d = diff(i, state);
  ASSERT_EQ(d.changes.size(), 1u) << errors_of(d);
  EXPECT_NE(d.changes[0].note.find("PFCC"), std::string::npos) << d.changes[0].note;
  i.qos.pfc.reset();
  EXPECT_TRUE(diff(i, state).changes[0].note.empty());
}

TEST(EthtoolDiff, NotObservedIsAnErrorSayingSo) {
  HostState state = host();
  state.find_netdev("eni1np1")->ethtool.reset();
  InterfaceSpec i = iface("eni1np1");
  i.ethtool.rings.rx = 512;
  const DiffResult d = diff(i, state);
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("were not observed"), std::string::npos);
}

// --- observe, apply, rollback against the model --------------------------------------------------

class EthtoolApply : public ::testing::Test {
 protected:
  EthtoolApply() {
    kernel_.add_netdevsim(4, "eni1np1", 4);
    kernel_.add_veth(5, "veth0", 4);
    platform_.set_ethtool(EthtoolNetlink::over(kernel_.connect()));
    state_.netdevs.push_back(netdev("eni1np1", 4, "netdevsim", "", nullptr));
    state_.netdevs.push_back(netdev("veth0", 5, "", "veth", nullptr));
    state_.netdevs.back().ethtool.reset();
    state_.netdevs.front().ethtool.reset();
    state_.index_netdevs();
  }

  HostState observe() {
    HostState s = state_;
    EXPECT_TRUE(reconciler_->observe(platform_, &spec_, s));
    return s;
  }

  void apply(const std::vector<Change>& changes, const HostState& from) {
    ApplyBatch batch;
    for (const Change& c : changes) batch.changes.push_back(&c);
    reconciler_->apply_batch(platform_, from, batch);
    ASSERT_EQ(batch.results.size(), changes.size());
    for (const auto& r : batch.results) ASSERT_TRUE(r) << r.error().to_string();
  }

  test::FakeEthtoolKernel kernel_;
  Platform platform_{HostFs("/nonexistent-fixture")};
  std::unique_ptr<Reconciler> reconciler_ = reconcilers::make_ethtool_reconciler();
  HostState state_;
  NodeSpec spec_;
};

TEST_F(EthtoolApply, ObserveRecordsWhatTheDriverReports) {
  spec_.interfaces.push_back(iface("veth0"));
  spec_.interfaces.back().ethtool.channels.rx = 2;
  const HostState s = observe();
  EXPECT_EQ(*s.find_netdev("veth0")->ethtool, kVeth);
  EXPECT_FALSE(s.find_netdev("eni1np1")->ethtool.has_value());  // no spec interface names it
}

TEST_F(EthtoolApply, OneSetPerFamilyThenNothingToDoThenTheRollbackRestores) {
  InterfaceSpec i = iface("eni1np1");
  i.ethtool.rings.rx = 1024;
  i.ethtool.rings.tx = 2048;
  i.ethtool.channels.combined = 1;
  i.ethtool.pause.rx = true;
  i.ethtool.pause.tx = true;
  spec_.interfaces.push_back(i);
  const HostState before = observe();
  DiffResult d;
  reconciler_->diff(spec_, before, d);
  ASSERT_EQ(d.changes.size(), 5u) << errors_of(d);
  apply(d.changes, before);
  EXPECT_EQ(kernel_.count(ETHTOOL_MSG_RINGS_SET), 1u);
  EXPECT_EQ(kernel_.count(ETHTOOL_MSG_CHANNELS_SET), 1u);
  EXPECT_EQ(kernel_.count(ETHTOOL_MSG_PAUSE_SET), 1u);
  EXPECT_EQ(kernel_.device("eni1np1").rx, 1024u);
  EXPECT_EQ(kernel_.device("eni1np1").tx, 2048u);
  EXPECT_TRUE(kernel_.device("eni1np1").tx_pause);

  const HostState after = observe();
  DiffResult again;
  reconciler_->diff(spec_, after, again);
  EXPECT_TRUE(again.changes.empty());

  // The engine's revert plan: each change reverted, in reverse order.
  std::vector<Change> revert;
  for (auto it = d.changes.rbegin(); it != d.changes.rend(); ++it) revert.push_back(it->reverted());
  apply(revert, after);
  EXPECT_EQ(*observe().find_netdev("eni1np1")->ethtool, *before.find_netdev("eni1np1")->ethtool);
}

TEST_F(EthtoolApply, TheKernelsRefusalFailsTheWholeRun) {
  InterfaceSpec i = iface("veth0");
  i.ethtool.channels.rx = 3;
  i.ethtool.channels.tx = 2;
  spec_.interfaces.push_back(i);
  const HostState before = observe();
  DiffResult d;
  reconciler_->diff(spec_, before, d);
  ASSERT_EQ(d.changes.size(), 2u);
  kernel_.caller_is_admin = false;
  ApplyBatch batch;
  for (const Change& c : d.changes) batch.changes.push_back(&c);
  reconciler_->apply_batch(platform_, before, batch);
  ASSERT_EQ(batch.results.size(), 2u);
  EXPECT_FALSE(batch.results[0]);
  EXPECT_EQ(batch.results[0].error().kind, ErrorKind::kPermission);
  EXPECT_EQ(batch.results[0].error().where, "netdev/veth0");
  EXPECT_EQ(kernel_.device("veth0").rx_count, 1u);
}

}  // namespace reconcilers_ethtool_test
}  // namespace rdmactl
