// SPDX-License-Identifier: Apache-2.0
// The sysctl reconciler against a /proc/sys tree under --root: observe, diff, apply, converge; and
// its scope: net.* keys, per network namespace under --netns, others only by the host's
// /etc/rdmactl/sysctl-allow, keys with '/' as sysctl(8) reads them.
#include "reconcilers/sysctl/sysctl.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "agent/engine/engine.h"
#include "reconcilers/sysctl/scope.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace reconcilers_sysctl_test {

using reconcilers::SysctlOptions;

TEST(SysctlPath, FollowsSysctl8ForDotsAndSlashes) {
  EXPECT_EQ(reconcilers::sysctl_path("net.ipv4.tcp_ecn"), "/proc/sys/net/ipv4/tcp_ecn");
  // procps slashdot(): after a '.', a '/' stands for a '.' inside a name (a VLAN netdev eth0.100).
  EXPECT_EQ(reconcilers::sysctl_path("net.ipv4.conf.eth0/100.rp_filter"), "/proc/sys/net/ipv4/conf/eth0.100/rp_filter");
  // A key whose first separator is '/' is a path already.
  EXPECT_EQ(reconcilers::sysctl_path("net/ipv4/conf/eth0.100/rp_filter"), "/proc/sys/net/ipv4/conf/eth0.100/rp_filter");
  // Names that would leave the directory resolve to nothing.
  EXPECT_EQ(reconcilers::sysctl_path("net.//.kernel.core_pattern"), "");
  EXPECT_EQ(reconcilers::sysctl_path("net/../kernel/core_pattern"), "");
  EXPECT_EQ(reconcilers::sysctl_path("net..ipv4"), "");
  EXPECT_EQ(reconcilers::sysctl_path("net.ipv4."), "");
}

TEST(SysctlAllowList, OneKeyOrGlobALineWithComments) {
  const auto list = reconcilers::parse_sysctl_allow_list(
      "# what the spec may set besides net.*\n"
      "vm.swappiness\n"
      "  kernel.sched_*   # the scheduler's knobs\n"
      "\n"
      "vm.dirty ratio\n"
      "fs.file-max\r\n");
  EXPECT_EQ(list.patterns, (std::vector<std::string>{"vm.swappiness", "kernel.sched_*", "fs.file-max"}));
  EXPECT_EQ(list.ignored, std::vector<std::string>{"line 5: \"vm.dirty ratio\" is not a sysctl key or glob"});
  EXPECT_TRUE(list.unusable.empty());
}

// From the kernel's registration of each table (see global_net_key_reason).
TEST(SysctlScopeNetns, KeysOfTheWholeHostAreNotPerNamespace) {
  using reconcilers::global_net_key_reason;
  using reconcilers::sysctl_key_names;
  const auto global = [](const std::string& key) { return global_net_key_reason(*sysctl_key_names(key)).has_value(); };
  EXPECT_TRUE(global("net.core.rmem_max"));
  EXPECT_TRUE(global("net.core.netdev_max_backlog"));
  EXPECT_TRUE(global("net.ipv4.tcp_mem"));
  EXPECT_TRUE(global("net.ipv4.udp_mem"));
  EXPECT_TRUE(global("net.ipv4.tcp_allowed_congestion_control"));
  EXPECT_TRUE(global("net.ipv4.route.gc_thresh"));
  EXPECT_TRUE(global("net.ipv4.neigh.default.gc_thresh3"));
  EXPECT_TRUE(global("net.ipv6.neigh.default.gc_thresh1"));
  EXPECT_TRUE(global("net.ipv6.mld_max_msf"));
  EXPECT_TRUE(global("net.netfilter.nf_conntrack_max"));
  EXPECT_TRUE(global("net.nf_conntrack_max"));
  EXPECT_TRUE(global("net.rds.ib.max_send_wr"));
  // Per namespace: netns_core_table, xfrm, ipv4_net_table, devinet, per-netdev neigh, ipv6.
  EXPECT_FALSE(global("net.core.somaxconn"));
  EXPECT_FALSE(global("net.core.xfrm_larval_drop"));
  EXPECT_FALSE(global("net.ipv4.tcp_ecn"));
  EXPECT_FALSE(global("net.ipv4.tcp_rmem"));
  EXPECT_FALSE(global("net.ipv4.ip_local_port_range"));
  EXPECT_FALSE(global("net.ipv4.conf.all.arp_ignore"));
  EXPECT_FALSE(global("net.ipv4.conf.eth0/5.rp_filter"));
  EXPECT_FALSE(global("net.ipv4.neigh.eth0.base_reachable_time_ms"));
  EXPECT_FALSE(global("net.ipv4.route.min_pmtu"));
  EXPECT_FALSE(global("net.ipv6.conf.all.disable_ipv6"));
  EXPECT_FALSE(global("kernel.core_pattern"));  // not net.*: the scope refuses it for that
}

TEST(SysctlScopeNetns, TheVerdictFollowsTheKernelsNamespaceInodes) {
  using reconcilers::netns_verdict;
  using reconcilers::NetnsFacts;
  // Linux 6.18: the initial namespace's inode is PROC_NET_INIT_INO whatever PID 1 shows.
  EXPECT_EQ(netns_verdict(NetnsFacts{0xEFFFFFF9, std::nullopt, "denied", 6, 18}).value(), false);
  EXPECT_EQ(netns_verdict(NetnsFacts{0xF0000123, std::nullopt, "denied", 6, 18}).value(), true);
  EXPECT_EQ(netns_verdict(NetnsFacts{0xF0000123, std::nullopt, "denied", 7, 0}).value(), true);
  // Before: only PID 1's namespace tells.
  EXPECT_EQ(netns_verdict(NetnsFacts{4026531992, true, "", 6, 1}).value(), false);
  EXPECT_EQ(netns_verdict(NetnsFacts{4026532300, false, "", 6, 1}).value(), true);
  const auto unknown =
      netns_verdict(NetnsFacts{4026531992, std::nullopt, "stat /proc/1/ns/net: Permission denied", 6, 1});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().message,
            "Linux before 6.18 numbers the initial network namespace like any other, and /proc/1/ns/net, which would "
            "tell, cannot be read: stat /proc/1/ns/net: Permission denied");
}

class SysctlTest : public ::testing::Test {
 protected:
  SysctlTest() {
    tree_.write("/proc/sys/net/ipv4/tcp_ecn", "2\n");
    tree_.write("/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
    tree_.write("/proc/sys/net/core/rmem_max", "212992\n");
    tree_.write("/proc/sys/net/core/somaxconn", "4096\n");
    tree_.write("/proc/sys/net/ipv4/conf/eth0.5/rp_filter", "0\n");
    tree_.write("/proc/sys/kernel/core_pattern", "core\n");
    tree_.write("/proc/sys/vm/swappiness", "60\n");
    use_engine(SysctlOptions{false});
  }

  void use_engine(SysctlOptions options) {
    ReconcilerTable table;
    table.push_back(reconcilers::make_sysctl_reconciler(options));
    engine_ = std::make_unique<Engine>(std::move(table));
    engine_->set_verify_delay(std::chrono::milliseconds(1));
  }

  // The spec's defaults with these sysctl lines, loaded so that each key has its file:line.
  static NodeSpec spec_with(const std::string& sysctl_lines) {
    auto spec = load_spec_text(
        "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\ndefaults:\n  sysctl:\n" + sysctl_lines,
        "fabric.yaml");
    EXPECT_TRUE(spec.has_value()) << (spec ? "" : spec.error().to_string());
    return spec ? spec->defaults : NodeSpec{};
  }

  void allow(const std::string& text, std::filesystem::perms perms = std::filesystem::perms::owner_read |
                                                                     std::filesystem::perms::owner_write |
                                                                     std::filesystem::perms::group_read |
                                                                     std::filesystem::perms::others_read) {
    tree_.write(reconcilers::kSysctlAllowListPath, text);
    std::filesystem::permissions(tree_.root() + reconcilers::kSysctlAllowListPath, perms);
  }

  test::TempTree tree_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(SysctlTest, ObservesSpecKeysWithWhitespaceFolded) {
  std::filesystem::remove(tree_.root() + "/proc/sys/net/core/rmem_max");
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.ipv4.tcp_rmem", "4096 131072 6291456"}};
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  EXPECT_EQ(state->sysctl.at("net.ipv4.tcp_rmem"), "4096 131072 6291456");
  EXPECT_EQ(state->sysctl.at("net.ipv4.tcp_ecn"), "2");  // a default key that exists here
  EXPECT_EQ(state->sysctl.count("net.core.rmem_max"), 0u) << "absent keys are left out";
  EXPECT_TRUE(engine_->plan(spec, *state).changes.empty());
}

TEST_F(SysctlTest, AppliesConvergesAndASecondPlanIsEmpty) {
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.ipv4.tcp_ecn", "1"}};
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].resource, "sysctl/net.ipv4.tcp_ecn");
  EXPECT_EQ(report.changes[0].current, "2");
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kApplied);
  EXPECT_EQ(tree_.read("/proc/sys/net/ipv4/tcp_ecn"), "1");
  auto again = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(engine_->plan(spec, *again).changes.empty());
}

TEST_F(SysctlTest, AKeyTheKernelLacksIsAnErrorNamingThePath) {
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    net.ipv4.tcp_nope: \"1\"\n");
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].message,
            "sysctl net.ipv4.tcp_nope does not exist on this host (no /proc/sys/net/ipv4/tcp_nope)");
  EXPECT_EQ(report.errors[0].where, "fabric.yaml:7:5 defaults.sysctl.net.ipv4.tcp_nope");
  EXPECT_TRUE(report.changes.empty());
}

TEST_F(SysctlTest, AWriteTheKernelRefusesRollsBackTheOthers) {
  // kernel.osrelease is read-only even for root (EACCES), as some net sysctls are.
  tree_.symlink("/proc/sys/kernel/osrelease", "/proc/sys/net/ipv4/zz_readonly");
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.core.rmem_max", "16777216"}, {"net.ipv4.zz_readonly", "1"}};
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.changes.size(), 2u) << (report.errors.empty() ? "" : report.errors[0].to_string());
  EXPECT_EQ(report.changes[0].status, ChangeStatus::kRolledBack);
  EXPECT_EQ(report.changes[1].status, ChangeStatus::kFailed);
  EXPECT_EQ(tree_.read("/proc/sys/net/core/rmem_max"), "212992");
}

TEST_F(SysctlTest, AKeyOutsideNetIsAPlanErrorAndIsNeitherReadNorWritten) {
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    net.ipv4.tcp_ecn: 1\n    kernel.core_pattern: \"|/tmp/x %p\"\n");
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sysctl.count("kernel.core_pattern"), 0u) << "a key outside the scope is not even read";
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(report.errors[0].to_string(),
            "fabric.yaml:8:5 defaults.sysctl.kernel.core_pattern: sysctl kernel.core_pattern is outside what "
            "rdmactl may change: it sets net.* keys, and other keys only where the host's "
            "/etc/rdmactl/sysctl-allow lists them (one key or glob a line); to allow this one, add the line "
            "\"kernel.core_pattern\" to that file");
  // The plan had an error: nothing at all was written, net.* keys included.
  EXPECT_EQ(tree_.read("/proc/sys/kernel/core_pattern"), "core\n");
  EXPECT_EQ(tree_.read("/proc/sys/net/ipv4/tcp_ecn"), "2\n");
}

TEST_F(SysctlTest, TheAllowListAddsKeysAndGlobs) {
  allow("# rdmactl may set these besides net.*\nvm.swappiness\nkernel.sched_* # globs too\n");
  tree_.write("/proc/sys/kernel/sched_autogroup_enabled", "1\n");
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    vm.swappiness: 10\n    kernel.sched_autogroup_enabled: 0\n");
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  ASSERT_EQ(report.changes.size(), 2u);
  EXPECT_EQ(tree_.read("/proc/sys/vm/swappiness"), "10");
  EXPECT_EQ(tree_.read("/proc/sys/kernel/sched_autogroup_enabled"), "0");

  // What the list does not name stays outside.
  const NodeSpec other = spec_with("    kernel.core_pattern: x\n");
  Report refused = engine_->apply(platform, other, "n");
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].message.find("is outside what rdmactl may change"), std::string::npos);
  EXPECT_EQ(tree_.read("/proc/sys/kernel/core_pattern"), "core\n");
}

TEST_F(SysctlTest, AnAllowListOthersCanWriteIsNotUsed) {
  using std::filesystem::perms;
  allow("kernel.core_pattern\n", perms::owner_read | perms::owner_write | perms::group_read | perms::group_write |
                                     perms::others_read);
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    kernel.core_pattern: x\n");
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].message,
            "sysctl kernel.core_pattern is outside what rdmactl may change: it sets net.* keys, and other keys only "
            "where the host's /etc/rdmactl/sysctl-allow lists them (one key or glob a line); to allow this one, add "
            "the line \"kernel.core_pattern\" to that file (the file is not used now: it is writable by group or "
            "others (mode 0664))");
  EXPECT_EQ(tree_.read("/proc/sys/kernel/core_pattern"), "core\n");
}

TEST_F(SysctlTest, AnAllowListThatIsAFifoIsNotReadAndNotUsed) {
  const std::string fifo = tree_.root() + reconcilers::kSysctlAllowListPath;
  std::filesystem::create_directories(std::filesystem::path(fifo).parent_path());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto list = reconcilers::load_sysctl_allow_list(HostFs(tree_.root()));
  EXPECT_TRUE(list.patterns.empty());
  EXPECT_EQ(list.unusable, "it is a FIFO, not a regular file");
}

TEST_F(SysctlTest, UnderNetnsOnlyPerNamespaceKeysAreSet) {
  use_engine(SysctlOptions{true});
  allow("kernel.core_pattern\n");  // the allow-list cannot reach outside the namespace either
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with(
      "    net.ipv4.tcp_ecn: 1\n"
      "    net.core.somaxconn: 8192\n"
      "    net.core.rmem_max: 16777216\n"
      "    kernel.core_pattern: x\n");
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sysctl.count("net.core.rmem_max"), 0u) << "a key of the whole host is not read in a namespace";
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_EQ(report.errors[1].to_string(),
            "fabric.yaml:9:5 defaults.sysctl.net.core.rmem_max: sysctl net.core.rmem_max is not per network "
            "namespace (net/core/sysctl_net_core.c: read-only outside the initial namespace (sysctl_core_net_init; "
            "kernels before netns_core_table listed it register it for the initial namespace only)): in a "
            "network namespace (--netns) rdmactl does not set it; set it from the host's own namespace");
  EXPECT_EQ(report.errors[0].to_string(),
            "fabric.yaml:10:5 defaults.sysctl.kernel.core_pattern: sysctl kernel.core_pattern is not per network "
            "namespace: it is the whole host's, and in a network namespace (--netns) rdmactl sets only keys the "
            "kernel keeps per namespace; set it from the host's own namespace, where /etc/rdmactl/sysctl-allow "
            "decides");
  EXPECT_EQ(tree_.read("/proc/sys/net/core/rmem_max"), "212992\n");

  // Without the refused keys, the per-namespace ones converge.
  const NodeSpec netns_only = spec_with("    net.ipv4.tcp_ecn: 1\n    net.core.somaxconn: 8192\n");
  Report applied = engine_->apply(platform, netns_only, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(tree_.read("/proc/sys/net/ipv4/tcp_ecn"), "1");
  EXPECT_EQ(tree_.read("/proc/sys/net/core/somaxconn"), "8192");
}

TEST_F(SysctlTest, AKeyWithASlashNamesANetdevWithADot) {
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    net.ipv4.conf.eth0/5.rp_filter: 2\n");
  Report report = engine_->apply(platform, spec, "n");
  ASSERT_TRUE(report.errors.empty()) << report.errors[0].to_string();
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].resource, "sysctl/net.ipv4.conf.eth0/5.rp_filter");
  EXPECT_EQ(tree_.read("/proc/sys/net/ipv4/conf/eth0.5/rp_filter"), "2");
}

TEST_F(SysctlTest, ApplyRefusesAKeyOutsideTheScopeWhoeverPlannedIt) {
  auto reconciler = reconcilers::make_sysctl_reconciler(SysctlOptions{false});
  Platform platform{HostFs(tree_.root())};
  Change change;
  change.resource = "sysctl/kernel.core_pattern";
  change.field = "value";
  change.desired = "|/tmp/x";
  auto result = reconciler->apply(platform, HostState{}, change);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().kind, ErrorKind::kNotSupported);
  EXPECT_EQ(tree_.read("/proc/sys/kernel/core_pattern"), "core\n");
  // A name that climbs out of /proc/sys/net is no key at all.
  change.resource = "sysctl/net.//.kernel.core_pattern";
  EXPECT_FALSE(reconciler->apply(platform, HostState{}, change).has_value());
  EXPECT_EQ(tree_.read("/proc/sys/kernel/core_pattern"), "core\n");
}

TEST_F(SysctlTest, AValueThatIsNotUtf8IsObservedEscaped) {
  tree_.write("/proc/sys/net/core/default_qdisc", "fq\xff\x1b\n");
  Platform platform{HostFs(tree_.root())};
  NodeSpec spec;
  spec.sysctl = {{"net.core.default_qdisc", "fq"}};
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->sysctl.at("net.core.default_qdisc"), "fq\\xff\\x1b");
  EXPECT_NO_THROW((void)to_json(*state).dump());
  EXPECT_NO_THROW((void)to_json(engine_->plan(spec, *state)).dump());
}

// A diff over a state this reconciler did not observe (plan --state, or another Engine's
// observation) knows the scope only from what the state holds.
TEST_F(SysctlTest, ARecordedStateWithoutTheKeyNamesTheAllowList) {
  HostState recorded;
  recorded.node = "n";
  recorded.recorded_from = "state.json";
  recorded.sysctl = {{"net.ipv4.tcp_ecn", "2"}};
  const NodeSpec spec = spec_with("    kernel.core_pattern: x\n");
  Report report = engine_->plan(spec, recorded);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].message,
            "sysctl kernel.core_pattern is not in the recorded state state.json (record it with `rdmactl show -f "
            "SPEC --format json`); outside net.* a key is read, and so recorded, only where the host's "
            "/etc/rdmactl/sysctl-allow lists it");
}

TEST_F(SysctlTest, AnotherEnginesObservationStillRefusesTheKey) {
  Platform platform{HostFs(tree_.root())};
  const NodeSpec spec = spec_with("    kernel.core_pattern: x\n");
  auto state = engine_->observe(platform, &spec, "n");
  ASSERT_TRUE(state.has_value());
  ReconcilerTable table;
  table.push_back(reconcilers::make_sysctl_reconciler(SysctlOptions{false}));
  const Engine planner(std::move(table));
  Report report = planner.plan(spec, *state);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_EQ(report.errors[0].kind, ErrorKind::kNotSupported);
  EXPECT_EQ(report.errors[0].message,
            "sysctl kernel.core_pattern is outside what rdmactl may change: it sets net.* keys, and other keys only "
            "where the host's /etc/rdmactl/sysctl-allow lists them (one key or glob a line); to allow this one, add "
            "the line \"kernel.core_pattern\" to that file; if the file lists it already, the kernel has no such key "
            "(no /proc/sys/kernel/core_pattern)");
}

}  // namespace reconcilers_sysctl_test
}  // namespace rdmactl
