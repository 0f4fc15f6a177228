// SPDX-License-Identifier: Apache-2.0
// The InfiniBand done criterion, end to end through the rdmactl binary: the ConnectX-7 fixture
// under --root (its ib0 made legacy IPoIB, with the RC flag in its address, as DOCA-OFED's
// ipoib_enhanced=0 gives it), a veth named ib0 in a throwaway namespace for rtnetlink, OpenSM as
// Debian or RHEL install it (tests/fixtures/opensm), and the fake mstconfig, systemctl and sminfo
// in ROOT/usr/sbin, where --root confines rdmactl's tools (never the host's PATH). Apply of examples/infiniband.yaml on the SM node stages the link type once (exit
// 3), writes exactly "connected\n" to the IPoIB mode file, sets the MTU, and converges OpenSM where
// the layout takes it (Debian: PORTS = the port's GUID, one opensm@ instance; RHEL:
// /etc/rdma/opensm.conf), verified through sminfo; a second apply writes nothing and still reports
// pending-reboot; after a cold reboot the plan is empty. On the fixture as it is (enhanced IPoIB),
// connected mode is a plan error.
//
// The fake firmware plays this ConnectX-7 before its conversion (LINK_TYPE_P1 ETH), while the
// fixture's sysfs shows the port as it runs once converted (InfiniBand): the staging is visible
// only to mstconfig, and IPoIB and OpenSM need the InfiniBand port that the sysfs tree provides.
//
// Last, the confinement itself: with the fakes only on the host's PATH, rdmactl under --root runs
// none of them and says what to install.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace netns_infiniband_e2e_test {

constexpr const char* kGuid = "0x946dae0300f14a20";
constexpr const char* kLegacyAddress = "80:00:04:04:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20";
// The tools rdmactl runs, as the fixture's stand-ins; fake-firmware drives them and is the test's.
constexpr const char* kFakeTools[] = {"mstconfig", "systemctl", "sminfo"};

std::string fake_tool(const std::string& name) { return std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools/" + name; }

class InfinibandEndToEnd : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth("ib0", "ib0peer").has_value());
    ASSERT_EQ(ns().ip({"link", "set", "ib0peer", "up"}), 0);
    std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx7-ib", root_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    root_.write("/proc/sys/kernel/random/boot_id", "0b7c1f0e-2f55-4d1e-8a53-3f3f4e0c9a11\n");
    root_.write("/sys/class/net/ib0/address", std::string(kLegacyAddress) + "\n");
    state_.write("/root", root_.root() + "\n");
    state_.write("/units/opensm.state", "disabled\n");
    state_.write("/units/opensm.active", "inactive\n");
    state_.write("/sm/ports", std::string("mlx5_0 1 ") + kGuid + " 18 ib\n");
    for (const char* tool : kFakeTools) root_.symlink(fake_tool(tool), std::string("/usr/sbin/") + tool);
    saved_path_ = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
    ASSERT_EQ(run_command({fake_tool("fake-firmware"), "add-device", "0000:c1:00.0", "ConnectX7",
                           "LINK_TYPE_P1=ETH(2),ETH(2),ETH(2)", "LINK_TYPE_P2=ETH(2),ETH(2),ETH(2)"}),
              0);
  }
  void TearDown() override {
    if (!saved_path_.empty()) ::setenv("PATH", saved_path_.c_str(), 1);
    ::unsetenv("RDMACTL_FAKE_STATE");
    NetnsTest::TearDown();
  }

  int rdmactl(std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {RDMACTL_BINARY, "--netns", ns().name(), "--node", "ib-sm-01", "--root", root_.root()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string err;
    const int rc = ns().run(argv, out, &err);
    last_err_ = err;
    return rc;
  }

  size_t calls_with(const std::string& needle) const {
    std::istringstream log(state_.read("/calls.log"));
    size_t n = 0;
    for (std::string line; std::getline(log, line);) n += line.find(needle) != std::string::npos;
    return n;
  }

  // OpenSM as `layout` (debian | rhel) installs it.
  void opensm_layout(const std::string& layout) {
    std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/opensm/" + layout, root_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
    state_.write("/opensm/layout", layout + "\n");
    if (layout == "debian") state_.write("/units/opensm@.state", "static\n");
  }

  TempTree root_;
  TempTree state_;
  std::string saved_path_;
  std::string last_err_;
};

TEST_F(InfinibandEndToEnd, OnDebianStagesTheLinkTypeOnceAndConvergesIpoibAndOneOpensm) {
  opensm_layout("debian");
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  ASSERT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &out), 2) << out << last_err_;
  const auto plan = nlohmann::json::parse(out);
  std::vector<std::string> fields;
  for (const auto& c : plan["changes"]) fields.push_back(c["resource"].get<std::string>() + " " + c["field"].get<std::string>());
  EXPECT_EQ(fields, (std::vector<std::string>{"pci/0000:c1:00.0 linkType", "netdev/ib0 ipoib.mode", "netdev/ib0 mtu",
                                              "netdev/ib0 state", "subnet-manager priority", "subnet-manager port",
                                              "subnet-manager partitions", "subnet-manager enabled"}))
      << out;
  EXPECT_EQ(plan["changes"][0]["requires"], "reboot");

  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  const auto applied = nlohmann::json::parse(out);
  EXPECT_TRUE(applied["pendingReboot"].get<bool>());
  EXPECT_EQ(applied["changes"][0]["status"], "pending-reboot");
  for (size_t i = 1; i < applied["changes"].size(); ++i) EXPECT_EQ(applied["changes"][i]["status"], "applied") << out;
  EXPECT_EQ(calls_with("set LINK_TYPE_P1=IB"), 1u);
  EXPECT_EQ(calls_with("systemctl enable --now opensm"), 1u);
  EXPECT_EQ(root_.read("/sys/class/net/ib0/mode"), "connected\n") << "ipoib_set_mode takes \"connected\\n\"";
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ib0"})[0]["mtu"], 65520);
  // Debian: PORTS is the port's GUID (one opensm@ instance), sm_priority in /etc/opensm/opensm.conf.
  const std::string defaults = root_.read("/etc/default/opensm");
  EXPECT_NE(defaults.find(std::string("\nPORTS=\"") + kGuid + "\"\n"), std::string::npos) << defaults;
  EXPECT_NE(defaults.find("# ALL: Start opensm on all ports\n"), std::string::npos) << "the rest is kept";
  EXPECT_EQ(root_.read("/etc/opensm/opensm.conf"), "sm_priority 15\n");
  // The example's partitions, in the file Debian's OpenSM reads (none before: made with a header).
  const std::string partitions = root_.read("/etc/opensm/partitions.conf");
  EXPECT_NE(partitions.find("\nDefault=0x7fff, ipoib, mtu=5 : ALL=full;\n"), std::string::npos) << partitions;
  EXPECT_NE(partitions.find("\nstorage=0x0a12, ipoib, mtu=5 : ALL_CAS=limited, ALL_SWITCHES=full;\n"), std::string::npos)
      << partitions;
  EXPECT_EQ(state_.read(std::string("/units/opensm@") + kGuid + ".active"), "active\n");
  EXPECT_EQ(state_.read(std::string("/sm/instances/") + kGuid), std::string("18 ") + kGuid + " 15\n");

  // Converged except the firmware: a second apply writes nothing and still says pending-reboot.
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  const auto again = nlohmann::json::parse(out);
  ASSERT_EQ(again["changes"].size(), 1u) << out;
  EXPECT_EQ(again["changes"][0]["status"], "pending-reboot");
  EXPECT_EQ(calls_with(" set "), 1u);
  EXPECT_EQ(calls_with("systemctl enable"), 1u);
  EXPECT_EQ(calls_with("systemctl restart"), 0u);
  EXPECT_EQ(calls_with("systemctl stop"), 0u);

  // A power cycle loads the staged value: nothing left to do.
  ASSERT_EQ(run_command({fake_tool("fake-firmware"), "reboot", "cold", root_.root()}), 0);
  EXPECT_EQ(rdmactl({"plan", "-f", spec}, &out), 0) << out << last_err_;
}

TEST_F(InfinibandEndToEnd, OnRhelConvergesThroughEtcRdmaOpensmConf) {
  opensm_layout("rhel");
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  const std::string conf = root_.read("/etc/rdma/opensm.conf");
  EXPECT_NE(conf.find("\nsm_priority 15\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find(std::string("\nguid ") + kGuid + "\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("\npartition_config_file /etc/rdma/partitions.conf\n"), std::string::npos) << "the rest is kept";
  EXPECT_EQ(calls_with("systemctl enable --now opensm"), 1u);
  EXPECT_EQ(state_.read(std::string("/sm/instances/") + kGuid), std::string("18 ") + kGuid + " 15\n");
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  EXPECT_EQ(nlohmann::json::parse(out)["changes"].size(), 1u) << out;
}

TEST_F(InfinibandEndToEnd, ConnectedModeOnEnhancedIpoibIsAPlanErrorWithTheFix) {
  opensm_layout("debian");
  root_.write("/sys/class/net/ib0/address", "00:00:10:29:fe:80:00:00:00:00:00:00:94:6d:ae:03:00:f1:4a:20\n");
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  EXPECT_EQ(rdmactl({"plan", "-f", spec}, &out), 1) << out << last_err_;
  EXPECT_NE(out.find("ib0 runs enhanced IPoIB, which has no connected mode"), std::string::npos) << out;
  EXPECT_EQ(rdmactl({"apply", "-f", spec}, &out), 1) << out;
  EXPECT_EQ(root_.read("/sys/class/net/ib0/mode"), "datagram\n") << "nothing applied";
  EXPECT_EQ(calls_with(" set "), 0u);
}

TEST_F(InfinibandEndToEnd, AWarmRebootThatDidNotLoadTheLinkTypeIsAnErrorNotAnotherStaging) {
  opensm_layout("debian");
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  ASSERT_EQ(rdmactl({"apply", "-f", spec}, &out), 3) << out << last_err_;
  ASSERT_EQ(run_command({fake_tool("fake-firmware"), "reboot", "warm", root_.root()}), 0);
  EXPECT_EQ(rdmactl({"apply", "-f", spec}, &out), 1) << out;
  EXPECT_NE((out + last_err_).find("power"), std::string::npos) << out << last_err_;
  EXPECT_EQ(calls_with(" set "), 1u);
}

// --root confines the tools: the fakes only on the host's PATH (as this test ran before the
// confinement), none in ROOT. rdmactl must not run them (nor the host's real tools, which would
// query and change the real firmware and OpenSM): the plan says what is missing, nothing is called.
TEST_F(InfinibandEndToEnd, UnderRootAToolOnlyOnTheHostPathIsNotUsed) {
  opensm_layout("debian");
  for (const char* tool : kFakeTools) std::filesystem::remove(root_.root() + "/usr/sbin/" + tool);
  ::setenv("PATH", (std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools:" + saved_path_).c_str(), 1);
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  const int rc = rdmactl({"plan", "-f", spec, "--format", "json"}, &out);
  EXPECT_NE(rc, 0) << out << last_err_;
  EXPECT_EQ(state_.read("/calls.log"), "") << "a tool on the host's PATH ran under --root";
  EXPECT_NE((out + last_err_).find("mstflint"), std::string::npos) << "the missing mstconfig says what to install\n"
                                                                   << out << last_err_;
  EXPECT_EQ(rdmactl({"apply", "-f", spec}, &out), 1) << out << last_err_;
  EXPECT_EQ(state_.read("/calls.log"), "");
  EXPECT_EQ(root_.read("/sys/class/net/ib0/mode"), "datagram\n") << "nothing applied";

  // The same tools in ROOT/usr/sbin are used: the fixture tree decides, not PATH.
  for (const char* tool : kFakeTools) root_.symlink(fake_tool(tool), std::string("/usr/sbin/") + tool);
  ::setenv("PATH", saved_path_.c_str(), 1);
  EXPECT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &out), 2) << out << last_err_;
  EXPECT_NE(state_.read("/calls.log").find("-e q LINK_TYPE_P1"), std::string::npos) << state_.read("/calls.log");
}

}  // namespace netns_infiniband_e2e_test
}  // namespace rdmactl::test
