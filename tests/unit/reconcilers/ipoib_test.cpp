// SPDX-License-Identifier: Apache-2.0
// The ipoib reconciler on copies of the ConnectX-7 InfiniBand fixture (ib0 in datagram mode), with
// the IPoIB mode model (tests/unit/models: ipoib_set_mode takes exactly "connected\n" or
// "datagram\n", connected mode only with the RC flag, and resets the MTU): as the fixture is, an
// enhanced-IPoIB port (address 00:...), where connected mode is a plan error with the way out for
// the driver in use; with the RC flag (legacy IPoIB, e.g. DOCA's ipoib_enhanced=0), where it is
// planned, written and converges. The MTU limits each mode puts on the netdev reconciler's plan.
#include "reconcilers/ipoib/ipoib.h"

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include <filesystem>

#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_ipoib_test {

constexpr const char* kLegacyAddress = "80:00:04:04:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20";

InterfaceSpec ib0(std::optional<std::string> mode, std::optional<int> mtu = std::nullopt) {
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kRdmaDevice, "mlx5_0", 1};
  iface.ipoib.mode = std::move(mode);
  iface.mtu = mtu;
  iface.origin.file = "fabric.yaml";
  return iface;
}

class IpoibTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override { use_fixture("cx7-ib", reconcilers::make_ipoib_reconciler()); }
  // Legacy IPoIB: the RC flag in the address, and the model taking connected mode.
  void legacy_ipoib() {
    tree_.write("/sys/class/net/ib0/address", std::string(kLegacyAddress) + "\n");
    kernel_->add_ipoib_netdev("ib0", true);
  }

  Report plan(const NodeSpec& spec) { return engine_->plan(spec, observe(spec)); }
  NetdevState ib0_state() { return *observe(NodeSpec{}).find_netdev("ib0"); }
};

TEST_F(IpoibTest, ObservesTheModeAndWhetherConnectedModeExists) {
  kernel_->add_ipoib_netdev("ib0", false);
  const HostState state = observe(NodeSpec{});
  ASSERT_TRUE(state.find_netdev("ib0")->ipoib.has_value());
  EXPECT_EQ(*state.find_netdev("ib0")->ipoib, nlohmann::json::parse(R"({"mode": "datagram", "connectedMode": false})"));
  legacy_ipoib();
  EXPECT_EQ(*ib0_state().ipoib, nlohmann::json::parse(R"({"mode": "datagram", "connectedMode": true})"));
}

TEST_F(IpoibTest, ConnectedModeOnEnhancedIpoibIsAPlanErrorWithTheUpstreamWayOut) {
  kernel_->add_ipoib_netdev("ib0", false);
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_EQ(planned.errors[0].kind, ErrorKind::kNotSupported);
  const std::string& why = planned.errors[0].message;
  EXPECT_NE(why.find("ib0 runs enhanced IPoIB, which has no connected mode"), std::string::npos) << why;
  EXPECT_NE(why.find("CONFIG_MLX5_CORE_IPOIB"), std::string::npos) << why;
  EXPECT_NE(why.find("ipoib.mode: datagram"), std::string::npos) << why;
}

TEST_F(IpoibTest, OnDocaTheWayOutIsIpoibEnhancedZero) {
  tree_.write("/sys/module/ib_ipoib/parameters/ipoib_enhanced", "1\n");
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("`options ib_ipoib ipoib_enhanced=0` in /etc/modprobe.d/ib_ipoib.conf"),
            std::string::npos)
      << planned.errors[0].message;
  EXPECT_EQ((*ib0_state().ipoib)["ipoibEnhanced"], "1");
}

// MLNX_OFED 23.07 and later (DOCA-OFED) run enhanced IPoIB only: even an address with the RC flag
// gets no connected mode, and ipoib_enhanced=0 is no way out (the 23.07 release notes).
TEST_F(IpoibTest, OnMlnxOfed2307AndLaterConnectedModeIsRefusedWithoutTheIpoibEnhancedAdvice) {
  tree_.write("/sys/module/ib_ipoib/parameters/ipoib_enhanced", "1\n");
  tree_.write("/sys/module/ib_ipoib/version", "24.10-1.1.4\n");
  legacy_ipoib();  // an address with the RC flag, as the issue's DOCA host had
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.changes.empty()) << "connected mode is never planned on these drivers";
  ASSERT_EQ(planned.errors.size(), 1u);
  const std::string& why = planned.errors[0].message;
  EXPECT_NE(why.find("MLNX_OFED/DOCA-OFED 24.10-1.1.4, runs enhanced IPoIB only"), std::string::npos) << why;
  EXPECT_EQ(why.find("options ib_ipoib"), std::string::npos) << why;
  EXPECT_EQ((*ib0_state().ipoib)["connectedMode"], false);
  EXPECT_EQ((*ib0_state().ipoib)["driverVersion"], "24.10-1.1.4");
}

TEST_F(IpoibTest, BeforeMlnxOfed2307TheWayOutIsStillIpoibEnhancedZero) {
  tree_.write("/sys/module/ib_ipoib/parameters/ipoib_enhanced", "1\n");
  tree_.write("/sys/module/mlx5_core/version", "23.04-1.1.3\n");  // no ib_ipoib version: mlx5_core's
  kernel_->add_ipoib_netdev("ib0", false);
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("before 23.07: 23.04-1.1.3"), std::string::npos) << planned.errors[0].message;
  EXPECT_NE(planned.errors[0].message.find("`options ib_ipoib ipoib_enhanced=0`"), std::string::npos);
}

TEST_F(IpoibTest, WithoutAModeFileTheKernelHasNoConnectedMode) {
  std::filesystem::remove(tree_.root() + "/sys/class/net/ib0/mode");
  legacy_ipoib();
  EXPECT_EQ(*ib0_state().ipoib, nlohmann::json::parse(R"({"mode": "datagram", "modeFile": false, "connectedMode": false})"));
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("CONFIG_INFINIBAND_IPOIB_CM"), std::string::npos) << planned.errors[0].message;
}

TEST_F(IpoibTest, OnLegacyIpoibConnectedModeIsWrittenWithItsNewlineAndConverges) {
  legacy_ipoib();
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_EQ(planned.changes[0].field, "ipoib.mode");
  EXPECT_EQ(planned.changes[0].current, "datagram");
  EXPECT_EQ(planned.changes[0].desired, "connected");
  EXPECT_EQ(planned.changes[0].via, "sysfs /sys/class/net/ib0/mode");

  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(applied.count(ChangeStatus::kApplied), 1u) << applied.changes[0].error;
  ASSERT_EQ(kernel_->writes().size(), 1u);
  EXPECT_EQ(kernel_->writes()[0].value, "connected\n") << "ipoib_set_mode compares with \"connected\\n\"";
  EXPECT_EQ(tree_.read("/sys/class/net/ib0/mtu"), "65520\n") << "the kernel's MTU of connected mode";
  EXPECT_TRUE(plan(spec).changes.empty());

  spec.interfaces[0].ipoib.mode = "datagram";
  const Report back = engine_->apply(*platform_, spec, "n");
  EXPECT_EQ(back.count(ChangeStatus::kApplied), 1u);
  EXPECT_EQ(kernel_->writes().back().value, "datagram\n");
  EXPECT_EQ(tree_.read("/sys/class/net/ib0/mtu"), "2044\n") << "min(broadcast MTU - 4, MTU)";
}

TEST_F(IpoibTest, AModeTheKernelRefusesFailsTheChangeAndTheFileIsAsBefore) {
  legacy_ipoib();
  kernel_->refuse_next_write("/sys/class/net/ib0/mode", EPERM);  // set_mode on a netdev going down
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(applied.count(ChangeStatus::kFailed), 1u);
  EXPECT_NE(applied.changes[0].error.find("Operation not permitted"), std::string::npos) << applied.changes[0].error;
  EXPECT_EQ(tree_.read("/sys/class/net/ib0/mode"), "datagram\n");
}

TEST_F(IpoibTest, AnEthernetPortWithIpoibModeIsAnError) {
  NodeSpec spec;
  spec.interfaces.push_back(ib0("datagram"));
  tree_.write("/sys/class/net/ib0/type", "1\n");  // ib0 as an Ethernet netdev
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("ib0 is not an IPoIB netdev"), std::string::npos);
}

// check_ipoib_mtu: the netdev reconciler's plan of an IPoIB MTU (ipoib_change_mtu's rules).
TEST_F(IpoibTest, DatagramMtuLimitsAreErrorsAndAboveTheDefaultPartitionANote) {
  NetdevState n = ib0_state();
  auto check = [&](std::optional<std::string> mode, int mtu) { return reconcilers::check_ipoib_mtu(ib0(mode, mtu), n); };
  const auto too_big = check(std::nullopt, 9000);
  ASSERT_TRUE(too_big.error.has_value());
  EXPECT_NE(too_big.error->find("mtu 9000 is above what IPoIB datagram mode carries on ib0"), std::string::npos);
  EXPECT_NE(too_big.error->find("set mtu 4092 or less (ib0 has no connected mode)"), std::string::npos) << *too_big.error;
  const auto too_small = check(std::nullopt, 71);
  ASSERT_TRUE(too_small.error.has_value()) << "ETH_MIN_MTU + IPOIB_ENCAP_LEN is 72";
  const auto clamp = check(std::nullopt, 4092);
  EXPECT_FALSE(clamp.error.has_value());
  EXPECT_NE(clamp.note.find("`mtu=5` (4096) on the partition's line in partitions.conf gives 4092"), std::string::npos);
  const auto fits = check(std::nullopt, 2044);
  EXPECT_FALSE(fits.error.has_value());
  EXPECT_TRUE(fits.note.empty());
  EXPECT_TRUE(check("connected", 65520).mode_unavailable) << "enhanced IPoIB: the mode's error covers it";
  legacy_ipoib();
  n = ib0_state();
  EXPECT_FALSE(check("connected", 65520).error.has_value());
  EXPECT_FALSE(check("connected", 65520).mode_unavailable);
  ASSERT_TRUE(check("connected", 65521).error.has_value());
  EXPECT_NE(check("connected", 65521).error->find("the largest IPoIB MTU, 65520"), std::string::npos);
}

// With the spec's partitions, the datagram limit is the partition's: an error naming it, where
// without them it was only a note about OpenSM's default.
TEST_F(IpoibTest, TheSpecsPartitionMtuBoundsADatagramMtu) {
  const NetdevState n = ib0_state();
  PartitionSpec standard;
  standard.name = "Default";
  standard.pkey = 0x7fff;
  standard.ipoib = true;
  standard.origin = {"fabric.yaml", 12, 7, "defaults.subnetManager.partitions[0]"};
  std::optional<std::vector<PartitionSpec>> partitions = std::vector<PartitionSpec>{standard};
  // No mtu: OpenSM's default, 2048.
  auto check = reconcilers::check_ipoib_mtu(ib0("datagram", 4092), n, partitions);
  ASSERT_TRUE(check.error.has_value());
  EXPECT_NE(check.error->find("in partition Default (fabric.yaml:12, defaults.subnetManager.partitions[0])"),
            std::string::npos) << *check.error;
  EXPECT_NE(check.error->find("its IB MTU 2048 (OpenSM's default, no mtu given) minus the 4-byte IPoIB header is 2044"),
            std::string::npos) << *check.error;
  EXPECT_FALSE(reconcilers::check_ipoib_mtu(ib0("datagram", 2044), n, partitions).error.has_value());
  (*partitions)[0].mtu = 4096;
  check = reconcilers::check_ipoib_mtu(ib0("datagram", 4092), n, partitions);
  EXPECT_FALSE(check.error.has_value());
  EXPECT_TRUE(check.note.empty()) << "the spec says the partition carries it";
  // A netdev of another P_Key (a child interface, pkey 0x8001) is in that partition, not Default.
  tree_.write("/sys/class/net/ib0/pkey", "0x8001\n");
  const NetdevState child = ib0_state();
  EXPECT_EQ((*child.ipoib)["pkey"], "0x8001");
  PartitionSpec storage = standard;
  storage.name = "storage";
  storage.pkey = 0x0001;
  storage.mtu = 2048;
  partitions->push_back(storage);
  check = reconcilers::check_ipoib_mtu(ib0("datagram", 4092), child, partitions);
  ASSERT_TRUE(check.error.has_value());
  EXPECT_NE(check.error->find("in partition storage"), std::string::npos) << *check.error;
}

TEST_F(IpoibTest, TheClampMessageNamesThePartitionMtu) {
  const std::string why = reconcilers::ipoib_mtu_clamped("ib0", 4092, 2044);
  EXPECT_NE(why.find("the kernel set ib0's MTU to 2044, not 4092"), std::string::npos) << why;
  EXPECT_NE(why.find("(2048 here)"), std::string::npos) << why;
  EXPECT_NE(why.find("`Default=0x7fff, ipoib, mtu=5 : ALL=full;`"), std::string::npos) << why;
}

}  // namespace reconcilers_ipoib_test
}  // namespace rdmactl
