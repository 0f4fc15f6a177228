// SPDX-License-Identifier: Apache-2.0
// doctor's locked memory and device access checks (agent/doctor/access.cpp) over states as
// agent/platform/rdma_access reads them, and that read itself on fixture trees laid out as
// pam_limits, systemd and the kernel's device nodes lay them out (limits.conf(5),
// systemd-system.conf(5), uverbs_main.c uverbs_devnode, ucma.c ucma_misc). Each planted fault is
// found once; a healthy host has none.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "agent/doctor/doctor.h"
#include "agent/platform/mnl.h"
#include "agent/platform/rdma_access.h"

#include <rdma/rdma_netlink.h>
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace doctor_access_doctor_test {

using json = nlohmann::json;

HostState healthy() {
  HostState s;
  s.node = "gpu-01";
  DeviceState d;
  d.name = "mlx5_0";
  s.devices = {d};
  s.access = json::parse(R"({
    "memlock": {"limits": [
        {"file": "/etc/security/limits.d/rdma.conf", "line": 1, "domain": "*", "type": "soft", "value": "unlimited"},
        {"file": "/etc/security/limits.d/rdma.conf", "line": 2, "domain": "*", "type": "hard", "value": "unlimited"}],
      "systemd": {"value": "infinity", "file": "/etc/systemd/system.conf.d/rdma.conf", "line": 2}},
    "devices": [{"path": "/dev/infiniband/uverbs0", "ibdev": "mlx5_0", "mode": "0666", "group": "root"},
                {"path": "/dev/infiniband/rdma_cm", "mode": "0666", "group": "root"}]})");
  return s;
}

std::vector<Finding> of(const DoctorReport& r, const std::string& check) {
  std::vector<Finding> out;
  for (const Finding& f : r.findings) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

TEST(DoctorAccess, AHealthyHostHasNoFinding) {
  const DoctorReport r = run_doctor(healthy(), nullptr);
  EXPECT_TRUE(of(r, "memlock").empty()) << to_json(r).dump(2);
  EXPECT_TRUE(of(r, "device-access").empty()) << to_json(r).dump(2);
}

TEST(DoctorAccess, AFiniteOrMissingLimitIsFoundOnceNamingItsLine) {
  HostState s = healthy();
  (*s.access)["memlock"]["limits"][0]["value"] = "65536";
  auto found = of(run_doctor(s, nullptr), "memlock");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message,
            "the soft memlock limit of all users is 65536 KiB (/etc/security/limits.d/rdma.conf:1): ibv_reg_mr fails "
            "with ENOMEM past it unless the process has CAP_IPC_LOCK");
  // A later line for the same domain wins, as in pam_limits.
  (*s.access)["memlock"]["limits"].push_back(
      {{"file", "/etc/security/limits.d/zz.conf"}, {"line", 3}, {"domain", "*"}, {"type", "-"}, {"value", "unlimited"}});
  EXPECT_TRUE(of(run_doctor(s, nullptr), "memlock").empty());

  s = healthy();
  (*s.access)["memlock"]["limits"] = json::parse(
      R"([{"file": "/etc/security/limits.conf", "line": 60, "domain": "@hpc", "type": "-", "value": "unlimited"}])");
  found = of(run_doctor(s, nullptr), "memlock");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("no memlock limit for all users"), std::string::npos) << found[0].message;
  EXPECT_NE(found[0].message.find("entries of their own: @hpc unlimited (/etc/security/limits.conf:60)"),
            std::string::npos) << found[0].message;
}

TEST(DoctorAccess, OnlyBothLimitsUnlimitedMakeASessionUnlimited) {
  // pam_limits keeps an unset limit as inherited and cuts a soft limit above the hard one.
  HostState s = healthy();
  auto& limits = (*s.access)["memlock"]["limits"];
  limits.erase(1);  // soft unlimited, no hard
  auto found = of(run_doctor(s, nullptr), "memlock");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("but no hard one is set: pam_limits cuts the soft limit"), std::string::npos)
      << found[0].message;
  limits[0]["type"] = "hard";  // hard unlimited, no soft
  found = of(run_doctor(s, nullptr), "memlock");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("but no soft one is set"), std::string::npos) << found[0].message;
  limits[0]["type"] = "-";  // both
  EXPECT_TRUE(of(run_doctor(s, nullptr), "memlock").empty());
  limits[0]["value"] = "Infinity";
  EXPECT_TRUE(of(run_doctor(s, nullptr), "memlock").empty()) << "pam_limits reads values case-insensitively";
}

TEST(DoctorAccess, TwoMemlockFindingsHaveTheirOwnResources) {
  HostState s = healthy();
  (*s.access)["memlock"]["limits"][0]["value"] = "8192";
  (*s.access)["memlock"]["systemd"] = {{"value", "64K"}, {"file", "/etc/systemd/system.conf"}, {"line", 40}};
  const auto found = of(run_doctor(s, nullptr), "memlock");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].resource, "host/pam_limits");
  EXPECT_EQ(found[1].resource, "host/systemd");
  (*s.access)["memlock"]["systemd"]["value"] = "infinity:infinity";  // soft:hard
  EXPECT_EQ(of(run_doctor(s, nullptr), "memlock").size(), 1u);
}

TEST(DoctorAccess, SystemdsDefaultIsAFindingWhenFiniteAndANoteWhenUnset) {
  HostState s = healthy();
  (*s.access)["memlock"]["systemd"] = {{"value", "64K"}, {"file", "/etc/systemd/system.conf"}, {"line", 40}};
  auto r = run_doctor(s, nullptr);
  auto found = of(r, "memlock");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("DefaultLimitMEMLOCK is 64K (/etc/systemd/system.conf:40)"), std::string::npos);
  (*s.access)["memlock"]["systemd"] = json::object();
  r = run_doctor(s, nullptr);
  EXPECT_TRUE(of(r, "memlock").empty());
  bool noted = false;
  for (const Note& n : r.notes) noted = noted || n.message.find("DefaultLimitMEMLOCK is not set") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(DoctorAccess, DeviceFilesMissingOrNarrowedAreFound) {
  HostState s = healthy();
  (*s.access)["devices"][0]["mode"] = "0660";
  (*s.access)["devices"][0]["group"] = "rdma";
  auto found = of(run_doctor(s, nullptr), "device-access");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].resource, "rdma/mlx5_0");
  EXPECT_NE(found[0].message.find("is mode 0660 (group rdma)"), std::string::npos) << found[0].message;

  s = healthy();
  (*s.access)["devices"][1] = {{"path", "/dev/infiniband/rdma_cm"}, {"missing", true}};
  found = of(run_doctor(s, nullptr), "device-access");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("rdma_ucm not loaded"), std::string::npos);

  s = healthy();
  (*s.access)["devices"] = json::array({{{"path", "/dev/infiniband/rdma_cm"}, {"mode", "0666"}}});
  found = of(run_doctor(s, nullptr), "device-access");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, "error");
  EXPECT_NE(found[0].message.find("ib_uverbs not loaded"), std::string::npos);
}

TEST(RdmaAccess, ReadsLimitsSystemdAndDeviceFilesAsLaidOut) {
  test::TempTree t;
  t.write("/etc/security/limits.conf", "# comment\n*   soft   memlock   unlimited\n@hpc - nofile 4096\n");
  t.write("/etc/security/limits.d/90-rdma.conf", "* hard memlock unlimited # all\n");
  t.write("/etc/systemd/system.conf", "[Manager]\n#DefaultLimitMEMLOCK=\nDefaultLimitMEMLOCK = 8M\n");
  // A drop-in of /usr/lib masked by /etc's of the same name; a later name wins.
  t.write("/usr/lib/systemd/system.conf.d/50-x.conf", "[Manager]\nDefaultLimitMEMLOCK=1K\n");
  t.write("/etc/systemd/system.conf.d/50-x.conf", "[Manager]\nDefaultLimitMEMLOCK=2K\n");
  t.write("/run/systemd/system.conf.d/60-y.conf", "[Other]\nDefaultLimitMEMLOCK=3K\n");
  t.write("/sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
  t.write("/sys/class/infiniband_verbs/abi_version", "6\n");
  t.write("/dev/infiniband/uverbs0", "");
  ::chmod((t.root() + "/dev/infiniband/uverbs0").c_str(), 0660);
  // Under --root the group is named by the tree's /etc/group, not this host's.
  t.write("/etc/group", "wheel:x:" + std::to_string(::getegid() + 1) + ":\nrdma:x:" + std::to_string(::getegid()) + ":alice\n");
  t.write("/etc/security/limits.d/50-case.conf", "@hpc SOFT MEMLOCK Unlimited\n");
  HostState s;
  observe_access(HostFs(t.root()), s);
  ASSERT_TRUE(s.access.has_value());
  const json& a = *s.access;
  EXPECT_EQ(a["memlock"]["limits"], json::parse(R"([
      {"file": "/etc/security/limits.conf", "line": 2, "domain": "*", "type": "soft", "value": "unlimited"},
      {"file": "/etc/security/limits.d/50-case.conf", "line": 1, "domain": "@hpc", "type": "soft", "value": "unlimited"},
      {"file": "/etc/security/limits.d/90-rdma.conf", "line": 1, "domain": "*", "type": "hard", "value": "unlimited"}])"));
  EXPECT_EQ(a["memlock"]["systemd"], json::parse(R"({"value": "2K", "file": "/etc/systemd/system.conf.d/50-x.conf", "line": 2})"));
  ASSERT_EQ(a["devices"].size(), 2u);
  EXPECT_EQ(a["devices"][0]["path"], "/dev/infiniband/uverbs0");
  EXPECT_EQ(a["devices"][0]["ibdev"], "mlx5_0");
  EXPECT_EQ(a["devices"][0]["mode"], "0660");
  EXPECT_EQ(a["devices"][0]["group"], "rdma");
  EXPECT_EQ(a["devices"][1], json::parse(R"({"path": "/dev/infiniband/rdma_cm", "missing": true})"));
  // Blanks around '=', as systemd's parser strips them.
  test::TempTree spaced;
  spaced.write("/etc/systemd/system.conf", "[Manager]\nDefaultLimitMEMLOCK = 8M\n");
  HostState only;
  observe_access(HostFs(spaced.root()), only);
  EXPECT_EQ((*only.access)["memlock"]["systemd"]["value"], "8M");
  // The state's JSON carries it.
  auto back = host_state_from_json(to_json(s));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->access, s.access);
}

TEST(RdmaAccess, TheNetnsModeIsReadFromTheSysGetReply) {
  // nldev_sys_get_doit (drivers/infiniband/core/nldev.c) puts RDMA_NLDEV_SYS_ATTR_NETNS_MODE as the
  // u8 ib_devices_shared_netns, beside attributes of later kernels (COPY_ON_FORK).
  const auto reply = [](uint8_t shared) {
    auto m = std::make_unique<MnlMessage>();
    m->put_header(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0);
    m->put_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, shared);
    m->put_u8(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
    return m;
  };
  const auto shared = parse_sys_get_netns_mode(reply(1)->header());
  ASSERT_TRUE(shared) << shared.error().to_string();
  EXPECT_EQ(*shared, "shared");
  const auto exclusive = parse_sys_get_netns_mode(reply(0)->header());
  ASSERT_TRUE(exclusive) << exclusive.error().to_string();
  EXPECT_EQ(*exclusive, "exclusive");
  MnlMessage other;
  other.put_header(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0);
  EXPECT_FALSE(parse_sys_get_netns_mode(other.header()));
  MnlMessage bare;
  bare.put_header(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0);
  EXPECT_FALSE(parse_sys_get_netns_mode(bare.header())) << "the mode is required";
}

}  // namespace doctor_access_doctor_test
}  // namespace rdmactl
