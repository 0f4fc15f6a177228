// SPDX-License-Identifier: Apache-2.0
// The irq_affinity reconciler on a copy of the ConnectX-6 Dx fixture, its PF 0 on node 0 of a
// two-node host, with a model of /proc/irq/<n>/smp_affinity_list as kernel/irq/proc.c handles a
// write (write_irq_affinity, Linux 6.1):
//  - an interrupt whose affinity the kernel manages (IRQD_AFFINITY_MANAGED, irq_can_set_affinity_usr)
//    refuses with EIO (EPERM in later kernels);
//  - the text is parsed by cpumask_parselist_user (a bad list: EINVAL);
//  - a list without an online CPU: irq_select_affinity_usr, which outside Alpha returns -EINVAL;
//  - else irq_set_affinity, and a read prints the mask as "%*pbl" (canonical ranges).
#include "reconcilers/irq_affinity/irq_affinity.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>

#include "agent/core/cpulist.h"
#include "agent/doctor/doctor.h"
#include "tests/unit/models/pci_function_tree.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_irq_affinity_test {

using json = nlohmann::json;
using test::cx6_device_dir;
using test::kCx6Pf0;

class ProcIrqModel final : public HostFs::KernelModel {
 public:
  std::set<int> online;        // cpu_online_mask
  std::set<std::string> managed;  // IRQ numbers with IRQD_AFFINITY_MANAGED
  int writes = 0;

  std::optional<int> stored(std::string_view path, const std::string& real_path, const std::string&,
                            std::string_view value) override {
    if (path.rfind("/proc/irq/", 0) != 0 || !path.ends_with("/smp_affinity_list")) return std::nullopt;
    const std::string irq(path.substr(10, path.find('/', 10) - 10));
    ++writes;
    if (managed.contains(irq)) return EIO;
    std::string text(value);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const auto mask = parse_cpulist(text);
    if (!mask || mask->empty()) return EINVAL;
    bool intersects = false;
    for (const int c : *mask) intersects = intersects || online.contains(c);
    if (!intersects) return EINVAL;
    std::ofstream(real_path, std::ios::trunc) << format_cpulist(*mask) << "\n";
    return 0;
  }
  std::optional<int> made_directory(std::string_view, const std::string&) override { return std::nullopt; }
  void removing_directory(std::string_view, const std::string&) override {}
};

class IrqAffinityTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    use_fixture("cx6dx-roce", reconcilers::make_irq_affinity_reconciler());
    test::link_pci_device(tree_, kCx6Pf0, cx6_device_dir(kCx6Pf0));
    tree_.write("/sys/devices/system/node/node0/cpulist", "0-7\n");
    tree_.write("/sys/devices/system/node/node1/cpulist", "8-15\n");
    numa_node("0");
    // mlx5's async interrupt allowed everywhere (the default), two completion interrupts pinned
    // by its affinity hints, one moved to node 1 by hand.
    irq(44, "mlx5_async0@pci:0000:3b:00.0", "0-15");
    irq(45, "mlx5_comp0@pci:0000:3b:00.0", "0");
    irq(46, "mlx5_comp1@pci:0000:3b:00.0", "1");
    irq(47, "mlx5_comp2@pci:0000:3b:00.0", "9");
    model_->online = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    HostFs fs(tree_.root());
    fs.set_kernel_model(model_);
    platform_ = std::make_unique<Platform>(std::move(fs));
  }
  void numa_node(const std::string& node) { tree_.write(cx6_device_dir(kCx6Pf0) + "/numa_node", node + "\n"); }
  void irq(int n, const std::string& name, const std::string& affinity) {
    tree_.write(cx6_device_dir(kCx6Pf0) + "/msi_irqs/" + std::to_string(n), "msix\n");
    const std::string dir = "/proc/irq/" + std::to_string(n);
    tree_.write(dir + "/smp_affinity_list", affinity + "\n");
    tree_.write(dir + "/" + name + "/.keep", "");
  }
  std::string affinity(int n) { return tree_.read("/proc/irq/" + std::to_string(n) + "/smp_affinity_list"); }
  static NodeSpec local_spec() {
    NodeSpec spec;
    InterfaceSpec iface = test::interface_named("ens1f0np0", 9);
    iface.irq_affinity = "local";
    spec.interfaces.push_back(iface);
    return spec;
  }

  std::shared_ptr<ProcIrqModel> model_ = std::make_shared<ProcIrqModel>();
};

TEST_F(IrqAffinityTest, MovesOnlyTheInterruptsAllowedOffTheNodeAndConverges) {
  const NodeSpec spec = local_spec();
  const Report planned = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  const Change& c = planned.changes[0];
  EXPECT_EQ(c.resource, "pci/0000:3b:00.0");
  EXPECT_EQ(c.field, "irqAffinity");
  EXPECT_EQ(c.current, json::parse(R"({"44": "0-15", "47": "9"})"));
  EXPECT_EQ(c.desired, json::parse(R"({"44": "0-7", "47": "0-7"})"));
  EXPECT_FALSE(c.disruptive);
  EXPECT_TRUE(c.note.empty()) << c.note;

  const Report applied = engine_->apply(*platform_, spec, "n");
  EXPECT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(affinity(44), "0-7\n");
  EXPECT_EQ(affinity(45), "0\n");  // pinned within the node by the driver: left alone
  EXPECT_EQ(affinity(47), "0-7\n");
  EXPECT_EQ(model_->writes, 2);
  EXPECT_TRUE(engine_->plan(spec, observe(spec)).changes.empty());  // converged
}

TEST_F(IrqAffinityTest, AManagedInterruptFailsTheRunAndTheOthersAreRolledBack) {
  model_->managed = {"47"};
  const Report applied = engine_->apply(*platform_, local_spec(), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  EXPECT_NE(applied.changes[0].error.find("the kernel refuses to move interrupt 47"), std::string::npos)
      << applied.changes[0].error;
  EXPECT_EQ(affinity(44), "0-15\n");  // the revert wrote the old list back
  EXPECT_EQ(affinity(47), "9\n");
  EXPECT_EQ(model_->writes, 3) << "44 forward, 47 refused, 44 back: 47 is not asked again";
}

TEST_F(IrqAffinityTest, ANodeWithoutOnlineCpusIsRefusedByTheKernelAndSaid) {
  model_->online = {8, 9, 10, 11, 12, 13, 14, 15};  // node 0's CPUs taken offline
  const Report applied = engine_->apply(*platform_, local_spec(), "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  EXPECT_NE(applied.changes[0].error.find("none of them is online"), std::string::npos) << applied.changes[0].error;
  EXPECT_EQ(affinity(44), "0-15\n");
}

TEST_F(IrqAffinityTest, IrqbalanceIsNamedInTheChangeAndADoctorNote) {
  tree_.write("/proc/812/comm", "irqbalance\n");
  const NodeSpec spec = local_spec();
  HostState state = observe(spec);
  const Report planned = engine_->plan(spec, state);
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_NE(planned.changes[0].note.find("irqbalance runs"), std::string::npos) << planned.changes[0].note;

  // irqbalance keeps a device's interrupts on its node too: a note, never a finding.
  const auto noted = [&](const DoctorReport& r) {
    for (const Note& n : r.notes) {
      if (n.message.find("irqbalance runs beside irqAffinity: local") != std::string::npos) return true;
    }
    return false;
  };
  state.cpus = json::parse(R"({"nodes": {"0": "0-7", "1": "8-15"}, "irqbalance": true})");
  EXPECT_TRUE(noted(run_doctor(state, &spec)));
  state.cpus = json::parse(R"({"nodes": {"0": "0-7", "1": "8-15"}, "irqbalance": false})");
  EXPECT_FALSE(noted(run_doctor(state, &spec)));
  state.cpus = json::parse(R"({"nodes": {"0": "0-7", "1": "8-15"}, "irqbalance": true})");
  EXPECT_FALSE(noted(run_doctor(state, nullptr))) << "no spec, no pinning";
}

TEST_F(IrqAffinityTest, IsolatedCpusUnrequestedVectorsAndNoNumaSysfs) {
  const NodeSpec spec = local_spec();
  // isolcpus=6-7: moved interrupts get 0-5.
  tree_.write("/sys/devices/system/cpu/isolated", "6-7\n");
  tree_.write("/sys/devices/system/cpu/nohz_full", "(null)\n");
  // A vector allocated but never requested: in msi_irqs/, no /proc/irq/50.
  tree_.write(cx6_device_dir(kCx6Pf0) + "/msi_irqs/50", "msix\n");
  Report planned = engine_->plan(spec, observe(spec));
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_EQ(planned.changes[0].desired, json::parse(R"({"44": "0-5", "47": "0-5"})"));
  tree_.write("/sys/devices/system/cpu/isolated", "0-7\n");
  planned = engine_->plan(spec, observe(spec));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("has only isolated CPUs"), std::string::npos) << planned.errors[0].message;
  // A kernel without CONFIG_NUMA has no node directory: every CPU is local.
  std::filesystem::remove_all(tree_.root() + "/sys/devices/system/node");
  std::filesystem::remove(tree_.root() + "/sys/devices/system/cpu/isolated");
  planned = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_TRUE(planned.changes.empty());
}

TEST_F(IrqAffinityTest, PlanErrorsNameWhyLocalHasNoMeaning) {
  const NodeSpec spec = local_spec();
  numa_node("-1");
  Report planned = engine_->plan(spec, observe(spec));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("has no NUMA node (numa_node -1) on a host of 2 nodes"), std::string::npos)
      << planned.errors[0].message;

  // One node: numa_node -1 is that node, and everything is local.
  std::filesystem::remove_all(tree_.root() + "/sys/devices/system/node/node1");
  planned = engine_->plan(spec, observe(spec));
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  ASSERT_EQ(planned.changes.size(), 1u);
  EXPECT_EQ(planned.changes[0].desired, json::parse(R"({"44": "0-7", "47": "0-7"})"));

  tree_.write("/sys/devices/system/node/node1/cpulist", "\n");  // a node of memory only
  numa_node("1");
  planned = engine_->plan(spec, observe(spec));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("which has no CPUs"), std::string::npos) << planned.errors[0].message;

  numa_node("0");
  std::filesystem::remove_all(tree_.root() + cx6_device_dir(kCx6Pf0) + "/msi_irqs");  // no driver bound
  planned = engine_->plan(spec, observe(spec));
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("has no MSI or MSI-X interrupts"), std::string::npos)
      << planned.errors[0].message;
}

TEST(Cpulist, ParsesAndPrintsAsTheKernel) {
  EXPECT_EQ(parse_cpulist("0-3,8-11"), (std::set<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(parse_cpulist(""), std::set<int>{});
  EXPECT_FALSE(parse_cpulist("3-1"));
  EXPECT_FALSE(parse_cpulist("a"));
  EXPECT_FALSE(parse_cpulist("0-99999"));
  EXPECT_EQ(format_cpulist({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_cpulist({}), "");
}

}  // namespace reconcilers_irq_affinity_test
}  // namespace rdmactl
