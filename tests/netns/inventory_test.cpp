// SPDX-License-Identifier: Apache-2.0
// show, doctor and export on the real kernel's netdevs with a fixture's RDMA sysfs tree: veths
// named like the ConnectX-6 Dx fixture's netdevs carry the MTU, state and addresses (rtnetlink),
// the fixture under --root carries devices, ports, GIDs and PCIe (sysfs). --root is a copy of the
// fixture: a plan writes its spec cache under --root, and the source tree is not to be written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace netns_inventory_test {

class FixtureHost : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth("ens1f0np0", "ens1f1np1").has_value());
    for (const char* dev : {"ens1f0np0", "ens1f1np1"}) {
      ASSERT_EQ(ns().ip({"link", "set", dev, "mtu", "9000", "up"}), 0);
    }
    ASSERT_EQ(ns().ip({"addr", "add", "192.168.100.11/24", "dev", "ens1f0np0"}), 0);
    ASSERT_EQ(ns().ip({"addr", "add", "192.168.101.11/24", "dev", "ens1f1np1"}), 0);
    std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx6dx-roce", root_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    // What doctor's access checks read, as a healthy host has it: unlimited locked memory for all
    // users and services, and the verbs and rdma_cm device files as the kernel makes them (0666).
    root_.write("/etc/security/limits.d/rdma.conf", "* - memlock unlimited\n");
    root_.write("/etc/systemd/system.conf.d/rdma.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n");
    for (const char* dev : {"mlx5_0", "mlx5_1"}) {
      const std::string uverbs = std::string("uverbs") + (dev[5] == '0' ? "0" : "1");
      root_.write("/sys/class/infiniband_verbs/" + uverbs + "/ibdev", std::string(dev) + "\n");
      root_.write("/dev/infiniband/" + uverbs, "");
      std::filesystem::permissions(root_.root() + "/dev/infiniband/" + uverbs, std::filesystem::perms(0666));
    }
    root_.write("/dev/infiniband/rdma_cm", "");
    std::filesystem::permissions(root_.root() + "/dev/infiniband/rdma_cm", std::filesystem::perms(0666));
  }

  int rdmactl(std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {RDMACTL_BINARY, "--netns", ns().name(), "--node", "gpu-01", "--root", root_.root()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string err;
    const int rc = ns().run(argv, out, &err);
    if (rc != 0 && rc != 2) ADD_FAILURE() << "stderr: " << err;
    return rc;
  }

  TempTree root_;
};

// The member of `list` whose "name" is `name`; a test failure naming what is missing otherwise.
// (Non-const: a const nlohmann::json's operator[] on a missing key is undefined, not a failure.)
nlohmann::json* named(nlohmann::json& list, const std::string& name, const std::string& what) {
  if (!list.is_array()) {
    ADD_FAILURE() << what << " is not a list: " << list.dump();
    return nullptr;
  }
  for (auto& item : list) {
    if (item.is_object() && item.value("name", "") == name) return &item;
  }
  ADD_FAILURE() << "no " << name << " in " << what << ": " << list.dump();
  return nullptr;
}

TEST_F(FixtureHost, ShowMapsEachRdmaPortToItsNetdevWithGidsAndPcie) {
  std::string out;
  ASSERT_EQ(rdmactl({"show", "--format", "json"}, &out), 0);
  auto state = nlohmann::json::parse(out);
  ASSERT_EQ(state["devices"].size(), 2u) << out;
  nlohmann::json* mlx5_0 = named(state["devices"], "mlx5_0", "show's devices");
  ASSERT_NE(mlx5_0, nullptr);
  EXPECT_EQ((*mlx5_0)["pci"], "0000:3b:00.0");
  EXPECT_EQ((*mlx5_0)["fwVersion"], "22.39.1002");
  EXPECT_EQ((*mlx5_0)["pcie"], nlohmann::json::parse(R"({"speed": "16.0 GT/s PCIe", "width": 16,
      "maxSpeed": "16.0 GT/s PCIe", "maxWidth": 16})"));
  ASSERT_TRUE((*mlx5_0)["ports"].is_array() && !(*mlx5_0)["ports"].empty()) << out;
  auto& port = (*mlx5_0)["ports"][0];
  EXPECT_EQ(port["port"], 1);
  EXPECT_EQ(port["state"], "ACTIVE");
  EXPECT_EQ(port["linkLayer"], "Ethernet");
  EXPECT_EQ(port["rateGbps"], 100);
  EXPECT_EQ(port["netdev"], "ens1f0np0");
  ASSERT_TRUE(port["gids"].is_array() && port["gids"].size() > 3) << port.dump();
  EXPECT_EQ(port["gids"][3], nlohmann::json::parse(R"({"index": 3,
      "gid": "0000:0000:0000:0000:0000:ffff:c0a8:640b", "type": "RoCE v2", "netdev": "ens1f0np0"})"));
  nlohmann::json* mlx5_1 = named(state["devices"], "mlx5_1", "show's devices");
  ASSERT_NE(mlx5_1, nullptr);
  ASSERT_TRUE((*mlx5_1)["ports"].is_array() && !(*mlx5_1)["ports"].empty()) << out;
  EXPECT_EQ((*mlx5_1)["ports"][0]["netdev"], "ens1f1np1");

  // The netdevs themselves come from the namespace's kernel, their PCI addresses from the fixture.
  nlohmann::json* f0 = named(state["netdevs"], "ens1f0np0", "show's netdevs");
  ASSERT_NE(f0, nullptr);
  EXPECT_EQ((*f0)["mtu"], 9000);
  EXPECT_EQ((*f0)["state"], "up");
  EXPECT_EQ((*f0)["pci"], "0000:3b:00.0");
  EXPECT_EQ((*f0)["addresses"], nlohmann::json::parse(R"(["192.168.100.11/24"])"));
  nlohmann::json* f1 = named(state["netdevs"], "ens1f1np1", "show's netdevs");
  ASSERT_NE(f1, nullptr);
  EXPECT_EQ((*f1)["mtu"], 9000);
  EXPECT_EQ((*f1)["pci"], "0000:3b:00.1");
  EXPECT_EQ((*f1)["addresses"], nlohmann::json::parse(R"(["192.168.101.11/24"])"));
}

TEST_F(FixtureHost, DoctorIsQuietOnAHealthyHostAndFindsALowMtu) {
  std::string out;
  ASSERT_EQ(rdmactl({"doctor", "--format", "json"}, &out), 0) << out;
  auto report = nlohmann::json::parse(out);
  EXPECT_TRUE(report["findings"].empty());
  ASSERT_EQ(report["notes"].size(), 3u) << out;
  EXPECT_EQ(report["notes"][0]["message"],
            "RoCE v2 GID index 3 is 192.168.100.11: use it for tests (ib_write_bw -x 3, NCCL_IB_GID_INDEX=3)");
  // The fixture's mlx5 has no vendor module version (/sys/module/mlx5_core/version): the inbox
  // driver, paired with no firmware, so doctor suggests pinning the one it runs.
  EXPECT_EQ(report["notes"][2]["resource"], "pci/0000:3b:00.0");
  EXPECT_NE(report["notes"][2]["message"].get<std::string>().find(
                "firmware 22.39.1002 (PSID MT_0000000359) with the upstream (inbox) mlx5 driver"),
            std::string::npos)
      << out;

  ASSERT_EQ(ns().ip({"link", "set", "ens1f1np1", "mtu", "1500"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "192.168.100.50/24", "dev", "ens1f0np0"}), 0);
  ASSERT_EQ(rdmactl({"doctor", "--format", "json"}, &out), 2) << out;
  report = nlohmann::json::parse(out);
  std::vector<std::string> found;
  for (const auto& f : report["findings"]) found.push_back(f["check"].get<std::string>() + " " + f["resource"].get<std::string>());
  EXPECT_EQ(found, (std::vector<std::string>{"roce-gid rdma/mlx5_0/1", "roce-mtu netdev/ens1f1np1"})) << out;
}

TEST_F(FixtureHost, ExportThenPlanShowsNoDrift) {
  std::string spec;
  ASSERT_EQ(rdmactl({"export"}, &spec), 0);
  EXPECT_NE(spec.find("rdmaDevice: mlx5_1"), std::string::npos) << spec;
  TempTree tree;
  tree.write("/exported.yaml", spec);
  std::string out;
  EXPECT_EQ(rdmactl({"plan", "-f", tree.root() + "/exported.yaml"}, &out), 0) << out;
  ASSERT_EQ(ns().ip({"link", "set", "ens1f0np0", "mtu", "4200"}), 0);
  EXPECT_EQ(rdmactl({"plan", "-f", tree.root() + "/exported.yaml"}, &out), 2) << out;
}

}  // namespace netns_inventory_test
}  // namespace rdmactl::test
