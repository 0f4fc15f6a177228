// SPDX-License-Identifier: Apache-2.0
// doctor's interrupt and NUMA checks (agent/doctor/irq.cpp), on states as agent/platform/irq_sysfs
// reads them: a two-socket host whose ConnectX sits on node 0; each planted fault raises its own
// check once, a healthy layout none.
#include "agent/doctor/doctor.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmactl {
namespace doctor_irq_doctor_test {

using json = nlohmann::json;

// mlx5_0 on node 0 (CPUs 0-7), node 1 has 8-15; four completion interrupts spread over node 0's
// CPUs by mlx5's affinity hints, and its async one.
HostState two_socket_host() {
  HostState s;
  s.node = "gpu-01";
  DeviceState d;
  d.name = "mlx5_0";
  d.pci = "0000:3b:00.0";
  d.interrupts = json::parse(R"({"numaNode": 0, "irqs": [
      {"irq": 44, "name": "mlx5_async0@pci:0000:3b:00.0", "affinity": "0-7", "effective": "2"},
      {"irq": 45, "name": "mlx5_comp0@pci:0000:3b:00.0", "affinity": "0", "effective": "0"},
      {"irq": 46, "name": "mlx5_comp1@pci:0000:3b:00.0", "affinity": "1", "effective": "1"},
      {"irq": 47, "name": "mlx5_comp2@pci:0000:3b:00.0", "affinity": "2", "effective": "2"},
      {"irq": 48, "name": "mlx5_comp3@pci:0000:3b:00.0", "affinity": "3", "effective": "3"}]})");
  s.devices = {d};
  s.cpus = json::parse(R"({"nodes": {"0": "0-7", "1": "8-15"}, "irqbalance": false})");
  return s;
}

json& irqs(HostState& s) { return (*s.devices[0].interrupts)["irqs"]; }

std::vector<Finding> findings_of(const DoctorReport& r, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

TEST(DoctorIrq, InterruptsOnTheFunctionsNodeAreHealthy) {
  const DoctorReport report = run_doctor(two_socket_host(), nullptr);
  for (const char* check : {"irq-numa", "irq-single-cpu", "numa-cpus"}) {
    EXPECT_TRUE(findings_of(report, check).empty()) << check << "\n" << to_json(report).dump(2);
  }
}

TEST(DoctorIrq, InterruptsServedOnAnotherNodeAreNamedWithTheirCpus) {
  HostState s = two_socket_host();
  irqs(s)[3]["affinity"] = "8-15";
  irqs(s)[3]["effective"] = "9";
  irqs(s)[4]["effective"] = "12";  // allowed on 3, served on 12: the effective CPU decides
  const auto found = findings_of(run_doctor(s, nullptr), "irq-numa");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, "warning");
  EXPECT_EQ(found[0].resource, "pci/0000:3b:00.0");
  EXPECT_EQ(found[0].message,
            "2 of 5 interrupts of mlx5_0 (0000:3b:00.0) run on CPUs off its NUMA node 0 (CPUs 0-7): 47 (mlx5_comp2) "
            "on 9, 48 (mlx5_comp3) on 12");
  EXPECT_NE(found[0].fix.find("echo 0-7 > /proc/irq/47/smp_affinity_list"), std::string::npos) << found[0].fix;
}

TEST(DoctorIrq, WithoutAnEffectiveCpuTheAllowedOnesAreJudged) {
  // effective_affinity_list is absent where the interrupt controller does not report it.
  HostState s = two_socket_host();
  for (json& irq : irqs(s)) irq.erase("effective");
  irqs(s)[1]["affinity"] = "8-15";
  const auto found = findings_of(run_doctor(s, nullptr), "irq-numa");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("1 of 5 interrupts"), std::string::npos) << found[0].message;
  // An interrupt allowed on both nodes may run near: not reported.
  irqs(s)[1]["affinity"] = "0-15";
  EXPECT_TRUE(findings_of(run_doctor(s, nullptr), "irq-numa").empty());
}

TEST(DoctorIrq, EveryCompletionInterruptOnOneCpuIsAFinding) {
  HostState s = two_socket_host();
  for (int i = 1; i <= 4; ++i) {
    irqs(s)[i]["affinity"] = "0-7";
    irqs(s)[i]["effective"] = "5";
  }
  const auto found = findings_of(run_doctor(s, nullptr), "irq-single-cpu");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message,
            "all 4 completion interrupts of mlx5_0 (0000:3b:00.0) run on CPU 5: one core serves every queue, and the "
            "others' completions wait for it");
  // One completion interrupt (a VF with one channel) on one CPU is no spread to ask for.
  HostState one = two_socket_host();
  irqs(one) = json::array({irqs(one)[0], irqs(one)[1]});
  EXPECT_TRUE(findings_of(run_doctor(one, nullptr), "irq-single-cpu").empty());
}

TEST(DoctorIrq, AFunctionOnANodeWithoutCpusIsAFinding) {
  HostState s = two_socket_host();
  (*s.cpus)["nodes"]["2"] = "";  // a CXL memory node, or sub-NUMA clustering's
  (*s.devices[0].interrupts)["numaNode"] = 2;
  const DoctorReport report = run_doctor(s, nullptr);
  const auto found = findings_of(report, "numa-cpus");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message,
            "mlx5_0 (0000:3b:00.0) is on NUMA node 2, which has no CPUs: its interrupts and the memory it reads and "
            "writes are served from another node");
  EXPECT_TRUE(findings_of(report, "irq-numa").empty()) << "one finding for one fault";
}

TEST(DoctorIrq, NoNumaNodeOnSeveralNodesIsANoteAndOnOneNothing) {
  HostState s = two_socket_host();
  (*s.devices[0].interrupts)["numaNode"] = -1;
  irqs(s)[1]["effective"] = "9";
  DoctorReport report = run_doctor(s, nullptr);
  EXPECT_TRUE(findings_of(report, "irq-numa").empty());
  bool noted = false;
  for (const Note& n : report.notes) {
    noted = noted || n.message.find("has no NUMA node (numa_node -1) on a host of 2 nodes") != std::string::npos;
  }
  EXPECT_TRUE(noted) << to_json(report).dump(2);
  (*s.cpus)["nodes"] = json::parse(R"({"0": "0-15"})");
  report = run_doctor(s, nullptr);
  for (const Note& n : report.notes) EXPECT_EQ(n.message.find("numa_node -1"), std::string::npos) << n.message;
}

TEST(DoctorIrq, AStateWithoutInterruptsIsNotChecked) {
  // A recorded state from `show` carries no interrupts: nothing is guessed.
  HostState s = two_socket_host();
  s.devices[0].interrupts.reset();
  s.cpus.reset();
  const DoctorReport report = run_doctor(s, nullptr);
  for (const char* check : {"irq-numa", "irq-single-cpu", "numa-cpus"}) EXPECT_TRUE(findings_of(report, check).empty());
}

}  // namespace doctor_irq_doctor_test
}  // namespace rdmactl
