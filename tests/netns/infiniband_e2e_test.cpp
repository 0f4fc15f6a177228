// The InfiniBand issue's done criterion, end to end through the rdmactl binary: the ConnectX-7
// fixture under --root, a veth named ib0 in a throwaway namespace for rtnetlink, and the fake
// mstconfig, systemctl and sminfo first in PATH. Apply of examples/infiniband.yaml on the SM node
// stages the link type once (exit 3), sets IPoIB connected mode and the MTU, and converges OpenSM's
// config and service, verified through sminfo; a second apply writes nothing and still reports
// pending-reboot; after a cold reboot the plan is empty.
//
// The fake firmware plays this ConnectX-7 before its conversion (LINK_TYPE_P1 ETH), while the
// fixture's sysfs shows the port as it runs once converted (InfiniBand): the staging is visible
// only to mstconfig, and IPoIB and OpenSM need the InfiniBand port that the sysfs tree provides.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace {

constexpr const char* kConf = "/etc/opensm/opensm.conf";
constexpr const char* kGuid = "0x946dae0300f14a20";

class InfinibandEndToEnd : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(ns().add_veth("ib0", "ib0peer").has_value());
    ASSERT_EQ(ns().ip({"link", "set", "ib0peer", "up"}), 0);
    std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx7-ib", root_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    root_.write("/proc/sys/kernel/random/boot_id", "0b7c1f0e-2f55-4d1e-8a53-3f3f4e0c9a11\n");
    root_.write(kConf,
                "# OpenSM configuration\n#\n# Priority of this SM (0-15)\nsm_priority 0\n\n"
                "# The port GUID on which OpenSM is running\nguid 0x0000000000000000\n\n"
                "# Sweep interval in seconds\nsweep_interval 10\nlog_file /var/log/opensm.log\n");
    state_.write("/units/opensm.enabled", "disabled\n");
    state_.write("/units/opensm.active", "inactive\n");
    state_.write("/sm/port-guid", std::string(kGuid) + "\n");
    state_.write("/sm/port-lid", "18\n");
    state_.write("/opensm.conf-path", root_.root() + kConf + "\n");
    saved_path_ = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools:" + saved_path_).c_str(), 1);
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
    ASSERT_EQ(run_command({"fake-firmware", "add-device", "0000:c1:00.0", "ConnectX7",
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

  TempTree root_;
  TempTree state_;
  std::string saved_path_;
  std::string last_err_;
};

TEST_F(InfinibandEndToEnd, StagesTheLinkTypeOnceAndConvergesIpoibAndOpensm) {
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  ASSERT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &out), 2) << out << last_err_;
  const auto plan = nlohmann::json::parse(out);
  std::vector<std::string> fields;
  for (const auto& c : plan["changes"]) fields.push_back(c["resource"].get<std::string>() + " " + c["field"].get<std::string>());
  EXPECT_EQ(fields, (std::vector<std::string>{"pci/0000:c1:00.0 linkType", "netdev/ib0 ipoib.mode", "netdev/ib0 mtu",
                                              "netdev/ib0 state", "subnet-manager priority", "subnet-manager port",
                                              "subnet-manager enabled"}))
      << out;
  EXPECT_EQ(plan["changes"][0]["requires"], "reboot");

  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  const auto applied = nlohmann::json::parse(out);
  EXPECT_TRUE(applied["pendingReboot"].get<bool>());
  EXPECT_EQ(applied["changes"][0]["status"], "pending-reboot");
  for (size_t i = 1; i < applied["changes"].size(); ++i) EXPECT_EQ(applied["changes"][i]["status"], "applied") << out;
  EXPECT_EQ(calls_with("set LINK_TYPE_P1=IB"), 1u);
  EXPECT_EQ(calls_with("systemctl enable --now opensm"), 1u);
  EXPECT_EQ(root_.read("/sys/class/net/ib0/mode"), "connected");
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ib0"})[0]["mtu"], 65520);
  const std::string conf = root_.read(kConf);
  EXPECT_NE(conf.find("\nsm_priority 15\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find(std::string("\nguid ") + kGuid + "\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("\nsweep_interval 10\nlog_file /var/log/opensm.log\n"), std::string::npos) << conf;

  // Converged except the firmware: a second apply writes nothing and still says pending-reboot.
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &out), 3) << out << last_err_;
  const auto again = nlohmann::json::parse(out);
  ASSERT_EQ(again["changes"].size(), 1u) << out;
  EXPECT_EQ(again["changes"][0]["status"], "pending-reboot");
  EXPECT_EQ(calls_with(" set "), 1u);
  EXPECT_EQ(calls_with("systemctl enable"), 1u);
  EXPECT_EQ(calls_with("systemctl restart"), 0u);

  // A power cycle loads the staged value: nothing left to do.
  ASSERT_EQ(run_command({"fake-firmware", "reboot", "cold", root_.root()}), 0);
  EXPECT_EQ(rdmactl({"plan", "-f", spec}, &out), 0) << out << last_err_;
}

TEST_F(InfinibandEndToEnd, AWarmRebootThatDidNotLoadTheLinkTypeIsAnErrorNotAnotherStaging) {
  const std::string spec = std::string(RDMACTL_SOURCE_DIR) + "/examples/infiniband.yaml";
  std::string out;
  ASSERT_EQ(rdmactl({"apply", "-f", spec}, &out), 3) << out << last_err_;
  ASSERT_EQ(run_command({"fake-firmware", "reboot", "warm", root_.root()}), 0);
  EXPECT_EQ(rdmactl({"apply", "-f", spec}, &out), 1) << out;
  EXPECT_NE((out + last_err_).find("power"), std::string::npos) << out << last_err_;
  EXPECT_EQ(calls_with(" set "), 1u);
}

}  // namespace
}  // namespace rdmactl::test
