// SPDX-License-Identifier: Apache-2.0
// The subnet_manager reconciler under what an attack run tried (issue 40), on a copy of the cx7-ib
// fixture with DOCA-OFED's OpenSM layout and the fake systemctl and sminfo (as
// subnet_manager_test.cpp):
//   - opensm.conf's partition_config_file with `..` or through a link leading out of --root is
//     resolved beneath the root, as chroot would, or refused naming opensm.conf's line and value;
//     nothing is ever written outside the root;
//   - partitions.conf keeps its other definitions, comments (inline ones too) and multi-line layout
//     byte for byte when one partition changes, and a rollback puts back the file's own bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "agent/engine/engine.h"
#include "reconcilers/subnet_manager/subnet_manager.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl {
namespace reconcilers_subnet_manager_faults_test {

constexpr const char* kConf = "/etc/opensm/opensm.conf";
constexpr const char* kPartitions = "/etc/opensm/partitions.conf";
constexpr const char* kLocalGuid = "0x946dae0300f14a20";
constexpr const char* kOpensmConf =
    "# The port GUID on which the OpenSM is running\n"
    "guid 0x946dae0300f14a20\n"
    "\n"
    "sm_priority 15\n";

PartitionSpec default_partition(int mtu) {
  PartitionSpec p;
  p.name = "Default";
  p.pkey = 0x7fff;
  p.ipoib = true;
  p.mtu = mtu;
  p.members = {{"ALL", "full"}};
  return p;
}

PartitionSpec storage_partition(std::optional<double> rate) {
  PartitionSpec p;
  p.name = "storage";
  p.pkey = 0x0a12;
  p.rate = rate;
  p.members = {{"ALL_SWITCHES", "full"}, {"0x0002c90300001234", "both"}};
  return p;
}

NodeSpec partitions_spec(std::vector<PartitionSpec> partitions) {
  NodeSpec spec;
  spec.subnet_manager.partitions = std::move(partitions);
  return spec;
}

std::string messages(const std::vector<Error>& errors) {
  std::string out;
  for (const Error& e : errors) out += e.to_string() + "\n";
  return out;
}

class SubnetManagerFaults : public test::ReconcilerOnFixture {
 protected:
  void SetUp() override {
    auto reconciler = reconcilers::make_subnet_manager_reconciler(std::chrono::milliseconds(200));
    reconciler_ = reconciler.get();
    use_fixture("cx7-ib", std::move(reconciler));
    tree_.write(kConf, kOpensmConf);
    tree_.write("/etc/init.d/opensmd", "#!/bin/sh\n");
    fake("root", tree_.root() + "\n");
    fake("opensm/layout", "doca\n");
    fake("units/opensmd.state", "enabled\n");
    fake("units/opensmd.active", "active\n");
    fake("sm/ports", std::string("mlx5_0 1 ") + kLocalGuid + " 18 ib\n");
    fake("sm/instances/" + std::string(kLocalGuid), std::string("18 ") + kLocalGuid + " 15\n");
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    ::setenv("PATH", (test::source_path("tests/fake-tools") + ":" + saved_path_).c_str(), 1);
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
  }
  void TearDown() override {
    ::setenv("PATH", saved_path_.c_str(), 1);
    ::unsetenv("RDMACTL_FAKE_STATE");
  }
  void fake(const std::string& file, const std::string& content) const { state_.write("/" + file, content); }
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
  Report apply(const NodeSpec& spec) { return engine_->apply(*platform_, spec, "n"); }
  // Everything under `dir` (outside the root: must stay empty).
  static std::vector<std::string> files_under(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) out.push_back(entry.path().string());
    return out;
  }

  Reconciler* reconciler_ = nullptr;
  test::TempTree state_;
  test::TempTree outside_;  // a directory beside the root that nothing may reach
  std::string saved_path_;
};

TEST_F(SubnetManagerFaults, DotDotInPartitionConfigFileNeverClimbsAboveTheRoot) {
  // From the root, `..` goes to its parent on the host: the name is unique to this test's tree.
  const std::string escape = std::filesystem::path(tree_.root()).filename().string() + "-escaped.conf";
  const std::string above = std::filesystem::path(tree_.root()).parent_path().string() + "/" + escape;
  tree_.write(kConf, std::string(kOpensmConf) + "partition_config_file /../" + escape + "\n");
  const NodeSpec spec = partitions_spec({default_partition(4096)});
  const DiffResult d = plan(spec);
  ASSERT_TRUE(d.errors.empty()) << messages(d.errors);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].via, "/" + escape) << "resolved as chroot would: `..` stops at the root";
  const Report report = apply(spec);
  const bool escaped = std::filesystem::exists(above);
  std::filesystem::remove(above);
  EXPECT_FALSE(escaped) << "rdmactl wrote " << above << ", outside --root";
  ASSERT_TRUE(report.errors.empty()) << messages(report.errors);
  EXPECT_TRUE(std::filesystem::exists(tree_.root() + "/" + escape));
}

TEST_F(SubnetManagerFaults, ALinkLeadingOutOfTheRootIsFollowedInsideIt) {
  // /etc/opensm/site -> <outside>: an absolute target starts again at the root.
  std::filesystem::create_symlink(outside_.root(), tree_.root() + "/etc/opensm/site");
  // The partitions file itself a link to another file outside: also followed inside the root.
  std::filesystem::create_symlink(outside_.root() + "/target.conf", tree_.root() + kPartitions);
  for (const std::string& conf : {std::string(kOpensmConf) + "partition_config_file /etc/opensm/site/partitions.conf\n",
                                  std::string(kOpensmConf)}) {
    tree_.write(kConf, conf);
    const Report report = apply(partitions_spec({default_partition(4096)}));
    EXPECT_TRUE(report.errors.empty()) << messages(report.errors);
    EXPECT_EQ(files_under(outside_.root()), std::vector<std::string>{}) << "written outside --root";
  }
  EXPECT_TRUE(std::filesystem::exists(tree_.root() + outside_.root() + "/partitions.conf"));
  EXPECT_TRUE(std::filesystem::exists(tree_.root() + outside_.root() + "/target.conf"));
  EXPECT_TRUE(std::filesystem::is_symlink(tree_.root() + kPartitions)) << "the link itself stays";
}

TEST_F(SubnetManagerFaults, APartitionConfigFileThatIsNoFileIsRefusedNamingTheLineAndValue) {
  for (const std::string& value : {std::string("/../../../.."), std::string("partitions.conf"), std::string("/etc")}) {
    tree_.write(kConf, std::string(kOpensmConf) + "partition_config_file " + value + "\n");
    const DiffResult d = plan(partitions_spec({default_partition(4096)}));
    EXPECT_TRUE(d.changes.empty()) << value;
    ASSERT_EQ(d.errors.size(), 1u) << value << ": " << messages(d.errors);
    EXPECT_NE(d.errors[0].message.find(std::string(kConf) + ":5: partition_config_file " + value + ": "),
              std::string::npos)
        << d.errors[0].message;
  }
  // A link loop inside the root.
  std::filesystem::create_symlink("/etc/opensm/b", tree_.root() + "/etc/opensm/a");
  std::filesystem::create_symlink("/etc/opensm/a", tree_.root() + "/etc/opensm/b");
  tree_.write(kConf, std::string(kOpensmConf) + "partition_config_file /etc/opensm/a\n");
  const DiffResult loop = plan(partitions_spec({default_partition(4096)}));
  ASSERT_EQ(loop.errors.size(), 1u) << messages(loop.errors);
  EXPECT_NE(loop.errors[0].message.find("partition_config_file /etc/opensm/a: "), std::string::npos)
      << loop.errors[0].message;
}

// OpenSM's partitions.conf grammar (osm_prtn_config.c osm_prtn_config_parse_file: '#' cuts the
// rest of a line; parse_part_conf: a definition's members continue over lines until ';').
constexpr const char* kLaidOut =
    "# partitions.conf: kept by the site's change process\n"
    "\n"
    "Default=0x7fff, ipoib, mtu=5 : ALL=full; # keep\n"
    "\n"
    "  # the storage fabric\n"
    "storage=0x0a12, rate=17 :\n"
    "    ALL_SWITCHES=full,        # the switches\n"
    "    0x0002c90300001234=both;  # the array\n"
    "# end\n";

TEST_F(SubnetManagerFaults, AnUnrelatedChangeKeepsEveryOtherLineCommentAndLayout) {
  tree_.write(kPartitions, kLaidOut);
  // storage's rate changes: Default's line, its inline comment, the other comments stay.
  const Report rate = apply(partitions_spec({default_partition(4096), storage_partition(100)}));
  ASSERT_TRUE(rate.errors.empty()) << messages(rate.errors);
  ASSERT_EQ(rate.changes.size(), 1u);
  EXPECT_EQ(tree_.read(kPartitions),
            "# partitions.conf: kept by the site's change process\n"
            "\n"
            "Default=0x7fff, ipoib, mtu=5 : ALL=full; # keep\n"
            "\n"
            "  # the storage fabric\n"
            "storage=0x0a12, rate=16 : ALL_SWITCHES=full, 0x0002c90300001234=both;  # the array\n"
            "# end\n");
  // Default's MTU changes: the multi-line storage definition stays as written.
  tree_.write(kPartitions, kLaidOut);
  const Report mtu = apply(partitions_spec({default_partition(2048), storage_partition(200)}));
  ASSERT_TRUE(mtu.errors.empty()) << messages(mtu.errors);
  std::string expected = kLaidOut;
  expected.replace(expected.find("mtu=5"), 5, "mtu=4");
  EXPECT_EQ(tree_.read(kPartitions), expected);
  // The spec's order differs from the file's: nothing to do, nothing moved.
  EXPECT_TRUE(plan(partitions_spec({storage_partition(200), default_partition(2048)})).changes.empty());
  // A partition the spec drops goes with its lines; one it adds is appended.
  PartitionSpec compute;
  compute.name = "compute";
  compute.pkey = 0x0b01;
  compute.members = {{"ALL_CAS", "full"}};
  const Report swap = apply(partitions_spec({default_partition(2048), compute}));
  ASSERT_TRUE(swap.errors.empty()) << messages(swap.errors);
  EXPECT_EQ(tree_.read(kPartitions),
            "# partitions.conf: kept by the site's change process\n"
            "\n"
            "Default=0x7fff, ipoib, mtu=4 : ALL=full; # keep\n"
            "\n"
            "  # the storage fabric\n"
            "  # the array\n"
            "# end\n"
            "compute=0x0b01 : ALL_CAS=full;\n");
}

TEST_F(SubnetManagerFaults, ARollbackPutsBackTheFilesOwnBytes) {
  tree_.write(kPartitions, kLaidOut);
  // The restart after the partitions write fails: everything is rolled back.
  fake("units/opensmd.fail-start", "");
  const Report report = apply(partitions_spec({default_partition(2048), storage_partition(100)}));
  EXPECT_TRUE(report.rolled_back);
  ASSERT_EQ(report.changes.size(), 1u);
  EXPECT_EQ(report.changes[0].field, "partitions");
  EXPECT_EQ(tree_.read(kPartitions), kLaidOut) << "the same bytes, not an equivalent file";
}

}  // namespace reconcilers_subnet_manager_faults_test
}  // namespace rdmactl
