// SPDX-License-Identifier: Apache-2.0
// The pci reconciler on a copy of the ConnectX-6 Dx fixture whose two functions have a config file
// (tests/unit/models/pci_function_tree.h: Device Control 0x2130, MaxReadReq 512): observed through
// libpci, planned, written as a read-modify-write of the three bits, converged. Before libpci, a
// model of what the kernel does to a config write (drivers/pci/pci-sysfs.c pci_write_config):
// under lockdown it returns -EPERM (security_locked_down(LOCKDOWN_PCI_ACCESS); the level in force
// is the bracketed one of securityfs' lockdown file, security/lockdown/lockdown.c lockdown_read).
#include "reconcilers/pcie/pcie.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "tests/unit/models/pci_function_tree.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_pci_test {

using test::cx6_device_dir;
using test::kCx6Pf0;
using test::kCx6Pf1;

// The kernel side of a config write: refused under lockdown (integrity or confidentiality: both
// include LOCKDOWN_PCI_ACCESS, which is below LOCKDOWN_INTEGRITY_MAX), else passed to libpci's file.
class KernelConfigSpace final : public PciConfigSpace {
 public:
  KernelConfigSpace(std::unique_ptr<PciConfigSpace> inner, const HostFs& fs) : inner_(std::move(inner)), fs_(fs) {}
  Result<std::optional<int>> express_capability() override { return inner_->express_capability(); }
  Result<uint16_t> read_word(int pos) override { return inner_->read_word(pos); }
  Result<void> write_word(int pos, uint16_t value) override {
    auto level = fs_.read("/sys/kernel/security/lockdown");
    if (level && level->find("[none]") == std::string::npos && level->find('[') != std::string::npos) {
      return make_errno_error("writing PCI configuration space", EPERM);
    }
    ++writes;
    return inner_->write_word(pos, value);
  }
  static inline int writes = 0;

 private:
  std::unique_ptr<PciConfigSpace> inner_;
  HostFs fs_;
};

Result<std::unique_ptr<PciConfigSpace>> open_through_kernel(const HostFs& fs, const std::string& bdf) {
  auto inner = open_pci_config(fs, bdf);
  if (!inner) return inner.error();
  return std::unique_ptr<PciConfigSpace>(new KernelConfigSpace(std::move(inner).value(), fs));
}

InterfaceSpec with_mrrs(const std::string& netdev, int bytes) {
  InterfaceSpec iface = test::interface_named(netdev, 7);
  iface.pcie.max_read_request = bytes;
  return iface;
}

class PcieTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce", reconcilers::make_pcie_reconciler(open_through_kernel));
    for (const std::string& bdf : {kCx6Pf0, kCx6Pf1}) {
      test::link_pci_device(tree_, bdf, cx6_device_dir(bdf));
      test::write_config_space(tree_, cx6_device_dir(bdf), {});
    }
    KernelConfigSpace::writes = 0;
  }
  NodeSpec spec_of(int bytes) {
    NodeSpec spec;
    spec.interfaces.push_back(with_mrrs("ens1f0np0", bytes));
    return spec;
  }
  uint16_t devctl(const std::string& bdf = kCx6Pf0) {
    return test::config_word(tree_, cx6_device_dir(bdf), test::kFixtureDevCtl);
  }
};

TEST_F(PcieTest, ObservesDeviceControlOfTheSpecsFunction) {
  const HostState state = observe(spec_of(4096));
  ASSERT_EQ(state.pci_functions.size(), 1u);
  EXPECT_EQ(state.pci_functions[0].pci, kCx6Pf0);
  EXPECT_EQ(*state.pci_functions[0].pcie_control, nlohmann::json::parse(R"({"maxReadRequest": 512, "maxPayload": 256})"));
}

TEST_F(PcieTest, ShowObservesEveryRdmaFunction) {
  auto state = engine_->observe(*platform_, nullptr, "n");
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  ASSERT_EQ(state->pci_functions.size(), 2u);
  EXPECT_EQ(state->pci_functions[1].pci, kCx6Pf1);
  EXPECT_EQ((*state->pci_functions[1].pcie_control)["maxReadRequest"], 512);
}

TEST_F(PcieTest, PlansAppliesOnlyTheThreeBitsAndConverges) {
  const NodeSpec spec = spec_of(4096);
  const Report planned = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  const Change& c = planned.changes[0];
  EXPECT_EQ(c.resource, "pci/0000:3b:00.0");
  EXPECT_EQ(c.field, "pcie.maxReadRequest");
  EXPECT_EQ(c.current, 512);
  EXPECT_EQ(c.desired, 4096);
  EXPECT_FALSE(c.disruptive);
  EXPECT_NE(c.note.find("not kept across a reset or reboot"), std::string::npos) << c.note;

  const Report applied = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(devctl(), 0x5130);          // MaxPayload 256, RlxdOrd and ExtTag kept
  EXPECT_EQ(devctl(kCx6Pf1), 0x2130);   // the other function untouched
  EXPECT_EQ(KernelConfigSpace::writes, 1);
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());  // converged: a second plan is empty
}

TEST_F(PcieTest, EqualValueIsComparedNotWritten) {
  const NodeSpec spec = spec_of(512);
  const Report planned = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.checked.size(), 1u);
  EXPECT_EQ(planned.checked[0].field, "pcie.maxReadRequest");
  engine_->apply(*platform_, spec, "n");
  EXPECT_EQ(KernelConfigSpace::writes, 0);
}

TEST_F(PcieTest, UnderLockdownThePlanRefusesAndAWriteThatRacesItSaysWhy) {
  // Planned, the change would fail at apply every run and roll back the run's other changes.
  tree_.write("/sys/kernel/security/lockdown", "none [integrity] confidentiality\n");
  const NodeSpec spec = spec_of(4096);
  const Report planned = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.errors.size(), 1u);
  const std::string& refused = planned.errors[0].message;
  EXPECT_NE(refused.find("the kernel is locked down (integrity, as Secure Boot sets it)"), std::string::npos) << refused;
  EXPECT_NE(refused.find("(it is 512 bytes, the spec wants 4096)"), std::string::npos) << refused;
  engine_->apply(*platform_, spec, "n");
  EXPECT_EQ(KernelConfigSpace::writes, 0);
  EXPECT_EQ(devctl(), 0x2130);
  // Already the spec's value: nothing to write, nothing refused.
  EXPECT_TRUE(engine_->plan(spec_of(512), observe(spec_of(512))).errors.empty());

  // Locked down between the plan and the write: the kernel's EPERM is said as lockdown.
  tree_.write("/sys/kernel/security/lockdown", "[none] integrity confidentiality\n");
  const Report unlocked = engine_->plan(spec, observe(spec));
  ASSERT_EQ(unlocked.changes.size(), 1u);
  tree_.write("/sys/kernel/security/lockdown", "none integrity [confidentiality]\n");
  auto reconciler = reconcilers::make_pcie_reconciler(open_through_kernel);
  const Result<void> written = reconciler->apply(*platform_, observe(spec), unlocked.changes[0]);
  ASSERT_FALSE(written.has_value());
  EXPECT_NE(written.error().message.find("the kernel is locked down (confidentiality"), std::string::npos)
      << written.error().message;
  EXPECT_EQ(devctl(), 0x2130);
}

TEST_F(PcieTest, LockdownNoneLetsTheWriteThrough) {
  tree_.write("/sys/kernel/security/lockdown", "[none] integrity confidentiality\n");
  const Report applied = engine_->apply(*platform_, spec_of(4096), "n");
  EXPECT_TRUE(applied.errors.empty() && applied.changes[0].error.empty()) << applied.changes[0].error;
  EXPECT_EQ(devctl(), 0x5130);  // "[none]": not locked down, the write goes through
}

TEST_F(PcieTest, VirtualFunctionIsAPlanErrorNamingThePf) {
  tree_.symlink("../0000:3b:00.0", cx6_device_dir(kCx6Pf1) + "/physfn");  // as pci_iov_sysfs_link makes it
  NodeSpec spec;
  spec.interfaces.push_back(with_mrrs("ens1f1np1", 4096));
  const Report planned = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(planned.changes.empty());
  ASSERT_EQ(planned.errors.size(), 1u);
  const std::string& why = planned.errors[0].message;
  EXPECT_NE(why.find("0000:3b:00.1 is an SR-IOV virtual function of 0000:3b:00.0"), std::string::npos) << why;
  EXPECT_NE(why.find("Set pcie.maxReadRequest on the PF 0000:3b:00.0"), std::string::npos) << why;
  EXPECT_NE(planned.errors[0].where.find("fabric.yaml:7"), std::string::npos) << planned.errors[0].where;
}

TEST_F(PcieTest, ConventionalPciFunctionIsAPlanError) {
  test::write_config_space(tree_, cx6_device_dir(kCx6Pf0), {.express = false});
  const Report planned = engine_->plan(spec_of(4096), observe(spec_of(4096)));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("no PCI Express capability"), std::string::npos);
}

TEST_F(PcieTest, SizeThatIsNotAPowerOfTwoIsRefused) {
  const Report planned = engine_->plan(spec_of(768), observe(spec_of(768)));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_EQ(planned.errors[0].kind, ErrorKind::kInvalidSpec);
  EXPECT_NE(planned.errors[0].message.find("not 768"), std::string::npos);
}

TEST_F(PcieTest, UnreadableConfigSpaceIsAPlanError) {
  std::filesystem::remove(tree_.root() + cx6_device_dir(kCx6Pf0) + "/config");
  const Report planned = engine_->plan(spec_of(4096), observe(spec_of(4096)));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("cannot read the PCIe Device Control of PCI function 0000:3b:00.0"),
            std::string::npos)
      << planned.errors[0].message;
}

TEST_F(PcieTest, TwoSelectorsOfOneFunctionWithDifferentSizesConflict) {
  NodeSpec spec = spec_of(4096);
  InterfaceSpec by_device;
  by_device.selector = {Selector::Kind::kRdmaDevice, "mlx5_0", 1};
  by_device.pcie.max_read_request = 1024;
  spec.interfaces.push_back(by_device);
  const Report planned = engine_->plan(spec, observe(spec));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("names the same PCI function 0000:3b:00.0 with pcie.maxReadRequest 4096"),
            std::string::npos)
      << planned.errors[0].message;
  EXPECT_EQ(planned.changes.size(), 1u);
}

}  // namespace reconcilers_pci_test
}  // namespace rdmactl
