// SPDX-License-Identifier: Apache-2.0
// Test support for reconcilers that work on netdevs of a sysfs fixture: a writable copy of a
// fixture tree with a model of the kernel behind its files (tests/unit/models/), and a stand-in
// for the netdev reconciler that takes the netdevs from the tree's /sys/class/net (the real one
// asks rtnetlink, which knows nothing of a fixture).
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "agent/engine/engine.h"
#include "agent/engine/reconciler.h"
#include "agent/platform/rdma_sysfs.h"
#include "tests/unit/models/fixture_kernel.h"
#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {

// Copies tests/fixtures/sysfs/<name> into `tree`, keeping the /sys/class links as links.
inline void copy_fixture(const TempTree& tree, const std::string& name) {
  std::filesystem::copy(source_path("tests/fixtures/sysfs/" + name), tree.root(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
}

// Fills HostState::netdevs with name, MTU, PCI function, driver and dev_port from the tree, as the netdev
// reconciler would on a live host; it plans nothing.
class FixtureNetdevs final : public Reconciler {
 public:
  const char* name() const override { return "fixture-netdevs"; }
  bool observes_netdevs() const override { return true; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    const HostFs& fs = platform.fs();
    auto names = fs.list("/sys/class/net");
    if (!names) return names.error();
    state.netdevs.clear();
    for (const std::string& name : *names) {
      const std::string dir = "/sys/class/net/" + name;
      NetdevState n;
      n.name = name;
      n.ifindex = static_cast<int>(state.netdevs.size()) + 1;
      if (auto mtu = fs.read(dir + "/mtu")) n.mtu = std::stoi(*mtu);
      if (auto link = fs.read_link(dir + "/device")) {
        const std::string base = link->substr(link->find_last_of('/') + 1);
        if (is_pci_address(base)) n.pci = base;
      }
      if (auto dev_port = fs.read(dir + "/dev_port")) n.dev_port = std::stoi(*dev_port, nullptr, 0);
      if (auto driver = fs.read_link(dir + "/device/driver")) n.driver = driver->substr(driver->find_last_of('/') + 1);
      n.state = "up";
      n.sysfs_observed = true;
      state.netdevs.push_back(std::move(n));
    }
    return ok();
  }
  void diff(const NodeSpec&, const HostState&, DiffResult&) const override {}
  Result<void> apply(Platform&, const HostState&, const Change& change) override {
    return make_error(ErrorKind::kPlatform, "fixture netdevs are read-only", change.resource);
  }
};

// A test that runs one reconciler, after FixtureNetdevs, on a writable copy of a fixture tree.
class ReconcilerOnFixture : public ::testing::Test {
 protected:
  void use_fixture(const std::string& name, std::unique_ptr<Reconciler> reconciler) {
    copy_fixture(tree_, name);
    ReconcilerTable table;
    table.push_back(std::make_unique<FixtureNetdevs>());
    table.push_back(std::move(reconciler));
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
    HostFs fs(tree_.root());
    fs.set_kernel_model(kernel_);
    platform_ = std::make_unique<Platform>(std::move(fs));
  }

  HostState observe(const NodeSpec& spec) {
    auto state = engine_->observe(*platform_, &spec, "n");
    EXPECT_TRUE(state.has_value()) << state.error().to_string();
    return state.has_value() ? *state : HostState{};
  }

  TempTree tree_;
  // The kernel behind the tree's modelled files (configfs rdma_cm, ECN files, debugfs); a test
  // registers what its fixture has before the first observe.
  std::shared_ptr<FixtureKernel> kernel_ = std::make_shared<FixtureKernel>();
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Platform> platform_;
};

}  // namespace rdmactl::test
