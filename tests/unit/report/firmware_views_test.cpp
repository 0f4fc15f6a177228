// SPDX-License-Identifier: Apache-2.0
// The adapter firmware as doctor, the fleet checks and /metrics show it: an image waiting for
// activation, the functions of one adapter disagreeing, the version to pin, one model running
// several versions across the fleet, and the rdmactl_firmware_* series.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/doctor/doctor.h"
#include "agent/fleet/checks.h"
#include "agent/report/prom.h"
#include "agent/state/state.h"

namespace rdmactl {
namespace report_firmware_views_test {

using ::testing::HasSubstr;
using ::testing::Not;

DeviceState function(const std::string& name, const std::string& pci, const std::string& running,
                     const std::string& stored, const std::string& psid = "MT_0000000359") {
  DeviceState d;
  d.name = name;
  d.pci = pci;
  d.fw_version = running;
  d.board_id = psid;
  d.firmware = nlohmann::json{{"running", running}, {"stored", stored}, {"psid", psid}, {"source", "devlink"},
                              {"driver", "mlx5_core"}};
  return d;
}

HostState host(const std::string& node, std::vector<DeviceState> devices) {
  HostState s;
  s.node = node;
  s.devices = std::move(devices);
  return s;
}

std::vector<Finding> firmware_findings(const DoctorReport& r) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == "firmware") out.push_back(f);
  }
  return out;
}

TEST(DoctorFirmware, AnImageWaitingForActivationIsAWarningOnTheAdapter) {
  const DoctorReport r = run_doctor(host("n", {function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.41.1000"),
                                               function("mlx5_1", "0000:3b:00.1", "22.39.1002", "22.41.1000")}),
                                    nullptr);
  const auto found = firmware_findings(r);
  ASSERT_EQ(found.size(), 1u) << "one adapter, one finding";
  EXPECT_EQ(found[0].severity, "warning");
  EXPECT_EQ(found[0].resource, "pci/0000:3b:00.0");
  EXPECT_THAT(found[0].message, HasSubstr("runs firmware 22.39.1002 but 22.41.1000 waits on flash"));
  EXPECT_THAT(found[0].fix, HasSubstr("let rdmactl apply do it (firmware activation: reset)"));
}

// Issue 41, 5: the hint does not offer to burn the running version back first: the firmware
// refuses every burn while an image waits (FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET).
TEST(DoctorFirmware, TheHintForAWaitingImageNamesTheWaysOutNotABurnBack) {
  const DoctorReport r = run_doctor(host("n", {function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.41.1000")}),
                                    nullptr);
  const auto found = firmware_findings(r);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0].fix, Not(HasSubstr("or burn the running version back")));
  EXPECT_THAT(found[0].fix, HasSubstr("cannot be burnt back first"));
  EXPECT_THAT(found[0].fix, HasSubstr("pending reset."));
  EXPECT_THAT(found[0].fix, HasSubstr("to keep 22.39.1002, activate, then burn it again"));
}

// Issue 41, 4: a state recorded before rdmactl knew mlx5's marks (devlink's 0.0.0000 without the
// version query, 255.255.65535 after a failed one) carries them as versions: doctor, the fleet
// checks and /metrics take them as unknown, never as an image waiting or a version run.
TEST(FirmwareViews, MlxUnknownVersionMarksInARecordedStateAreUnknown) {
  DeviceState failed = function("mlx5_0", "0000:3b:00.0", "22.41.0188", "255.255.65535");
  DeviceState none = function("mlx5_0", "0000:3b:00.0", "0.0.0000", "0.0.0000");
  none.fw_version = "22.41.0188";  // sysfs fw_ver, read from the init segment, still answers
  EXPECT_TRUE(firmware_findings(run_doctor(host("a", {failed}), nullptr)).empty()) << "nothing waits";
  const DoctorReport r = run_doctor(host("b", {none}), nullptr);
  EXPECT_TRUE(firmware_findings(r).empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_THAT(r.notes[0].message, HasSubstr("firmware: {version: \"22.41.0188\"}")) << "sysfs's version";

  const NodeSpec spec;
  std::vector<HostState> states;
  states.push_back(host("gpu-01", {function("mlx5_0", "0000:3b:00.0", "22.41.0188", "22.41.0188")}));
  DeviceState unreadable = function("mlx5_0", "0000:3b:00.0", "0.0.0000", "0.0.0000");
  unreadable.fw_version = "";
  states.push_back(host("gpu-02", {unreadable}));
  states.push_back(host("gpu-03", {function("mlx5_0", "0000:3b:00.0", "255.255.65535", "255.255.65535")}));
  std::vector<FleetMember> members;
  for (const HostState& s : states) members.push_back(FleetMember{s.node, &spec, &s});
  EXPECT_TRUE(check_fleet(members).empty()) << check_fleet(members)[0].message;

  PromText out;
  prom_firmware(out, host("gpu-01", {failed}));
  EXPECT_THAT(out.text(), HasSubstr(R"(running="22.41.0188",stored="",)"));
  EXPECT_THAT(out.text(), HasSubstr(R"(rdmactl_firmware_pending_activation{node="gpu-01",device="mlx5_0",pci="0000:3b:00.0"} 0)"));
}

// Issue 41, 3: a Socket Direct adapter's functions on two buses report one identity (the
// manufacturing base MAC): doctor judges it once, as one adapter, and the fleet counts it once.
TEST(FirmwareViews, ASocketDirectAdapterIsOneAdapter) {
  DeviceState a = function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.41.1000");
  DeviceState b = function("mlx5_1", "0000:86:00.0", "22.39.1002", "22.41.1000");
  (*a.firmware)["identity"] = {{"baseMac", "b8599ff08018"}};
  (*b.firmware)["identity"] = {{"baseMac", "b8599ff08018"}};
  const auto found = firmware_findings(run_doctor(host("n", {a, b}), nullptr));
  ASSERT_EQ(found.size(), 1u) << "one adapter, one finding";
  EXPECT_EQ(found[0].resource, "pci/0000:3b:00.0");
  // Another adapter of the same model: its own MAC, its own finding.
  (*b.firmware)["identity"] = {{"baseMac", "b8599ff08020"}};
  EXPECT_EQ(firmware_findings(run_doctor(host("n", {a, b}), nullptr)).size(), 2u);
}

TEST(DoctorFirmware, TheFunctionsOfOneAdapterReportingDifferentVersionsIsAnError) {
  const DoctorReport r = run_doctor(host("n", {function("mlx5_0", "0000:3b:00.0", "22.41.1000", "22.41.1000"),
                                               function("mlx5_1", "0000:3b:00.1", "22.39.1002", "22.39.1002")}),
                                    nullptr);
  const auto found = firmware_findings(r);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, "error");
  EXPECT_THAT(found[0].message, HasSubstr("mlx5_0 22.41.1000, mlx5_1 22.39.1002"));
}

TEST(DoctorFirmware, NotesWhichVersionToPinUnlessTheSpecPinsIt) {
  HostState inbox = host("n", {function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.39.1002")});
  DoctorReport r = run_doctor(inbox, nullptr);
  EXPECT_TRUE(firmware_findings(r).empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_THAT(r.notes[0].message, HasSubstr("upstream (inbox) mlx5 driver, which is paired with no firmware"));
  EXPECT_THAT(r.notes[0].message, HasSubstr("firmware: {version: \"22.39.1002\"}"));

  HostState vendor = inbox;
  (*vendor.devices[0].firmware)["vendorDriverVersion"] = "24.10-1.1.4";
  r = run_doctor(vendor, nullptr);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_THAT(r.notes[0].message, HasSubstr("vendor driver 24.10-1.1.4, which NVIDIA releases with one firmware"));

  NodeSpec spec;
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kRdmaDevice;
  iface.selector.value = "mlx5_0";
  iface.firmware.version = "22.39.1002";
  spec.interfaces.push_back(iface);
  PortState p;
  p.port = 1;
  vendor.devices[0].ports.push_back(p);
  EXPECT_TRUE(run_doctor(vendor, &spec).notes.empty()) << "the spec pins it already";
}

TEST(FleetFirmware, OneModelRunningSeveralVersionsAcrossTheFleetIsAWarning) {
  const NodeSpec spec;
  std::vector<HostState> states;
  states.push_back(host("gpu-01", {function("mlx5_0", "0000:3b:00.0", "22.41.1000", "22.41.1000"),
                                   function("mlx5_1", "0000:3b:00.1", "22.41.1000", "22.41.1000")}));
  states.push_back(host("gpu-02", {function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.39.1002")}));
  states.push_back(host("gpu-03", {function("mlx5_0", "0000:3b:00.0", "22.41.1000", "22.41.1000"),
                                   function("mlx5_2", "0000:af:00.0", "28.42.1000", "28.42.1000", "MT_0000000838")}));
  std::vector<FleetMember> members;
  for (const HostState& s : states) members.push_back(FleetMember{s.node, &spec, &s});
  const auto findings = check_fleet(members);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "firmware-version");
  EXPECT_EQ(findings[0].severity, FleetFinding::Severity::kWarning);
  EXPECT_EQ(findings[0].message,
            "adapters with PSID MT_0000000359 run 2 firmware versions: 22.39.1002 on gpu-02; 22.41.1000 on gpu-01, "
            "gpu-03 (pin one with firmware: {version: ...} in the spec)");
  EXPECT_EQ(findings[0].nodes, (std::vector<std::string>{"gpu-01", "gpu-02", "gpu-03"}));
}

TEST(PromFirmware, EachFunctionsVersionsAndWhetherAnImageWaits) {
  PromText out;
  prom_firmware(out, host("gpu-01", {function("mlx5_0", "0000:3b:00.0", "22.39.1002", "22.41.1000")}));
  const std::string text = out.text();
  EXPECT_THAT(text, HasSubstr(R"(rdmactl_firmware_info{node="gpu-01",device="mlx5_0",pci="0000:3b:00.0",)"
                              R"(running="22.39.1002",stored="22.41.1000",psid="MT_0000000359",source="devlink"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(rdmactl_firmware_pending_activation{node="gpu-01",device="mlx5_0",pci="0000:3b:00.0"} 1)"));
  PromText none;
  DeviceState rxe;
  rxe.name = "rxe0";
  prom_firmware(none, host("vm", {rxe}));
  EXPECT_THAT(none.text(), Not(HasSubstr("rdmactl_firmware"))) << "no adapter, no series";
}

}  // namespace report_firmware_views_test
}  // namespace rdmactl
