// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler on the OpenSM layouts of Debian and RHEL (tests/fixtures/opensm),
// on a copy of the cx7-ib fixture (mlx5_0 port 1, port GUID 0x946dae0300f14a20, lid 0x12), with
// the fake systemctl and sminfo first in PATH: where each layout takes the port and the priority,
// Debian's opensm@<GUID> instances started by the opensm oneshot for the GUIDs of PORTS, and the
// values RHEL's /etc/sysconfig/opensm sets. The DOCA layout: subnet_manager_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/engine/engine.h"
#include "agent/platform/command.h"
#include "reconcilers/subnet_manager/subnet_manager.h"
#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_subnet_manager_layout_test {

using nlohmann::json;

constexpr const char* kGuid = "0x946dae0300f14a20";
// A second InfiniBand port of the host (another adapter, on another fabric): PORTS=ALL runs an SM
// on it too.
constexpr const char* kOtherGuid = "0x946dae0300f14b30";

NodeSpec sm_spec(int priority) {
  NodeSpec spec;
  spec.subnet_manager.enabled = true;
  spec.subnet_manager.priority = priority;
  spec.subnet_manager.port = Selector{Selector::Kind::kRdmaDevice, "mlx5_0", 1};
  return spec;
}

std::vector<std::string> statuses(const Report& report) {
  std::vector<std::string> out;
  for (const Change& c : report.changes) {
    out.push_back(c.field + ": " + c.current.dump() + " -> " + c.desired.dump() + " (" + change_status_name(c.status) + ")");
  }
  return out;
}

class LayoutTest : public test::ReconcilerOnFixture {
 protected:
  void host(const std::string& layout) {
    use_fixture("cx7-ib", reconcilers::make_subnet_manager_reconciler(std::chrono::milliseconds(500)));
    std::filesystem::copy(test::source_path("tests/fixtures/opensm/" + layout), tree_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
    fake("root", tree_.root() + "\n");
    fake("opensm/layout", layout + "\n");
    fake("units/opensm.state", "disabled\n");
    fake("units/opensm.active", "inactive\n");
    if (layout == "debian") fake("units/opensm@.state", "static\n");
    fake("sm/ports", std::string("mlx5_0 1 ") + kGuid + " 18 ib\nmlx5_2 1 " + kOtherGuid + " 5 storage\n");
  }
  void fake(const std::string& file, const std::string& content) const {
    std::filesystem::create_directories(std::filesystem::path(tools_.state_dir() + "/" + file).parent_path());
    std::ofstream(tools_.state_dir() + "/" + file) << content;
  }
  std::string fake_file(const std::string& file) const {
    std::ifstream in(tools_.state_dir() + "/" + file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<std::string> systemctl_calls() const {
    std::vector<std::string> out;
    std::istringstream in(fake_file("calls.log"));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("systemctl ", 0) == 0 && line.rfind("systemctl is-", 0) != 0) out.push_back(line);
    }
    return out;
  }
  std::vector<std::string> running_instances() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(tools_.state_dir() + "/sm/instances")) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Another RDMA device in the tree: a copy of mlx5_0 with its own port GID 0 and link layer.
  void add_device(const std::string& name, const std::string& gid0, const std::string& link_layer) {
    const std::string devices = "/sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/infiniband/";
    std::filesystem::copy(tree_.root() + devices + "mlx5_0", tree_.root() + devices + name,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    tree_.write(devices + name + "/ports/1/gids/0", gid0 + "\n");
    tree_.write(devices + name + "/ports/1/link_layer", link_layer + "\n");
    std::filesystem::create_directory_symlink("../../devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/infiniband/" + name,
                                              tree_.root() + "/sys/class/infiniband/" + name);
  }
  Report plan(const NodeSpec& spec) {
    auto state = engine_->observe(*platform_, &spec, "n");
    EXPECT_TRUE(state.has_value()) << state.error().to_string();
    return state ? engine_->plan(spec, *state) : Report{};
  }
  Report apply(const NodeSpec& spec) { return engine_->apply(*platform_, spec, "n"); }

  test::FakeTools tools_;
};

TEST_F(LayoutTest, DebianShowsItsLayoutAndPortsAll) {
  host("debian");
  const HostState state = observe(NodeSpec{});
  const json& local = state.subnet_manager["local"];
  EXPECT_EQ(local["layout"], "debian");
  EXPECT_EQ(local["service"], "opensm");
  EXPECT_EQ(local["ports"], "ALL");
  EXPECT_EQ(local["portFrom"], "/etc/default/opensm PORTS");
  EXPECT_TRUE(local["priority"].is_null()) << "Debian ships no /etc/opensm/opensm.conf";
  EXPECT_EQ(local["priorityFrom"], "/etc/opensm/opensm.conf sm_priority");
  EXPECT_EQ(local["configExists"], false);
}

TEST_F(LayoutTest, DebianConvergesWithOneOpensmInstanceOnTheSpecsPort) {
  host("debian");
  // As the package leaves it once started: PORTS=ALL, an SM on every IB port.
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  EXPECT_EQ(running_instances(), (std::vector<std::string>{kGuid, kOtherGuid}));

  const NodeSpec spec = sm_spec(15);
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_EQ(statuses(planned), (std::vector<std::string>{R"(priority: null -> 15 (planned))",
                                                         R"(port: "ALL" -> "0x946dae0300f14a20" (planned))"}));
  EXPECT_EQ(planned.changes[0].via, "/etc/opensm/opensm.conf sm_priority");
  EXPECT_EQ(planned.changes[1].via, "/etc/default/opensm PORTS");

  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(applied.count(ChangeStatus::kApplied), 2u) << testing::PrintToString(statuses(applied));
  std::string defaults = test::read_file(test::source_path("tests/fixtures/opensm/debian/etc/default/opensm"));
  defaults.replace(defaults.find("PORTS=ALL"), 9, std::string("PORTS=\"") + kGuid + "\"");
  EXPECT_EQ(tree_.read("/etc/default/opensm"), defaults) << "only the PORTS line changes";
  EXPECT_EQ(tree_.read("/etc/opensm/opensm.conf"), "sm_priority 15\n");
  // Stopped, then started: the instance of the other port is gone, the spec's port runs priority 15.
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
  const std::vector<std::string> calls = systemctl_calls();
  EXPECT_EQ(calls, (std::vector<std::string>{"systemctl enable --now opensm", "systemctl stop opensm",
                                             "systemctl start opensm"}));
  const HostState after = observe(spec);
  EXPECT_EQ(after.subnet_manager["master"]["guid"], kGuid);
  EXPECT_EQ(after.subnet_manager["master"]["priority"], 15);
  EXPECT_EQ(after.subnet_manager["local"]["instances"],
            json::parse(R"([{"unit": "opensm@0x946dae0300f14a20", "guid": "0x946dae0300f14a20", "port": "mlx5_0 port 1",
                             "active": true}])"));

  const Report again = apply(spec);
  EXPECT_TRUE(again.changes.empty()) << testing::PrintToString(statuses(again));
  EXPECT_EQ(systemctl_calls().size(), calls.size()) << "a converged SM is not touched";
}

TEST_F(LayoutTest, DebianFromStoppedEnablesTheOneshotWhichStartsTheInstance) {
  host("debian");
  const NodeSpec spec = sm_spec(15);
  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(statuses(applied), (std::vector<std::string>{R"(priority: null -> 15 (applied))",
                                                         R"(port: "ALL" -> "0x946dae0300f14a20" (applied))",
                                                         R"(enabled: false -> true (applied))"}));
  EXPECT_EQ(systemctl_calls(), std::vector<std::string>{"systemctl enable --now opensm"})
      << "OpenSM was stopped: it reads the files when it starts";
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
}

// Debian's opensm.service is a oneshot that stays active after starting its instances, and
// opensm@.service has no Restart=: an instance that died is started again by apply (systemctl
// start opensm@GUID), where `enable --now opensm` alone did nothing and verify failed for ever.
TEST_F(LayoutTest, DebianADeadInstanceIsStartedAgain) {
  host("debian");
  const NodeSpec spec = sm_spec(15);
  ASSERT_TRUE(apply(spec).errors.empty());
  ASSERT_EQ(running_instances(), std::vector<std::string>{kGuid});
  // The instance's opensm dies; opensm.service stays active (RemainAfterExit).
  fake("units/opensm@" + std::string(kGuid) + ".active", "failed\n");
  std::filesystem::remove(tools_.state_dir() + "/sm/instances/" + kGuid);
  const Report planned = plan(spec);
  EXPECT_EQ(statuses(planned), std::vector<std::string>{"enabled: false -> true (planned)"});
  const size_t calls_before = systemctl_calls().size();
  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(statuses(applied), std::vector<std::string>{"enabled: false -> true (applied)"});
  const std::vector<std::string> calls = systemctl_calls();
  EXPECT_EQ(std::vector<std::string>(calls.begin() + static_cast<std::ptrdiff_t>(calls_before), calls.end()),
            (std::vector<std::string>{"systemctl enable --now opensm", "systemctl start opensm@0x946dae0300f14a20"}));
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
  EXPECT_TRUE(apply(spec).changes.empty());
}

// PORTS names the GUID as the admin wrote it (capitals, no leading zeros): opensm.service starts
// opensm@ of that spelling, and rdmactl looks at that instance, not at one of its own spelling.
TEST_F(LayoutTest, DebianPortsSpellingNamesTheInstance) {
  host("debian");
  tree_.write("/etc/default/opensm", "PORTS=0x946DAE0300F14A20\n");
  tree_.write("/etc/opensm/opensm.conf", "sm_priority 15\n");
  fake("units/opensm.state", "enabled\n");
  const NodeSpec spec = sm_spec(15);
  ASSERT_TRUE(apply(spec).errors.empty());
  const HostState state = observe(spec);
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["unit"], "opensm@0x946DAE0300F14A20");
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["active"], true);
  EXPECT_TRUE(plan(spec).changes.empty()) << testing::PrintToString(statuses(plan(spec)));
}

// PORTS=ALL (the package's default) runs an opensm@ per port (`ibstat -p`), and opensm.service
// stays active when one dies (a oneshot with RemainAfterExit; opensm@.service has no Restart=).
// Without a spec port every instance PORTS implies is judged: the dead one is planned and started.
TEST_F(LayoutTest, DebianPortsAllWithoutASpecPortStartsEveryDeadInstance) {
  host("debian");
  add_device("mlx5_2", "fe80:0000:0000:0000:946d:ae03:00f1:4b30", "InfiniBand");
  tree_.write("/etc/opensm/opensm.conf", "sm_priority 15\n");
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  ASSERT_EQ(running_instances(), (std::vector<std::string>{kGuid, kOtherGuid}));
  // The second rail's OpenSM dies.
  fake("units/opensm@" + std::string(kOtherGuid) + ".active", "failed\n");
  std::filesystem::remove(tools_.state_dir() + "/sm/instances/" + kOtherGuid);
  NodeSpec spec = sm_spec(15);
  spec.subnet_manager.port.reset();
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_EQ(statuses(planned), std::vector<std::string>{"enabled: false -> true (planned)"});
  const size_t calls_before = systemctl_calls().size();
  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  const std::vector<std::string> calls = systemctl_calls();
  EXPECT_EQ(std::vector<std::string>(calls.begin() + static_cast<std::ptrdiff_t>(calls_before), calls.end()),
            (std::vector<std::string>{"systemctl enable --now opensm", std::string("systemctl start opensm@") + kOtherGuid}));
  EXPECT_EQ(running_instances(), (std::vector<std::string>{kGuid, kOtherGuid}));
  EXPECT_TRUE(apply(spec).changes.empty());
}

// A spec that wants the SM off: an opensm@ instance that still runs OpenSM is drift, though the
// unit is disabled and its sibling died (before, the instances' states were ANDed into `active`,
// and one dead instance hid the running one).
TEST_F(LayoutTest, DebianSmOffWithOneInstanceStillRunningIsDrift) {
  host("debian");
  add_device("mlx5_2", "fe80:0000:0000:0000:946d:ae03:00f1:4b30", "InfiniBand");
  auto started = run_command({"systemctl", "start", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  ASSERT_EQ(running_instances(), (std::vector<std::string>{kGuid, kOtherGuid}));
  ASSERT_EQ(fake_file("units/opensm.state"), "disabled\n");
  fake("units/opensm@" + std::string(kOtherGuid) + ".active", "failed\n");
  std::filesystem::remove(tools_.state_dir() + "/sm/instances/" + kOtherGuid);
  NodeSpec spec;
  spec.subnet_manager.enabled = false;
  EXPECT_EQ(statuses(plan(spec)), std::vector<std::string>{"enabled: true -> false (planned)"});
  // opensm.service inactive, the instance running all the same: still drift.
  fake("units/opensm.active", "inactive\n");
  EXPECT_EQ(statuses(plan(spec)), std::vector<std::string>{"enabled: true -> false (planned)"});
}

// `ibstat -p` lists RoCE ports too (libibumad reads no link layer to list them), so PORTS=ALL on
// a host with an Ethernet port starts an opensm@ there that exits at once (no QP0 on Ethernet).
// rdmactl shows it and does not chase it: it would plan `enabled` on every run.
TEST_F(LayoutTest, DebianPortsAllLeavesTheInstanceOfARocePortAlone) {
  host("debian");
  constexpr const char* kRoceGuid = "0x0a5eb0fffe112233";
  add_device("mlx5_1", "fe80:0000:0000:0000:0a5e:b0ff:fe11:2233", "Ethernet");
  fake("sm/ports", std::string("mlx5_0 1 ") + kGuid + " 18 ib\nmlx5_1 1 " + kRoceGuid + " 0 eth Ethernet\n");
  tree_.write("/etc/opensm/opensm.conf", "sm_priority 15\n");
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  // osm_opensm_bind fails, main.c goes to Exit and exit(0): the Type=simple unit is inactive.
  EXPECT_EQ(fake_file(std::string("units/opensm@") + kRoceGuid + ".active"), "inactive\n");
  NodeSpec spec = sm_spec(15);
  spec.subnet_manager.port.reset();
  const HostState state = observe(spec);
  const json& instances = state.subnet_manager["local"]["instances"];
  ASSERT_EQ(instances.size(), 2u) << instances.dump();
  EXPECT_EQ(instances[0]["unit"], std::string("opensm@") + kGuid);
  EXPECT_EQ(instances[0]["active"], true);
  EXPECT_EQ(instances[1]["unit"], std::string("opensm@") + kRoceGuid);
  EXPECT_EQ(instances[1]["runs"], false);
  EXPECT_EQ(instances[1]["why"], "Ethernet port: OpenSM cannot open QP0 there and exits");
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_TRUE(planned.changes.empty()) << testing::PrintToString(statuses(planned));
}

// PORTS naming a GUID of no local port: OpenSM exits (libvendor osm_vendor_ibumad.c "ERR 5422:
// Unable to find requested CA guid", osm_opensm_bind fails, main.c Exit: exit(0)), so its
// Type=simple instance is inactive and no SM runs; rdmactl shows it as not running and does not
// chase it.
TEST_F(LayoutTest, DebianPortsWithAForeignGuidRunsNoOpensm) {
  host("debian");
  NodeSpec unported = sm_spec(15);
  unported.subnet_manager.port.reset();
  tree_.write("/etc/default/opensm", "PORTS=0x0002c90300009999\n");
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  EXPECT_EQ(fake_file("units/opensm@0x0002c90300009999.active"), "inactive\n");
  EXPECT_TRUE(running_instances().empty());
  const HostState state = observe(unported);
  const json& instances = state.subnet_manager["local"]["instances"];
  ASSERT_EQ(instances.size(), 1u) << instances.dump();
  EXPECT_EQ(instances[0]["runs"], false);
  EXPECT_EQ(instances[0]["why"], "no port of this host has that GUID: OpenSM exits");
}

// A PORTS word from which `opensm --guid` (strtoull base 16) reads 0, such as a device name:
// main.c makes it INVALID_GUID and get_port_guid takes the only port; with more ports OpenSM
// prompts on its terminal (/dev/null under systemd) and binds none, its unit active.
TEST_F(LayoutTest, DebianPortsWordReadingZeroTakesTheOnlyPortOrPrompts) {
  host("debian");
  NodeSpec unported = sm_spec(15);
  unported.subnet_manager.port.reset();
  tree_.write("/etc/default/opensm", "PORTS=mlx5_0\n");
  fake("sm/ports", std::string("mlx5_0 1 ") + kGuid + " 18 ib\n");
  ASSERT_TRUE(run_command({"systemctl", "start", "opensm"}));
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
  HostState state = observe(unported);
  ASSERT_EQ(state.subnet_manager["local"]["instances"].size(), 1u) << state.subnet_manager.dump();
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["guid"], kGuid);
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["active"], true);

  ASSERT_TRUE(run_command({"systemctl", "stop", "opensm"}));
  add_device("mlx5_2", "fe80:0000:0000:0000:946d:ae03:00f1:4b30", "InfiniBand");
  fake("sm/ports", std::string("mlx5_0 1 ") + kGuid + " 18 ib\nmlx5_2 1 " + kOtherGuid + " 5 storage\n");
  ASSERT_TRUE(run_command({"systemctl", "start", "opensm"}));
  EXPECT_EQ(fake_file("units/opensm@mlx5_0.active"), "active\n");
  EXPECT_TRUE(running_instances().empty());
  state = observe(unported);
  const json& instance = state.subnet_manager["local"]["instances"][0];
  EXPECT_EQ(instance["runs"], false);
  EXPECT_NE(instance.value("why", "").find("asks on its terminal"), std::string::npos) << instance.dump();
}

// PORTS as one GUID where it named more (ALL, or a list): the other ports' OpenSM stop with the
// restart (PartOf=opensm.service), and on a dual-rail host that is the other fabric's SM. The plan
// says which.
TEST_F(LayoutTest, DebianPortsRewrittenToOneGuidSaysWhichOtherSmStops) {
  host("debian");
  add_device("mlx5_2", "fe80:0000:0000:0000:946d:ae03:00f1:4b30", "InfiniBand");
  for (const char* ports : {"PORTS=ALL\n", "PORTS=\"0x946dae0300f14a20 946dae0300f14b30\"\n"}) {
    tree_.write("/etc/default/opensm", ports);
    const Report planned = plan(sm_spec(15));
    ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
    const auto port = std::find_if(planned.changes.begin(), planned.changes.end(),
                                   [](const Change& c) { return c.field == "port"; });
    ASSERT_NE(port, planned.changes.end()) << ports;
    EXPECT_NE(port->note.find("the OpenSM PORTS also runs now stops: opensm@"), std::string::npos) << port->note;
    // Under the spelling PORTS gives it (ALL: as ibstat -p prints it).
    EXPECT_NE(port->note.find("946dae0300f14b30 (mlx5_2 port 1)"), std::string::npos) << port->note;
    EXPECT_NE(port->note.find("another fabric there loses this node's SM"), std::string::npos) << port->note;
  }
  // PORTS already the spec's port alone: nothing stops, nothing said.
  tree_.write("/etc/default/opensm", std::string("PORTS=") + kGuid + "\n");
  for (const Change& c : plan(sm_spec(15)).changes) EXPECT_NE(c.field, "port");
}

// A word of PORTS without 0x is a GUID to `opensm --guid` (opensm/main.c: strtoull(optarg, NULL,
// 16)): PORTS=946dae0300f14a20 runs OpenSM on the spec's port, and there is nothing to change.
TEST_F(LayoutTest, DebianPortsGuidWithout0xIsHexadecimal) {
  host("debian");
  tree_.write("/etc/default/opensm", "PORTS=946dae0300f14a20\n");
  tree_.write("/etc/opensm/opensm.conf", "sm_priority 15\n");
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
  const NodeSpec spec = sm_spec(15);
  const HostState state = observe(spec);
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["unit"], "opensm@946dae0300f14a20");
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_TRUE(planned.changes.empty()) << testing::PrintToString(statuses(planned));
}

// OpenSM with guid 0 (RHEL's opensm.conf as shipped) binds to the first port above DOWN of every
// RDMA device, RoCE ports included (opensm/main.c get_port_guid, libvendor's
// osm_vendor_get_all_port_attr: no link layer read). With an Ethernet port first (mlx4_0 sorts
// before mlx5_0), OpenSM cannot run there: the plan says so rather than judge the election on
// mlx5_0.
TEST_F(LayoutTest, GuidZeroWithAnEthernetPortFirstIsSaid) {
  host("rhel");
  add_device("mlx4_0", "fe80:0000:0000:0000:0a5e:b0ff:fe11:2233", "Ethernet");
  fake("sm/ports", std::string("mlx4_0 1 0x0a5eb0fffe112233 0 eth Ethernet\nmlx5_0 1 ") + kGuid + " 18 ib\n");
  fake("units/opensm.state", "enabled\n");
  auto started = run_command({"systemctl", "start", "opensm"});
  ASSERT_TRUE(started);
  EXPECT_EQ(fake_file("units/opensm.active"), "failed\n") << "OpenSM exits on the Ethernet port";
  NodeSpec spec = sm_spec(0);
  spec.subnet_manager.port.reset();
  spec.subnet_manager.enabled.reset();
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u) << testing::PrintToString(statuses(planned));
  EXPECT_NE(planned.errors[0].message.find("OpenSM binds to mlx4_0 port 1, an Ethernet port, where it cannot run"),
            std::string::npos)
      << planned.errors[0].message;
  EXPECT_NE(planned.errors[0].message.find("get_port_guid"), std::string::npos) << planned.errors[0].message;
  EXPECT_NE(planned.errors[0].message.find("give subnetManager a port"), std::string::npos);
  // A guid line naming the Ethernet port: the same, said as such.
  const std::string conf = tree_.read("/etc/rdma/opensm.conf");
  std::string roce = conf;
  roce.replace(roce.find("guid 0x0000000000000000"), 23, "guid 0x0a5eb0fffe112233");
  tree_.write("/etc/rdma/opensm.conf", roce);
  const Report named = plan(spec);
  ASSERT_EQ(named.errors.size(), 1u) << testing::PrintToString(statuses(named));
  EXPECT_NE(named.errors[0].message.find("mlx4_0 port 1, an Ethernet port, where it cannot run (no QP0): "
                                         "/etc/rdma/opensm.conf guid names it"),
            std::string::npos)
      << named.errors[0].message;
  tree_.write("/etc/rdma/opensm.conf", conf);
  // With the spec's port, guid becomes mlx5_0's.
  const Report applied = apply(sm_spec(0));
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
}

// libibumad lists devices of node type 1-3 only (rdma-core libibumad/umad.c is_ib_type): an
// iWARP RNIC (node_type "4: RNIC") sorting before mlx5_0 is no port of OpenSM's (guid 0 binds to
// mlx5_0) nor of `ibstat -p` (PORTS=ALL starts no opensm@ for it).
TEST_F(LayoutTest, AnIwarpDeviceIsNoPortOfOpensm) {
  host("rhel");
  add_device("irdma0", "fe80:0000:0000:0000:0a5e:b0ff:fe44:5566", "Ethernet");
  tree_.write("/sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/infiniband/irdma0/node_type", "4: RNIC\n");
  fake("units/opensm.state", "enabled\n");
  ASSERT_TRUE(run_command({"systemctl", "start", "opensm"}));
  NodeSpec spec = sm_spec(0);
  spec.subnet_manager.port.reset();
  spec.subnet_manager.enabled.reset();
  const Report planned = plan(spec);
  for (const Error& e : planned.errors) EXPECT_EQ(e.message.find("irdma0"), std::string::npos) << e.message;
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
}

TEST_F(LayoutTest, DebianPortsAllStartsNoInstanceForAnIwarpDevice) {
  host("debian");
  NodeSpec unported = sm_spec(15);
  unported.subnet_manager.port.reset();
  add_device("irdma0", "fe80:0000:0000:0000:0a5e:b0ff:fe44:5566", "Ethernet");
  tree_.write("/sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/infiniband/irdma0/node_type", "4: RNIC\n");
  const HostState state = observe(unported);
  ASSERT_EQ(state.subnet_manager["local"]["instances"].size(), 1u) << state.subnet_manager["local"].dump();
  EXPECT_EQ(state.subnet_manager["local"]["instances"][0]["unit"], std::string("opensm@") + kGuid);
}

// guid 0: each branch of opensm 3.3.23 main.c get_port_guid (~441-486), as rdmactl models it
// (the port sminfo asks through) and as the fake systemctl's OpenSM binds it (the instance that
// runs): a single port whatever its state; else the first above DOWN; none above DOWN, the first.
class GetPortGuidTest : public LayoutTest {
 protected:
  // mlx5_0's state, and mlx5_2's ("" : no mlx5_2); the GUID OpenSM binds; the port sminfo asks.
  void check(const std::string& mlx5_0, const std::string& mlx5_2, const std::string& bound, const std::string& asked) {
    const std::string dev = "/sys/devices/pci0000:c0/0000:c0:01.1/0000:c1:00.0/infiniband/";
    host("rhel");
    std::string ports = std::string("mlx5_0 1 ") + kGuid + " 18 ib" + (mlx5_0 == "1: DOWN" ? " DOWN" : "") + "\n";
    if (!mlx5_2.empty()) {
      add_device("mlx5_2", "fe80:0000:0000:0000:946d:ae03:00f1:4b30", "InfiniBand");
      tree_.write(dev + "mlx5_2/ports/1/state", mlx5_2 + "\n");
      ports += std::string("mlx5_2 1 ") + kOtherGuid + " 5 ib" + (mlx5_2 == "1: DOWN" ? " DOWN" : "") + "\n";
    }
    tree_.write(dev + "mlx5_0/ports/1/state", mlx5_0 + "\n");
    fake("sm/ports", ports);
    fake("units/opensm.state", "enabled\n");
    ASSERT_TRUE(run_command({"systemctl", "start", "opensm"}));
    EXPECT_EQ(running_instances(), std::vector<std::string>{bound});
    NodeSpec spec;
    spec.subnet_manager.enabled = true;
    (void)observe(spec);
    EXPECT_NE(fake_file("calls.log").find(asked + "\n"), std::string::npos) << fake_file("calls.log");
  }
};

TEST_F(GetPortGuidTest, ASinglePortIsTakenWhateverItsState) { check("1: DOWN", "", kGuid, "sminfo -C mlx5_0 -P 1"); }
TEST_F(GetPortGuidTest, DownPortsAreSkipped) { check("1: DOWN", "4: ACTIVE", kOtherGuid, "sminfo -C mlx5_2 -P 1"); }
TEST_F(GetPortGuidTest, InitCountsAsAboveDown) { check("1: DOWN", "2: INIT", kOtherGuid, "sminfo -C mlx5_2 -P 1"); }
TEST_F(GetPortGuidTest, NoneAboveDownTakesTheFirst) { check("1: DOWN", "1: DOWN", kGuid, "sminfo -C mlx5_0 -P 1"); }

TEST_F(LayoutTest, DebianPortsNoneWithoutASpecPortIsAPlanError) {
  host("debian");
  tree_.write("/etc/default/opensm", "PORTS=NONE\n");
  NodeSpec spec = sm_spec(15);
  spec.subnet_manager.port.reset();  // PORTS is then not managed
  const Report planned = plan(spec);
  ASSERT_EQ(planned.errors.size(), 1u);
  EXPECT_NE(planned.errors[0].message.find("PORTS=NONE in /etc/default/opensm"), std::string::npos);
  // The fake unit does what the real ExecCondition does: enabled, started, never active.
  auto started = run_command({"systemctl", "enable", "--now", "opensm"});
  ASSERT_TRUE(started && started->exit_code == 0);
  EXPECT_EQ(fake_file("units/opensm.active"), "inactive\n");
  // With the spec's port, PORTS becomes that GUID and OpenSM runs.
  const Report applied = apply(sm_spec(15));
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
}

// PORTS=NONE is how Debian's /etc/default/opensm says to run no OpenSM; a node whose spec asks
// for none still wants a master elsewhere on the fabric, asked through its first InfiniBand port
// above DOWN (as before issue 41). The same where PORTS names only a foreign or a RoCE GUID.
TEST_F(LayoutTest, DebianPortsNoneWithTheSmDisabledAsksTheMasterThroughAnInfinibandPort) {
  host("debian");
  add_device("mlx4_0", "fe80:0000:0000:0000:0a5e:b0ff:fe11:2233", "Ethernet");
  fake("sm/ports", std::string("mlx4_0 1 0x0a5eb0fffe112233 0 eth Ethernet\nmlx5_0 1 ") + kGuid + " 18 ib\n");
  fake("sm/remote", "ib 3 0x0002c90300001234 15\n");
  NodeSpec spec;
  spec.subnet_manager.enabled = false;
  for (const std::string ports : {"PORTS=NONE\n", "", "PORTS=0x0002c90300009999\n", "PORTS=0x0a5eb0fffe112233\n"}) {
    tree_.write("/etc/default/opensm", ports);
    const Report planned = plan(spec);
    EXPECT_TRUE(planned.errors.empty()) << ports << ": " << planned.errors[0].to_string();
    const HostState state = observe(spec);
    EXPECT_EQ(state.subnet_manager["master"].value("guid", ""), "0x0002c90300001234")
        << ports << ": " << state.subnet_manager.value("masterReason", "");
    EXPECT_NE(fake_file("calls.log").find("sminfo -C mlx5_0 -P 1"), std::string::npos) << ports;
  }
}

// RHEL's opensm.conf as shipped (guid 0) with an Ethernet port first: OpenSM would bind there,
// but with the SM off nothing binds; the master is asked through mlx5_0, and no error is said.
TEST_F(LayoutTest, GuidZeroWithAnEthernetPortFirstAndTheSmDisabledAsksThroughInfiniband) {
  host("rhel");
  add_device("mlx4_0", "fe80:0000:0000:0000:0a5e:b0ff:fe11:2233", "Ethernet");
  fake("sm/ports", std::string("mlx4_0 1 0x0a5eb0fffe112233 0 eth Ethernet\nmlx5_0 1 ") + kGuid + " 18 ib\n");
  fake("sm/remote", "ib 3 0x0002c90300001234 15\n");
  NodeSpec spec;
  spec.subnet_manager.enabled = false;
  const Report planned = plan(spec);
  EXPECT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  const HostState state = observe(spec);
  EXPECT_EQ(state.subnet_manager["master"].value("guid", ""), "0x0002c90300001234")
      << state.subnet_manager.value("masterReason", "");
  EXPECT_NE(fake_file("calls.log").find("sminfo -C mlx5_0 -P 1"), std::string::npos);
}

TEST_F(LayoutTest, RhelTakesGuidAndPriorityFromEtcRdmaOpensmConf) {
  host("rhel");
  const std::string conf_before = tree_.read("/etc/rdma/opensm.conf");
  const NodeSpec spec = sm_spec(15);
  const Report planned = plan(spec);
  ASSERT_TRUE(planned.errors.empty()) << planned.errors[0].to_string();
  EXPECT_EQ(statuses(planned), (std::vector<std::string>{R"(priority: 0 -> 15 (planned))",
                                                         R"(port: "0x0000000000000000" -> "0x946dae0300f14a20" (planned))",
                                                         R"(enabled: false -> true (planned))"}));
  EXPECT_EQ(planned.changes[0].via, "/etc/rdma/opensm.conf sm_priority");
  EXPECT_EQ(planned.changes[1].via, "/etc/rdma/opensm.conf guid");
  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(applied.count(ChangeStatus::kApplied), 3u);
  std::string conf = conf_before;
  conf.replace(conf.find("guid 0x0000000000000000"), 23, std::string("guid ") + kGuid);
  conf.replace(conf.find("sm_priority 0"), 13, "sm_priority 15");
  EXPECT_EQ(tree_.read("/etc/rdma/opensm.conf"), conf);
  EXPECT_EQ(systemctl_calls(), std::vector<std::string>{"systemctl enable --now opensm"});
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid});
  EXPECT_TRUE(apply(spec).changes.empty());
}

TEST_F(LayoutTest, RhelSysconfigPriorityWhereSetIsWhereItIsManaged) {
  host("rhel");
  tree_.write("/etc/sysconfig/opensm", "# site settings\nPRIORITY=10\n#GUIDS=\"\"\n");
  const NodeSpec spec = sm_spec(15);
  const Report planned = plan(spec);
  ASSERT_FALSE(planned.changes.empty());
  EXPECT_EQ(planned.changes[0].field, "priority");
  EXPECT_EQ(planned.changes[0].current, 10);
  EXPECT_EQ(planned.changes[0].via, "/etc/sysconfig/opensm PRIORITY");
  const Report applied = apply(spec);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(tree_.read("/etc/sysconfig/opensm"), "# site settings\nPRIORITY=\"15\"\n#GUIDS=\"\"\n");
  EXPECT_EQ(observe(spec).subnet_manager["master"]["priority"], 15);
}

TEST_F(LayoutTest, OneSpecGivesAMasterAndAStandbyOnTwoNodes) {
  host("debian");
  auto fabric = load_spec(test::source_path("examples/infiniband.yaml"));
  ASSERT_TRUE(fabric) << fabric.error().to_string();
  // ib-sm-01 (priority 15) is master elsewhere on the fabric; this host is ib-sm-02 (priority 14).
  fake("sm/remote", "ib 3 0x0002c90300001234 15\n");
  const NodeSpec standby = merge_for_node(*fabric, "ib-sm-02");
  ASSERT_EQ(standby.subnet_manager.priority, 14);
  const Report applied = apply(standby);
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_FALSE(applied.rolled_back);
  EXPECT_EQ(running_instances(), std::vector<std::string>{kGuid}) << "the standby runs";
  EXPECT_EQ(observe(standby).subnet_manager["master"]["guid"], "0x0002c90300001234");
  EXPECT_TRUE(apply(standby).changes.empty());
  // The master goes: the standby takes over, and the same spec still holds on this node.
  std::filesystem::remove(tools_.state_dir() + "/sm/remote");
  EXPECT_EQ(observe(standby).subnet_manager["master"]["guid"], kGuid);
  EXPECT_TRUE(plan(standby).errors.empty());
}

}  // namespace reconcilers_subnet_manager_layout_test
}  // namespace rdmactl
