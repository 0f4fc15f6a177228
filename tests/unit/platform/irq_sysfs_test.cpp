// SPDX-License-Identifier: Apache-2.0
// observe_interrupts on a tree laid out as the kernel's ABI documents it: a function's numa_node
// and msi_irqs/, /proc/irq/<n>/ with its affinity lists and its action's directory, the nodes'
// cpulists, and /proc/<pid>/comm.
#include "agent/platform/irq_sysfs.h"

#include <gtest/gtest.h>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace platform_irq_sysfs_test {

using json = nlohmann::json;

class IrqSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.write("/sys/bus/pci/devices/0000:3b:00.0/numa_node", "0\n");
    tree_.write("/sys/bus/pci/devices/0000:3b:00.0/msi_irqs/46", "msix\n");  // the file holds the mode
    tree_.write("/sys/bus/pci/devices/0000:3b:00.0/msi_irqs/45", "msix\n");
    irq(45, "mlx5_async0@pci:0000:3b:00.0", "0-7", "2");
    irq(46, "mlx5_comp0@pci:0000:3b:00.0", "0", "0");
    tree_.write("/sys/devices/system/node/node0/cpulist", "0-7\n");
    tree_.write("/sys/devices/system/node/node1/cpulist", "8-15\n");
    tree_.write("/sys/devices/system/node/possible", "0-1\n");  // not a node
    tree_.write("/proc/1/comm", "systemd\n");
    tree_.write("/proc/812/comm", "irqbalance\n");
  }

  // /proc/irq/<n>: the files register_irq_proc makes, and the action's directory (register_handler_proc).
  void irq(int n, const std::string& name, const std::string& affinity, const std::string& effective) {
    const std::string dir = "/proc/irq/" + std::to_string(n);
    tree_.write(dir + "/smp_affinity_list", affinity + "\n");
    tree_.write(dir + "/smp_affinity", "ff\n");
    if (!effective.empty()) tree_.write(dir + "/effective_affinity_list", effective + "\n");
    tree_.write(dir + "/node", "0\n");
    tree_.write(dir + "/spurious", "count 3\n");
    tree_.write(dir + "/" + name + "/.dir", "");  // the directory; procfs keeps it empty
  }

  HostState host() const {
    HostState s;
    DeviceState d;
    d.name = "mlx5_0";
    d.pci = "0000:3b:00.0";
    DeviceState ib;  // a second RDMA device on the same function reads it once and shares it
    ib.name = "mlx5_0_ib";
    ib.pci = "0000:3b:00.0";
    DeviceState rxe;  // Soft-RoCE: no PCI function
    rxe.name = "rxe0";
    s.devices = {d, ib, rxe};
    return s;
  }

  test::TempTree tree_;
};

TEST_F(IrqSysfs, ReadsTheFunctionsNodeAndInterruptsAndTheHostsNodes) {
  HostState s = host();
  observe_interrupts(HostFs(tree_.root()), s);
  const json expected = json::parse(R"({"numaNode": 0, "irqs": [
      {"irq": 45, "name": "mlx5_async0@pci:0000:3b:00.0", "affinity": "0-7", "effective": "2"},
      {"irq": 46, "name": "mlx5_comp0@pci:0000:3b:00.0", "affinity": "0", "effective": "0"}]})");
  ASSERT_TRUE(s.devices[0].interrupts.has_value());
  EXPECT_EQ(*s.devices[0].interrupts, expected);
  EXPECT_EQ(*s.devices[1].interrupts, expected);
  EXPECT_FALSE(s.devices[2].interrupts.has_value());
  ASSERT_TRUE(s.cpus.has_value());
  EXPECT_EQ(*s.cpus, json::parse(R"({"nodes": {"0": "0-7", "1": "8-15"}, "irqbalance": true})"));
  // The state's JSON carries both, and reads them back.
  const json recorded = to_json(s);
  auto back = host_state_from_json(recorded);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->devices[0].interrupts, s.devices[0].interrupts);
  EXPECT_EQ(back->cpus, s.cpus);
}

TEST_F(IrqSysfs, AHostWithoutEffectiveAffinityNorNumaNodes) {
  // No effective_affinity_list (the controller does not report it), no node directory (a kernel
  // without CONFIG_NUMA), numa_node -1, no irqbalance.
  test::TempTree bare;
  bare.write("/sys/bus/pci/devices/0000:3b:00.0/numa_node", "-1\n");
  bare.write("/sys/bus/pci/devices/0000:3b:00.0/msi_irqs/45", "msix\n");
  bare.write("/proc/irq/45/smp_affinity_list", "0-3\n");
  bare.write("/proc/irq/45/mlx5_comp0@pci:0000:3b:00.0/.dir", "");
  bare.write("/proc/1/comm", "init\n");
  HostState s = host();
  observe_interrupts(HostFs(bare.root()), s);
  EXPECT_EQ(*s.devices[0].interrupts, json::parse(R"({"numaNode": -1, "irqs": [
      {"irq": 45, "name": "mlx5_comp0@pci:0000:3b:00.0", "affinity": "0-3"}]})"));
  EXPECT_EQ(*s.cpus, json::parse(R"({"nodes": {}, "irqbalance": false})"));
}

TEST_F(IrqSysfs, GpusAndEachFunctionsPlaceInThePciTree) {
  // As pci_bus_add_device links them: /sys/bus/pci/devices/<bdf> -> the function below its host
  // bridge and bridges. An NVIDIA 3D controller (class 0x030200) and VGA controller (0x030000) are
  // GPUs; NVIDIA's audio function (0x040300) and another vendor's 3D controller are not.
  test::TempTree t;
  const auto function = [&](const std::string& path, const std::string& vendor, const std::string& klass,
                            const std::string& node) {
    const std::string bdf = path.substr(path.find_last_of('/') + 1);
    t.write("/sys/devices/" + path + "/vendor", vendor + "\n");
    t.write("/sys/devices/" + path + "/class", klass + "\n");
    t.write("/sys/devices/" + path + "/numa_node", node + "\n");
    t.symlink("../../../devices/" + path, "/sys/bus/pci/devices/" + bdf);
  };
  function("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1a:00.0", "0x10de", "0x030200", "0");
  function("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1a:00.1", "0x10de", "0x040300", "0");
  function("pci0000:97/0000:97:01.0/0000:98:00.0", "0x10de", "0x030000", "-1");
  function("pci0000:97/0000:97:02.0/0000:99:00.0", "0x1002", "0x030200", "1");
  function("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:02.0/0000:1b:00.0", "0x15b3", "0x020000", "0");
  EXPECT_EQ(read_gpus(HostFs(t.root())), json::parse(R"([
      {"pci": "0000:1a:00.0", "class": "0x030200", "numaNode": 0,
       "pciPath": "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1a:00.0"},
      {"pci": "0000:98:00.0", "class": "0x030000", "numaNode": -1, "pciPath": "pci0000:97/0000:97:01.0/0000:98:00.0"}])"));
  EXPECT_EQ(read_function_interrupts(HostFs(t.root()), "0000:1b:00.0").value("pciPath", ""),
            "pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:02.0/0000:1b:00.0");
  test::TempTree none;
  EXPECT_EQ(read_gpus(HostFs(none.root())), json::array());
}

}  // namespace platform_irq_sysfs_test
}  // namespace rdmactl
