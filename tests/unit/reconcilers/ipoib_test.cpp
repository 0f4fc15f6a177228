// The ipoib reconciler on a copy of the ConnectX-7 InfiniBand fixture (ib0, datagram mode): mode
// planned, written and converged; MTU checked against the mode it will have; Ethernet netdevs and
// ports still waiting for their firmware link type.
#include "reconcilers/ipoib/ipoib.h"

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace {

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

  Report plan(const NodeSpec& spec) { return engine_->plan(spec, observe(spec)); }
};

TEST_F(IpoibTest, ObservesTheModeOfIpoibNetdevsOnly) {
  const HostState state = observe(NodeSpec{});
  ASSERT_TRUE(state.find_netdev("ib0")->ipoib.has_value());
  EXPECT_EQ(*state.find_netdev("ib0")->ipoib, nlohmann::json::parse(R"({"mode": "datagram"})"));
}

TEST_F(IpoibTest, ConnectedModeIsPlannedAppliedAndConverges) {
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected", 65520));
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_EQ(planned.changes[0].resource, "netdev/ib0");
  EXPECT_EQ(planned.changes[0].field, "ipoib.mode");
  EXPECT_EQ(planned.changes[0].current, "datagram");
  EXPECT_EQ(planned.changes[0].desired, "connected");

  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(applied.count(ChangeStatus::kApplied), 1u);
  EXPECT_EQ(tree_.read("/sys/class/net/ib0/mode"), "connected");
  EXPECT_TRUE(plan(spec).changes.empty());
}

TEST_F(IpoibTest, DatagramModeRefusesAnMtuAboveTheIbMtuMinusFour) {
  NodeSpec spec;
  spec.interfaces.push_back(ib0(std::nullopt, 9000));
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("mtu 9000 is above what IPoIB datagram mode carries on ib0"),
            std::string::npos)
      << planned.errors[0].message;
  EXPECT_NE(planned.errors[0].message.find("4092"), std::string::npos);

  spec.interfaces[0].mtu = 4092;
  EXPECT_TRUE(plan(spec).errors.empty());
}

TEST_F(IpoibTest, TheMtuIsCheckedAgainstTheModeTheSpecAsksFor) {
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected", 9000));
  EXPECT_TRUE(plan(spec).errors.empty()) << "connected mode carries 9000";
  spec.interfaces[0].mtu = 65521;
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("connected mode carries on ib0 (65520)"), std::string::npos);
  EXPECT_TRUE(planned.changes.empty());
}

TEST_F(IpoibTest, AKernelThatRefusesTheModeFailsTheChange) {
  // ipoib_set_mode answers EINVAL when connected mode is not available (no CM support).
  // A kernel whose ib0 refuses every mode write (ipoib_set_mode's EINVAL without CM support).
  class RefusingMode final : public HostFs::KernelModel {
   public:
    std::optional<int> stored(std::string_view path, const std::string&, const std::string&,
                              std::string_view) override {
      return path == "/sys/class/net/ib0/mode" ? std::optional<int>(EINVAL) : std::nullopt;
    }
    std::optional<int> made_directory(std::string_view, const std::string&) override { return std::nullopt; }
    void removing_directory(std::string_view, const std::string&) override {}
  };
  HostFs fs(tree_.root());
  fs.set_kernel_model(std::make_shared<RefusingMode>());
  platform_ = std::make_unique<Platform>(std::move(fs));
  NodeSpec spec;
  spec.interfaces.push_back(ib0("connected"));
  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(applied.count(ChangeStatus::kFailed), 1u);
  EXPECT_NE(applied.changes[0].error.find("Invalid argument"), std::string::npos) << applied.changes[0].error;
  EXPECT_EQ(tree_.read("/sys/class/net/ib0/mode"), "datagram\n");
}

TEST_F(IpoibTest, AnEthernetPortWithIpoibModeIsAnError) {
  NodeSpec spec;
  InterfaceSpec iface = ib0("connected");
  spec.interfaces.push_back(iface);
  // Turn ib0 into an Ethernet netdev in the tree.
  tree_.write("/sys/class/net/ib0/type", "1\n");
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("ib0 is not an IPoIB netdev"), std::string::npos);
}

}  // namespace
}  // namespace rdmactl
