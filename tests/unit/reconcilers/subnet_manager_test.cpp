// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler on a copy of the cx7-ib fixture (mlx5_0 port 1, port GUID
// 0x946dae0300f14a20, lid 0x12) with DOCA-OFED's OpenSM (the opensmd init script, OpenSM reading
// /etc/opensm/opensm.conf's guid and sm_priority), and the fake systemctl and sminfo from
// tests/fake-tools first in PATH (the Debian and RHEL layouts: subnet_manager_layout_test.cpp): what show observes, the plan, apply converging with opensm.conf
// edited in two lines only and OpenSM (re)started at most once, a second apply that writes nothing,
// the disable path, a remote master and how verify judges the election, a missing opensm.conf, the
// rollback of a failed start to the same bytes, and missing tools.
//
// Apply, verify and rollback run through the real Engine::apply (with the fixture's netdevs and
// this one reconciler); plans use the reconciler's diff on Engine::observe.
#include "reconcilers/subnet_manager/subnet_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "agent/engine/engine.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_subnet_manager_test {

using nlohmann::json;

constexpr const char* kConf = "/etc/opensm/opensm.conf";
constexpr const char* kLocalGuid = "0x946dae0300f14a20";
constexpr const char* kRemoteGuid = "0x0002c90300001234";

// An opensm.conf as `opensm -c` writes one, shortened: many options, comments, blank lines.
constexpr const char* kOpensmConf =
    "#\n"
    "# DEVICE ATTRIBUTES OPTIONS\n"
    "#\n"
    "# The port GUID on which the OpenSM is running\n"
    "guid 0x0000000000000000\n"
    "\n"
    "# M_Key value sent to all ports qualifying all Set(PortInfo)\n"
    "m_key 0x0000000000000000\n"
    "\n"
    "# The lease period used for the M_Key on this subnet in [sec]\n"
    "m_key_lease_period 0\n"
    "\n"
    "# SM_Key value of the SM used for SM authentication\n"
    "sm_key 0x0000000000000001\n"
    "\n"
    "# Subnet prefix used on this subnet\n"
    "subnet_prefix 0xfe80000000000000\n"
    "\n"
    "# The LMC value used on this subnet\n"
    "lmc 0\n"
    "\n"
    "# SM priority used for deciding who is the master\n"
    "# Range goes from 0 (lowest priority) to 15 (highest).\n"
    "sm_priority 0\n"
    "\n"
    "# If TRUE causes OpenSM to specify max operational VLs\n"
    "force_link_speed 15\n"
    "\n"
    "#\n"
    "# SWEEP OPTIONS\n"
    "#\n"
    "# The number of seconds between subnet sweeps (0 disables it)\n"
    "sweep_interval 10\n"
    "\n"
    "# Routing engine\n"
    "routing_engine ftree,minhop\n"
    "\n"
    "# Log file to be used\n"
    "log_file /var/log/opensm.log\n"
    "\tlog_max_size 0\n";

// kOpensmConf with the two managed lines as the spec asks (priority 15 on mlx5_0 port 1).
std::string converged_conf() {
  std::string text = kOpensmConf;
  text.replace(text.find("guid 0x0000000000000000"), 23, std::string("guid ") + kLocalGuid);
  text.replace(text.find("sm_priority 0"), 13, "sm_priority 15");
  return text;
}

NodeSpec sm_spec(std::optional<bool> enabled, std::optional<int> priority, bool with_port = true) {
  NodeSpec spec;
  spec.subnet_manager.enabled = enabled;
  spec.subnet_manager.priority = priority;
  if (with_port) {
    Selector port;
    port.kind = Selector::Kind::kRdmaDevice;
    port.value = "mlx5_0";
    port.port = 1;
    spec.subnet_manager.port = port;
  }
  return spec;
}

// "field: current -> desired (status)" of every change of a report, for messages and checks.
std::vector<std::string> statuses(const Report& report) {
  std::vector<std::string> out;
  for (const Change& c : report.changes) {
    out.push_back(c.field + ": " + c.current.dump() + " -> " + c.desired.dump() + " (" +
                  change_status_name(c.status) + ")");
  }
  return out;
}

class SubnetManagerTest : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    // A fabric that never settles as asked (a sticky remote master) should cost the test little.
    auto reconciler = reconcilers::make_subnet_manager_reconciler(std::chrono::milliseconds(500));
    reconciler_ = reconciler.get();
    use_fixture("cx7-ib", std::move(reconciler));
    tree_.write(kConf, kOpensmConf);
    tree_.write("/etc/init.d/opensmd", "#!/bin/sh\n");  // what makes the host a DOCA-OFED OpenSM host
    // The fake tools' state, outside the --root tree.
    fake("root", tree_.root() + "\n");
    fake("opensm/layout", "doca\n");
    fake("units/opensmd.state", "disabled\n");
    fake("units/opensmd.active", "inactive\n");
    fake("sm/ports", std::string("mlx5_0 1 ") + kLocalGuid + " 18 ib\n");
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    set_path(test::source_path("tests/fake-tools") + ":" + saved_path_);
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
  }
  void TearDown() override {
    ::setenv("PATH", saved_path_.c_str(), 1);
    ::unsetenv("RDMACTL_FAKE_STATE");
  }

  static void set_path(const std::string& path) { ::setenv("PATH", path.c_str(), 1); }
  void fake(const std::string& file, const std::string& content) const { state_.write("/" + file, content); }
  std::vector<std::string> calls() const {
    std::vector<std::string> lines;
    std::istringstream in(state_.read("/calls.log"));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // Starts with OpenSM enabled and running with the given config values, as the fake systemctl
  // would after `enable --now`.
  void running_sm(int priority, const std::string& guid) {
    fake("units/opensmd.state", "enabled\n");
    fake("units/opensmd.active", "active\n");
    fake("sm/instances/" + guid, "18 " + guid + " " + std::to_string(priority) + "\n");
  }

  HostState observe_for(const NodeSpec* spec) {
    auto state = engine_->observe(*platform_, spec, "n");
    EXPECT_TRUE(state.has_value()) << state.error().to_string();
    return state.has_value() ? *state : HostState{};
  }
  DiffResult plan(const NodeSpec& spec) {
    DiffResult out;
    reconciler_->diff(spec, observe_for(&spec), out);
    return out;
  }
  // The whole Engine::apply: plan, apply in order, verify (with its retries), roll back on failure.
  Report apply(const NodeSpec& spec) { return engine_->apply(*platform_, spec, "n"); }

  Reconciler* reconciler_ = nullptr;
  test::TempTree state_;
  std::string saved_path_;
};

std::string messages(const std::vector<Error>& errors) {
  std::string out;
  for (const Error& e : errors) out += e.to_string() + "\n";
  return out;
}

size_t count_of(const std::vector<std::string>& lines, const std::string& line) {
  return static_cast<size_t>(std::count(lines.begin(), lines.end(), line));
}

TEST_F(SubnetManagerTest, ShowObservesTheServiceTheConfigAndTheMissingMaster) {
  const HostState state = observe_for(nullptr);
  const json& sm = state.subnet_manager;
  EXPECT_EQ(sm["local"], json::parse(R"({"layout": "doca", "service": "opensmd", "installed": true, "enabled": false,
      "active": false, "unitFileState": "disabled", "priority": 0, "priorityFrom": "/etc/opensm/opensm.conf sm_priority",
      "guid": "0x0000000000000000", "portFrom": "/etc/opensm/opensm.conf guid", "configFile": "/etc/opensm/opensm.conf",
      "configExists": true, "partitionsFile": "/etc/opensm/partitions.conf", "partitionsText": null, "partitions": null})"));
  EXPECT_TRUE(sm["master"].is_null());
  EXPECT_EQ(sm["masterReason"], "sminfo: query (asked through mlx5_0 port 1)");
  EXPECT_FALSE(sm.contains("missingTools"));
  // sminfo asks through the port OpenSM binds to (guid 0x0: the first active IB port).
  EXPECT_EQ(count_of(calls(), "sminfo -C mlx5_0 -P 1"), 1u);

  fake("sm/remote", std::string("ib 1 ") + kRemoteGuid + " 14\n");
  EXPECT_EQ(observe_for(nullptr).subnet_manager["master"],
            json::parse(R"({"lid": 1, "guid": "0x0002c90300001234", "priority": 14, "state": "SMINFO_MASTER"})"));
}

TEST_F(SubnetManagerTest, PlanListsExactlyTheChangesAndOnlyQueries) {
  const DiffResult d = plan(sm_spec(true, 15));
  ASSERT_TRUE(d.errors.empty()) << messages(d.errors);
  ASSERT_EQ(d.changes.size(), 3u);
  EXPECT_EQ(to_json(d.changes[0]).dump(),
            R"({"current":0,"desired":15,"disruptive":false,"field":"priority","reconciler":"subnet_manager",)"
            R"("requires":null,"resource":"subnet-manager","status":"planned",)"
            R"("via":"/etc/opensm/opensm.conf sm_priority"})");
  EXPECT_EQ(d.changes[1].field, "port");
  EXPECT_EQ(d.changes[1].current, "0x0000000000000000");
  EXPECT_EQ(d.changes[1].desired, kLocalGuid);
  EXPECT_EQ(d.changes[2].field, "enabled");
  EXPECT_EQ(d.changes[2].current, false);
  EXPECT_EQ(d.changes[2].desired, true);
  EXPECT_TRUE(d.changes[2].disruptive);
  for (const std::string& call : calls()) {
    EXPECT_TRUE(call.rfind("systemctl is-", 0) == 0 || call.rfind("sminfo ", 0) == 0) << call;
  }
  EXPECT_EQ(tree_.read(kConf), kOpensmConf);
}

TEST_F(SubnetManagerTest, ApplyConvergesAndASecondApplyWritesNothing) {
  std::filesystem::permissions(tree_.root() + kConf,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const NodeSpec spec = sm_spec(true, 15);
  const Report first = apply(spec);
  ASSERT_TRUE(first.errors.empty()) << messages(first.errors);
  EXPECT_EQ(statuses(first), (std::vector<std::string>{R"(priority: 0 -> 15 (applied))",
                                                       R"(port: "0x0000000000000000" -> "0x946dae0300f14a20" (applied))",
                                                       R"(enabled: false -> true (applied))"}));
  EXPECT_FALSE(first.rolled_back);
  EXPECT_FALSE(first.has_failures());

  EXPECT_EQ(tree_.read(kConf), converged_conf()) << "only the guid and sm_priority lines change";
  EXPECT_EQ(std::filesystem::status(tree_.root() + kConf).permissions() & std::filesystem::perms::mask,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
      << "the file's mode is kept";
  EXPECT_EQ(state_.read("/units/opensmd.state"), "enabled\n");
  EXPECT_EQ(state_.read("/units/opensmd.active"), "active\n");
  const auto log = calls();
  EXPECT_EQ(count_of(log, "systemctl enable --now opensmd"), 1u);
  // OpenSM was stopped: enable --now starts it with the new file, no restart is needed.
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](const std::string& l) { return l.find("restart") != l.npos; }), 0);
  const HostState after = observe_for(&spec);
  EXPECT_EQ(after.subnet_manager["master"]["guid"], kLocalGuid);
  EXPECT_EQ(after.subnet_manager["master"]["priority"], 15);

  const auto mtime = std::filesystem::last_write_time(tree_.root() + kConf);
  const size_t calls_before = calls().size();
  const Report second = apply(spec);
  EXPECT_TRUE(second.changes.empty()) << testing::PrintToString(statuses(second));
  EXPECT_TRUE(second.errors.empty()) << messages(second.errors);
  EXPECT_EQ(std::filesystem::last_write_time(tree_.root() + kConf), mtime);
  const auto again = calls();
  ASSERT_GT(again.size(), calls_before) << "the second apply observes";
  for (size_t i = calls_before; i < again.size(); ++i) {
    EXPECT_TRUE(again[i].rfind("systemctl is-", 0) == 0 || again[i].rfind("sminfo ", 0) == 0) << again[i];
  }
}

TEST_F(SubnetManagerTest, ConfigChangesWhileRunningRestartOpensmOnce) {
  running_sm(0, kLocalGuid);
  const Report report = apply(sm_spec(true, 15));
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  // priority and port; the service is already enabled and running.
  EXPECT_EQ(statuses(report), (std::vector<std::string>{R"(priority: 0 -> 15 (applied))",
                                                        R"(port: "0x0000000000000000" -> "0x946dae0300f14a20" (applied))"}));
  EXPECT_FALSE(report.rolled_back);
  EXPECT_EQ(count_of(calls(), "systemctl restart opensmd"), 1u);
  // The fake daemon reads its file when it starts: priority 15 in sminfo shows the restart came
  // after both lines were written.
  EXPECT_EQ(observe_for(nullptr).subnet_manager["master"]["priority"], 15);
}

TEST_F(SubnetManagerTest, DisablingLeavesTheConfigAndNeedsAMasterElsewhere) {
  running_sm(15, kLocalGuid);
  tree_.write(kConf, converged_conf());
  fake("sm/remote", std::string("ib 1 ") + kRemoteGuid + " 10\n");
  const Report report = apply(sm_spec(false, std::nullopt, false));
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  EXPECT_EQ(statuses(report), std::vector<std::string>{"enabled: true -> false (applied)"});
  EXPECT_FALSE(report.rolled_back);
  EXPECT_EQ(count_of(calls(), "systemctl disable --now opensmd"), 1u);
  EXPECT_EQ(state_.read("/units/opensmd.state"), "disabled\n");
  EXPECT_EQ(state_.read("/units/opensmd.active"), "inactive\n");
  EXPECT_EQ(tree_.read(kConf), converged_conf());
  EXPECT_EQ(observe_for(nullptr).subnet_manager["master"]["guid"], kRemoteGuid);

  // With no SM left on the fabric the spec is not met: no node would manage the subnet.
  std::filesystem::remove(state_.root() + "/sm/remote");
  const DiffResult none = plan(sm_spec(false, std::nullopt, false));
  EXPECT_TRUE(none.changes.empty());
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_EQ(none.errors[0].kind, ErrorKind::kVerification);
  EXPECT_NE(none.errors[0].message.find("no subnet manager is master"), std::string::npos) << none.errors[0].message;
}

TEST_F(SubnetManagerTest, AHigherPriorityRemoteMasterIsFineForALowerPriorityLocalSm) {
  fake("sm/remote", std::string("ib 1 ") + kRemoteGuid + " 15\n");
  const Report report = apply(sm_spec(true, 10));
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  EXPECT_EQ(report.count(ChangeStatus::kApplied), 3u) << testing::PrintToString(statuses(report));
  EXPECT_FALSE(report.rolled_back);
  EXPECT_EQ(observe_for(nullptr).subnet_manager["master"]["guid"], kRemoteGuid);

  // Equal priority: the lower GUID (the remote's) wins the election, so the local SM is standby.
  const Report equal = apply(sm_spec(true, 15));
  EXPECT_TRUE(equal.errors.empty()) << messages(equal.errors);
  EXPECT_EQ(statuses(equal), std::vector<std::string>{"priority: 10 -> 15 (applied)"});
  EXPECT_FALSE(equal.rolled_back);
  EXPECT_EQ(observe_for(nullptr).subnet_manager["master"]["guid"], kRemoteGuid);
}

TEST_F(SubnetManagerTest, AnElectionThatVerifyRejectsIsRolledBack) {
  // A remote SM with a lower priority that keeps mastership: the local configuration takes, but
  // this node's SM never becomes master, so verify fails and the engine undoes everything.
  fake("sm/remote", std::string("ib 1 ") + kRemoteGuid + " 14 sticky\n");
  const Report report = apply(sm_spec(true, 15));
  ASSERT_EQ(report.errors.size(), 1u) << messages(report.errors);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kVerification);
  EXPECT_EQ(report.errors[0].message,
            "this node's OpenSM (priority 15, port 0x946dae0300f14a20) should be master, but sminfo reports "
            "master 0x0002c90300001234 with priority 14 at lid 1");
  EXPECT_EQ(report.errors[0].where, "subnetManager");
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures());
  EXPECT_EQ(statuses(report), (std::vector<std::string>{R"(priority: 0 -> 15 (rolled-back))",
                                                        R"(port: "0x0000000000000000" -> "0x946dae0300f14a20" (rolled-back))",
                                                        R"(enabled: false -> true (rolled-back))"}));
  EXPECT_EQ(tree_.read(kConf), kOpensmConf) << "opensm.conf back to its bytes";
  EXPECT_EQ(state_.read("/units/opensmd.state"), "disabled\n");
  EXPECT_EQ(state_.read("/units/opensmd.active"), "inactive\n");
  const auto log = calls();
  EXPECT_EQ(count_of(log, "systemctl enable --now opensmd"), 1u);
  EXPECT_EQ(count_of(log, "systemctl disable --now opensmd"), 1u);
  // Once stopped, OpenSM reads the restored file when it next starts: no restart on the way back.
  EXPECT_EQ(count_of(log, "systemctl restart opensmd"), 0u);
}

TEST_F(SubnetManagerTest, AMissingConfigFileIsCreatedWithTheManagedLinesOnly) {
  std::filesystem::remove(tree_.root() + kConf);
  const HostState state = observe_for(nullptr);
  EXPECT_EQ(state.subnet_manager["local"]["configExists"], false);
  EXPECT_TRUE(state.subnet_manager["local"]["priority"].is_null());

  const Report report = apply(sm_spec(true, 15));
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  EXPECT_EQ(statuses(report), (std::vector<std::string>{R"(priority: null -> 15 (applied))",
                                                        R"(port: null -> "0x946dae0300f14a20" (applied))",
                                                        R"(enabled: false -> true (applied))"}));
  EXPECT_EQ(tree_.read(kConf), std::string("sm_priority 15\nguid ") + kLocalGuid + "\n");
}

TEST_F(SubnetManagerTest, AFailedStartIsRevertedToTheSameBytes) {
  std::string conf = kOpensmConf;
  conf.erase(conf.find("sm_priority 0\n"), 14);  // no sm_priority line: apply appends one
  tree_.write(kConf, conf);
  fake("units/opensmd.fail-start", "");
  const Report report = apply(sm_spec(true, 15));
  EXPECT_TRUE(report.errors.empty()) << messages(report.errors);
  ASSERT_EQ(report.changes.size(), 3u);
  EXPECT_EQ(statuses(report), (std::vector<std::string>{R"(priority: null -> 15 (rolled-back))",
                                                        R"(port: "0x0000000000000000" -> "0x946dae0300f14a20" (rolled-back))",
                                                        R"(enabled: false -> true (failed))"}));
  const std::string& error = report.changes[2].error;
  EXPECT_EQ(error.rfind("subnet-manager: systemctl enable --now opensmd exited with 1: ", 0), 0u) << error;
  EXPECT_NE(error.find("Job for opensmd.service failed"), std::string::npos) << error;
  EXPECT_EQ(error.find("rollback"), std::string::npos) << "the rollback itself went well: " << error;
  EXPECT_TRUE(report.rolled_back);
  EXPECT_TRUE(report.has_failures());
  // The appended sm_priority line is removed again: the same bytes, not an equivalent file.
  EXPECT_EQ(tree_.read(kConf), conf);
  // `enable --now` enabled the unit before its start failed: the rollback disables it again.
  EXPECT_EQ(state_.read("/units/opensmd.state"), "disabled\n");
  EXPECT_EQ(state_.read("/units/opensmd.active"), "inactive\n");
  EXPECT_EQ(count_of(calls(), "systemctl disable --now opensmd"), 1u);
}

// subnetManager.partitions: partitions.conf where OpenSM reads it, its definitions the spec's, its
// comments kept, OpenSM restarted once after the last config write, and what a revert puts back.
constexpr const char* kPartitions = "/etc/opensm/partitions.conf";
constexpr const char* kPartitionsHeader =
    "# partitions.conf: kept by the site's change process\n"
    "# (see man opensm, PARTITION CONFIGURATION)\n";

std::vector<PartitionSpec> default_and_storage() {
  PartitionSpec standard;
  standard.name = "Default";
  standard.pkey = 0x7fff;
  standard.ipoib = true;
  standard.mtu = 4096;
  standard.members = {{"ALL", "full"}};
  PartitionSpec storage;
  storage.name = "storage";
  storage.pkey = 0x0a12;
  storage.rate = 200;
  storage.members = {{"ALL_SWITCHES", "full"}, {kRemoteGuid, "both"}, {"SELF", "limited"}};
  return {standard, storage};
}

TEST_F(SubnetManagerTest, PartitionsBecomeTheFilesDefinitionsWithItsCommentsAndOneRestart) {
  running_sm(15, kLocalGuid);
  tree_.write(kConf, converged_conf());
  tree_.write(kPartitions, std::string(kPartitionsHeader) + "Default=0x7fff, ipoib : ALL=full;\n");
  NodeSpec spec = sm_spec(true, 14);
  spec.subnet_manager.partitions = default_and_storage();
  const Report report = apply(spec);
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  EXPECT_EQ(statuses(report),
            (std::vector<std::string>{
                R"(priority: 15 -> 14 (applied))",
                R"(partitions: ["Default=0x7fff, ipoib : ALL=full;"] -> ["Default=0x7fff, ipoib, mtu=5 : ALL=full;",)"
                R"("storage=0x0a12, rate=17 : ALL_SWITCHES=full, 0x0002c90300001234=both, SELF=limited;"] (applied))"}));
  EXPECT_FALSE(report.rolled_back);
  // Default's definition is rewritten where it stands; storage, new, is appended.
  EXPECT_EQ(tree_.read(kPartitions), std::string(kPartitionsHeader) +
                                         "Default=0x7fff, ipoib, mtu=5 : ALL=full;\n"
                                         "storage=0x0a12, rate=17 : ALL_SWITCHES=full, 0x0002c90300001234=both, SELF=limited;\n");
  EXPECT_EQ(count_of(calls(), "systemctl restart opensmd"), 1u) << "once, after the last of priority and partitions";
  const std::string written = tree_.read(kPartitions);
  const Report second = apply(spec);
  EXPECT_TRUE(second.changes.empty()) << testing::PrintToString(statuses(second));
  EXPECT_EQ(tree_.read(kPartitions), written);
}

TEST_F(SubnetManagerTest, PartitionsGoWhereOpensmConfSaysAndAFileRdmactlMadeIsRemovedOnRevert) {
  tree_.write(kConf, std::string(kOpensmConf) + "partition_config_file /etc/opensm/site-partitions.conf\n");
  NodeSpec spec = sm_spec(std::nullopt, std::nullopt, false);
  spec.subnet_manager.partitions = default_and_storage();
  const DiffResult d = plan(spec);
  ASSERT_TRUE(d.errors.empty()) << messages(d.errors);
  ASSERT_EQ(d.changes.size(), 1u);
  const Change& change = d.changes[0];
  EXPECT_EQ(change.via, "/etc/opensm/site-partitions.conf");
  EXPECT_TRUE(change.current.is_null()) << "no file: OpenSM runs its default partition";
  const HostState state = observe_for(&spec);
  ASSERT_TRUE(reconciler_->apply(*platform_, state, change).has_value());
  EXPECT_TRUE(std::filesystem::exists(tree_.root() + "/etc/opensm/site-partitions.conf"));
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + kPartitions));
  ASSERT_TRUE(reconciler_->apply(*platform_, state, change.reverted()).has_value());
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + "/etc/opensm/site-partitions.conf")) << "the revert of a file rdmactl made removes it";
}

TEST_F(SubnetManagerTest, AFileOpensmWouldDropIsSaidAndItsRevertPutsTheSameBytesBack) {
  // "all" is no keyword (they are upper case): OpenSM reads it as a GUID, fails, and drops the file.
  const std::string broken = "Default=0x7fff, ipoib : all=full;\n";
  tree_.write(kPartitions, broken);
  NodeSpec spec = sm_spec(std::nullopt, std::nullopt, false);
  spec.subnet_manager.partitions = default_and_storage();
  const DiffResult d = plan(spec);
  ASSERT_EQ(d.changes.size(), 1u) << messages(d.errors);
  EXPECT_EQ(d.changes[0].current, broken) << "the file as it is: what a revert writes back";
  EXPECT_NE(d.changes[0].note.find("/etc/opensm/partitions.conf:1: "), std::string::npos) << d.changes[0].note;
  EXPECT_NE(d.changes[0].note.find("OpenSM drops the whole file"), std::string::npos) << d.changes[0].note;
  const HostState state = observe_for(&spec);
  ASSERT_TRUE(reconciler_->apply(*platform_, state, d.changes[0]).has_value());
  EXPECT_NE(tree_.read(kPartitions), broken);
  ASSERT_TRUE(reconciler_->apply(*platform_, state, d.changes[0].reverted()).has_value());
  EXPECT_EQ(tree_.read(kPartitions), broken);
}

// An mgid that is no multicast GID starts with "PARSE ERROR" too, but OpenSM skips only that
// group (osm_prtn_config.c mgroup_create returns 0) and keeps the file.
TEST_F(SubnetManagerTest, ANonMulticastMgidIsSaidAsTheGroupSkippedNotTheFileDropped) {
  const std::string file = "Default=0x7fff, ipoib : ALL=full;\nstorage=0x8001 : mgid=zz, sl=1;\n";
  tree_.write(kPartitions, file);
  NodeSpec spec = sm_spec(std::nullopt, std::nullopt, false);
  spec.subnet_manager.partitions = default_and_storage();
  const DiffResult d = plan(spec);
  ASSERT_EQ(d.changes.size(), 1u) << messages(d.errors);
  EXPECT_NE(d.changes[0].note.find("gid is not multicast"), std::string::npos) << d.changes[0].note;
  EXPECT_NE(d.changes[0].note.find("OpenSM skips that multicast group"), std::string::npos) << d.changes[0].note;
  EXPECT_EQ(d.changes[0].note.find("drops the whole file"), std::string::npos) << d.changes[0].note;
}

TEST_F(SubnetManagerTest, WhereTheSmIsDisabledPartitionsAreNotWritten) {
  NodeSpec spec = sm_spec(false, std::nullopt, false);
  spec.subnet_manager.partitions = default_and_storage();
  const DiffResult d = plan(spec);
  for (const Change& c : d.changes) EXPECT_NE(c.field, "partitions");
  EXPECT_FALSE(std::filesystem::exists(tree_.root() + kPartitions));
}

TEST_F(SubnetManagerTest, WithoutADefaultPartitionThePlanSaysWhatOpensmDoes) {
  NodeSpec spec = sm_spec(std::nullopt, std::nullopt, false);
  spec.subnet_manager.partitions = std::vector<PartitionSpec>{default_and_storage()[1]};
  const DiffResult d = plan(spec);
  ASSERT_EQ(d.changes.size(), 1u) << messages(d.errors);
  EXPECT_NE(d.changes[0].note.find("0x7fff"), std::string::npos) << d.changes[0].note;
}

TEST_F(SubnetManagerTest, MissingToolsLeaveShowWorkingAndNameThePackages) {
  test::TempTree empty_path;
  set_path(empty_path.root());
  const HostState state = observe_for(nullptr);
  const json& sm = state.subnet_manager;
  EXPECT_EQ(sm["local"]["priority"], 0) << "the config file is still read";
  EXPECT_TRUE(sm["local"]["enabled"].is_null());
  EXPECT_EQ(sm["local"]["unknown"]["enabled"], "systemctl was not found in PATH (Debian package systemd)");
  EXPECT_EQ(sm["masterReason"], "sminfo was not found in PATH (Debian package infiniband-diags)");
  EXPECT_EQ(sm["missingTools"], json::parse(R"({"systemctl": "systemd", "sminfo": "infiniband-diags"})"));

  const DiffResult d = plan(sm_spec(true, 15));
  EXPECT_TRUE(d.changes.empty());
  ASSERT_EQ(d.errors.size(), 2u) << messages(d.errors);
  EXPECT_NE(d.errors[0].message.find("install the Debian package infiniband-diags"), std::string::npos);
  EXPECT_NE(d.errors[1].message.find("install the Debian package systemd"), std::string::npos);

  // A spec that leaves the SM alone runs neither tool and plans nothing here.
  const DiffResult unrelated = plan(NodeSpec{});
  EXPECT_TRUE(unrelated.changes.empty());
  EXPECT_TRUE(unrelated.errors.empty());
}

TEST_F(SubnetManagerTest, OpensmNotInstalledNamesThePackage) {
  // The init script is there but systemd knows no such unit.
  std::filesystem::remove(state_.root() + "/units/opensmd.state");
  EXPECT_EQ(observe_for(nullptr).subnet_manager["local"]["installed"], false);
  const DiffResult unknown = plan(sm_spec(true, 15));
  ASSERT_EQ(unknown.errors.size(), 1u) << messages(unknown.errors);
  EXPECT_NE(unknown.errors[0].message.find("systemd knows no opensmd service"), std::string::npos)
      << unknown.errors[0].message;
  // No OpenSM package at all: no layout.
  std::filesystem::remove(tree_.root() + "/etc/init.d/opensmd");
  std::filesystem::remove(tree_.root() + kConf);
  EXPECT_TRUE(observe_for(nullptr).subnet_manager["local"]["layout"].is_null());
  const DiffResult d = plan(sm_spec(true, 15));
  ASSERT_EQ(d.errors.size(), 1u) << messages(d.errors);
  EXPECT_NE(d.errors[0].message.find("OpenSM is not installed"), std::string::npos) << d.errors[0].message;
  EXPECT_NE(d.errors[0].message.find("apt install opensm"), std::string::npos) << d.errors[0].message;
  // Disabled is what a host without OpenSM already is.
  fake("sm/remote", std::string("ib 1 ") + kRemoteGuid + " 15\n");
  const DiffResult off = plan(sm_spec(false, std::nullopt, false));
  EXPECT_TRUE(off.changes.empty());
  EXPECT_TRUE(off.errors.empty()) << messages(off.errors);
}

TEST_F(SubnetManagerTest, AMaskedUnitIsAnErrorNamingIt) {
  fake("units/opensmd.state", "masked\n");
  const DiffResult d = plan(sm_spec(true, 15));
  ASSERT_EQ(d.errors.size(), 1u) << messages(d.errors);
  EXPECT_EQ(d.errors[0].message,
            "opensmd.service is masked: systemd refuses to start or enable it; `systemctl unmask opensmd.service` "
            "if the subnet manager should run here");
  EXPECT_TRUE(d.changes.empty());
}

TEST_F(SubnetManagerTest, APortThatIsNotInfinibandOrNotThereIsAnError) {
  NodeSpec spec = sm_spec(true, 15);
  spec.subnet_manager.port->port = 2;
  const DiffResult d = plan(spec);
  ASSERT_EQ(d.errors.size(), 1u) << messages(d.errors);
  EXPECT_EQ(d.errors[0].where, "subnetManager.port (rdmaDevice mlx5_0 port 2)");
  EXPECT_NE(d.errors[0].message.find("has no port 2"), std::string::npos) << d.errors[0].message;
}

}  // namespace reconcilers_subnet_manager_test
}  // namespace rdmactl
