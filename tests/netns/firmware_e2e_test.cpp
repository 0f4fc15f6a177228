// SPDX-License-Identifier: Apache-2.0
// Firmware end to end through the rdmactl binary: the cx6dx-roce fixture (a dual-port ConnectX-6
// Dx, mlx5_0 and mlx5_1 on 0000:3b:00.0 and .1, PSID MT_0000000359, 22.39.1002) under --root,
// its netdevs as a veth pair in a throwaway namespace, and the fake mstflint and mstfwreset
// (modelled on mstflint v4.21.0-1) in ROOT/usr/sbin, where --root confines rdmactl's tools. Under
// a fixture root devlink is not asked, so this is the mstflint path.
//
// apply with activation reboot: one burn, exit 3, burn progress in the audit log, the second apply
// burns nothing and exits 3 again; with activation reset and an MTU change: the burn, the reset,
// then the MTU, exit 0, and a second apply writes nothing; serve burns nothing without
// --allow-firmware and burns with it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

extern char** environ;

namespace rdmactl::test {
namespace netns_firmware_e2e_test {

using namespace std::chrono_literals;

constexpr const char* kPf0 = "0000:3b:00.0";
constexpr const char* kPsid = "MT_0000000359";
constexpr const char* kFakeTools[] = {"mstflint", "mstfwreset"};

std::string fake_tool(const std::string& name) { return std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools/" + name; }

class FirmwareEndToEnd : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth("ens1f0np0", "ens1f1np1").has_value());
    std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx6dx-roce", root_.root(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    for (const char* tool : kFakeTools) root_.symlink(fake_tool(tool), std::string("/usr/sbin/") + tool);
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
    images_ = root_.root() + "/srv/firmware";
    std::filesystem::create_directories(images_);
    fake({"add-fw", kPf0, kPsid, "22.39.1002"});
    fake({"add-fw-function", kPf0, "0000:3b:00.1"});
    fake({"reset-levels", kPf0, "0:no 3:yes 4:yes"});
    fake({"burn-seconds", "1"});
    fake({"add-image", images_ + "/fw-ConnectX6Dx-rel-22_41_1000.bin", kPsid, "22.41.1000"});
  }
  void TearDown() override {
    for (pid_t pid : spawned_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::unsetenv("RDMACTL_FAKE_STATE");
    NetnsTest::TearDown();
  }

  void fake(std::vector<std::string> args) {
    args.insert(args.begin(), fake_tool("fake-firmware"));
    ASSERT_EQ(run_command(args), 0);
  }

  std::string write_spec(const std::string& activation, const std::string& extra = "") {
    const std::string path = root_.root() + "/fabric.yaml";
    std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: fw\ndefaults:\n"
                           "  selftest: {enabled: false}\n  interfaces:\n    - rdmaDevice: mlx5_1\n      firmware:\n        version: \"22.41.1000\"\n"
                           "        images: srv/firmware\n        policy: update\n        activation: "
                        << activation << "\n"
                        << extra;
    return path;
  }

  std::vector<std::string> base_args() {
    return {RDMACTL_BINARY, "--netns", ns().name(), "--node", "gpu-01", "--root", root_.root()};
  }

  int rdmactl(std::vector<std::string> args, nlohmann::json* report) {
    std::vector<std::string> argv = base_args();
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    const int rc = ns().run(argv, &out, &last_err_);
    *report = nlohmann::json::parse(out, nullptr, false);
    return rc;
  }

  size_t calls_with(const std::string& needle) const {
    std::istringstream log(state_.read("/calls.log"));
    size_t n = 0;
    for (std::string line; std::getline(log, line);) n += line.find(needle) != std::string::npos;
    return n;
  }

  std::vector<nlohmann::json> audit() const {
    std::vector<nlohmann::json> out;
    std::istringstream log(root_.read("/var/log/rdmactl/audit.jsonl"));
    for (std::string line; std::getline(log, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  std::string adapter() const {
    // Appended, not `std::string("/adapters/") + kPf0`: GCC 12 takes that temporary's inlined
    // copy for an out-of-bounds memcpy (-Warray-bounds) once the unity build inlines it here.
    std::string path = "/adapters/";
    path += kPf0;
    return state_.read(path);
  }

  void start_serve(const std::string& spec, const std::vector<std::string>& extra) {
    std::vector<std::string> args = base_args();
    for (const char* a : {"serve", "-f"}) args.emplace_back(a);
    args.push_back(spec);
    for (const char* a : {"--listen", "127.0.0.1:19481", "--interval", "1h", "--no-rdma-responder"}) args.emplace_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    const std::string log = state_.root() + "/serve.log";
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    ASSERT_EQ(posix_spawn(&pid_, RDMACTL_BINARY, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  void stop_serve() {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 300 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) std::this_thread::sleep_for(100ms);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, WNOHANG);
    pid_ = -1;
  }
  // rdmactl with `args` after base_args() (or `base` when given), in the background, stdout and
  // stderr into STATE/<log>.
  pid_t spawn(const std::vector<std::string>& args, const std::string& log, std::vector<std::string> base = {},
              bool own_process_group = false) {
    std::vector<std::string> all = base.empty() ? base_args() : std::move(base);
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (const std::string& a : all) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    const std::string path = state_.root() + "/" + log;
    posix_spawn_file_actions_addopen(&actions, 1, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (path + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (own_process_group) {
      // As a shell starts a job: its own process group, which a terminal's Ctrl-C signals whole.
      posix_spawnattr_setpgroup(&attr, 0);
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    }
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, RDMACTL_BINARY, &actions, &attr, argv.data(), environ), 0);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    spawned_.push_back(pid);
    return pid;
  }
  // Its exit code once it ends within `timeout`; -1 when it did not (it is then killed).
  int wait_exit(pid_t pid, std::chrono::seconds timeout) {
    int status = 0;
    const bool ended = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, timeout);
    std::erase(spawned_, pid);
    if (!ended) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  bool journal_left() const {
    const std::string dir = root_.root() + "/var/lib/rdmactl";
    if (!std::filesystem::exists(dir)) return false;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("journal-", 0) == 0) return true;
    }
    return false;
  }

  template <typename Fn>
  static bool eventually(Fn done, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return done();
  }

  TempTree root_;
  TempTree state_;
  std::string images_;
  std::string last_err_;
  pid_t pid_ = -1;
  std::vector<pid_t> spawned_;
};

TEST_F(FirmwareEndToEnd, ActivationRebootBurnsOnceWithProgressAndExitsThreeUntilTheReboot) {
  const std::string spec = write_spec("reboot");
  nlohmann::json report;
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 3) << last_err_;
  ASSERT_EQ(report["changes"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["changes"][0]["resource"], "pci/0000:3b:00.0");
  EXPECT_EQ(report["changes"][0]["status"], "pending-reboot");
  EXPECT_EQ(report["pendingReboot"], true);
  EXPECT_EQ(calls_with(" burn"), 1u);
  EXPECT_NE(adapter().find("stored 22.41.1000"), std::string::npos) << adapter();
  // The burn's progress: in the log the person sees, and in the audit log, each tenth.
  EXPECT_NE(last_err_.find("burn 50%"), std::string::npos) << last_err_;
  size_t progress = 0;
  bool applied = false;
  for (const nlohmann::json& line : audit()) {
    if (line["action"] == "progress") {
      ++progress;
      EXPECT_FALSE(applied) << "progress before the change's own line";
    }
    if (line["action"] == "apply") applied = line["result"] == "ok";
  }
  EXPECT_GE(progress, 5u);
  EXPECT_TRUE(applied);

  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 3);
  EXPECT_EQ(report["changes"][0]["status"], "pending-reboot");
  EXPECT_EQ(calls_with(" burn"), 1u) << "a pending image is not burnt again";

  fake({"reboot", "cold", root_.root()});
  ASSERT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &report), 0) << report.dump(2);
}

TEST_F(FirmwareEndToEnd, ActivationResetBurnsResetsThenAppliesTheRestAndConverges) {
  const std::string spec = write_spec("reset", "      mtu: 9000\n");
  nlohmann::json report;
  ASSERT_EQ(rdmactl({"plan", "-f", spec, "--format", "json"}, &report), 2);
  ASSERT_EQ(report["changes"].size(), 2u) << report.dump(2);
  EXPECT_EQ(report["changes"][0]["field"], "firmware.version");
  EXPECT_NE(report["changes"][0]["via"].get<std::string>().find(
                "-i " + images_ + "/fw-ConnectX6Dx-rel-22_41_1000.bin -y burn, then mstfwreset -d 0000:3b:00.0 q, then "
                "mstfwreset -d 0000:3b:00.0 --level 0|3 (level 3 --sync 1) -y reset"),
            std::string::npos)
      << report["changes"][0]["via"];
  EXPECT_EQ(report["changes"][1]["field"], "mtu");

  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 0) << last_err_ << report.dump(2);
  EXPECT_EQ(report["changes"][0]["status"], "applied");
  EXPECT_EQ(report["changes"][1]["status"], "applied");
  EXPECT_NE(adapter().find("running 22.41.1000"), std::string::npos) << adapter();
  EXPECT_EQ(calls_with(" burn"), 1u);
  // The level asked again after the burn; the driver owns the sync (the fake lists it, as the captures).
  EXPECT_EQ(calls_with("--level 3 --sync 1 -y reset"), 1u);
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 9000);
  std::vector<std::string> order;
  for (const nlohmann::json& line : audit()) {
    if (line["action"] == "apply") order.push_back(line["field"].get<std::string>());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"firmware.version", "mtu"}));

  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 0);
  EXPECT_TRUE(report["changes"].empty()) << report.dump(2);
  EXPECT_EQ(calls_with(" burn"), 1u);
  EXPECT_EQ(calls_with(" reset"), 1u);
}

TEST_F(FirmwareEndToEnd, ServeBurnsNothingWithoutAllowFirmwareAndBurnsWithIt) {
  const std::string spec = write_spec("reboot");
  start_serve(spec, {});
  EXPECT_TRUE(eventually([&] { return state_.read("/serve.log").find("--allow-firmware") != std::string::npos; }, 60s))
      << state_.read("/serve.log");
  EXPECT_EQ(calls_with(" burn"), 0u);
  stop_serve();

  start_serve(spec, {"--allow-firmware"});
  EXPECT_TRUE(eventually([&] { return adapter().find("stored 22.41.1000") != std::string::npos; }, 60s))
      << state_.read("/serve.log");
  stop_serve();
  EXPECT_EQ(calls_with(" burn"), 1u);
}

// Issue 40, 1: an apply --confirm that is not confirmed reverts the MTU and keeps the firmware (it
// cannot be rolled back), says so, and leaves no journal that would fail every later run.
TEST_F(FirmwareEndToEnd, ConfirmTimeoutKeepsTheFirmwareRevertsTheRestAndLeavesNoJournal) {
  const std::string spec = write_spec("reset", "      mtu: 9000\n");
  nlohmann::json report;
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json", "--confirm", "2s"}, &report), 1) << last_err_;
  ASSERT_EQ(report["changes"].size(), 2u) << report.dump(2);
  EXPECT_EQ(report["changes"][0]["field"], "firmware.version");
  EXPECT_EQ(report["changes"][0]["status"], "applied");
  EXPECT_NE(report["changes"][0].value("note", "").find("kept: firmware is never rolled back"), std::string::npos)
      << report.dump(2);
  EXPECT_EQ(report["changes"][1]["status"], "rolled-back") << report.dump(2);
  const std::string errors = report["errors"].dump();
  EXPECT_NE(errors.find("every change was reverted but the firmware"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("every change was reverted\""), std::string::npos) << errors;
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 1500);
  EXPECT_NE(adapter().find("running 22.41.1000"), std::string::npos) << adapter();
  EXPECT_FALSE(journal_left());
  // Not wedged: the next apply sets the MTU again and converges.
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 0) << last_err_ << report.dump(2);
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 9000);
  EXPECT_EQ(calls_with(" burn"), 1u);
}

// Issue 40, 1: killed while waiting for `rdmactl confirm` after a burn, reset and MTU change: the
// next run rolls the MTU back, reports the firmware kept, and is not blocked by it.
TEST_F(FirmwareEndToEnd, AKilledConfirmWaitIsRecoveredWithTheFirmwareKept) {
  const std::string spec = write_spec("reset", "      mtu: 9000\n");
  const pid_t apply = spawn({"apply", "-f", spec, "--confirm", "120s"}, "apply.log");
  ASSERT_TRUE(eventually([&] { return state_.read("/apply.log.err").find("to keep the changes") != std::string::npos; }, 60s))
      << state_.read("/apply.log.err");
  ::kill(apply, SIGKILL);
  wait_exit(apply, 10s);
  ASSERT_TRUE(journal_left());
  nlohmann::json report;
  ASSERT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 0) << last_err_ << report.dump(2);
  ASSERT_TRUE(report.contains("recovery")) << report.dump(2);
  EXPECT_EQ(report["recovery"]["outcome"], "rolled-back") << report.dump(2);
  bool kept = false;
  for (const nlohmann::json& c : report["recovery"]["changes"]) {
    if (c["field"] == "firmware.version") kept = c.value("note", "").find("kept: firmware") != std::string::npos;
  }
  EXPECT_TRUE(kept) << report["recovery"].dump(2);
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 9000);
  EXPECT_EQ(calls_with(" burn"), 1u);
  EXPECT_EQ(calls_with(" reset"), 1u);
  EXPECT_FALSE(journal_left());
}

// Issue 40, 4: SIGTERM while the image is being burnt: the burn ends, no reset follows, nothing
// else is applied, and the report says the image waits on flash instead of claiming a rollback.
TEST_F(FirmwareEndToEnd, SigtermDuringTheBurnIsNotFollowedByAReset) {
  fake({"burn-seconds", "3"});
  const std::string spec = write_spec("reset", "      mtu: 9000\n");
  const pid_t apply = spawn({"apply", "-f", spec, "--format", "json"}, "apply.json");
  ASSERT_TRUE(eventually([&] { return calls_with(" burn") == 1; }, 60s));
  std::this_thread::sleep_for(500ms);
  ::kill(apply, SIGTERM);
  ASSERT_EQ(wait_exit(apply, 60s), 1) << state_.read("/apply.json.err");
  EXPECT_EQ(calls_with(" reset"), 0u) << state_.read("/calls.log");
  const nlohmann::json report = nlohmann::json::parse(state_.read("/apply.json"), nullptr, false);
  ASSERT_TRUE(report.is_object()) << state_.read("/apply.json");
  ASSERT_GE(report["changes"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["changes"][0]["status"], "pending-reboot") << report.dump(2);
  EXPECT_NE(report["changes"][0].value("note", "").find("not activated"), std::string::npos) << report.dump(2);
  EXPECT_EQ(report["summary"]["rolledBack"], 0) << report.dump(2);
  const std::string errors = report["errors"].dump();
  EXPECT_NE(errors.find("SIGTERM during the firmware step"), std::string::npos) << errors;
  EXPECT_EQ(errors.find("were rolled back"), std::string::npos) << errors;
  EXPECT_NE(adapter().find("stored 22.41.1000"), std::string::npos) << adapter();
  EXPECT_NE(adapter().find("running 22.39.1002"), std::string::npos) << adapter();
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 1500);
}

// Issue 40, 4: Ctrl-C at a terminal signals the whole process group: mstflint aborts its burn
// cleanly (flint.cpp TerminationHandler), no reset follows, and the report says the flash kept its
// image and that the signal stopped the burn.
TEST_F(FirmwareEndToEnd, CtrlCDuringTheBurnStopsItAndNothingFollows) {
  fake({"burn-seconds", "3"});
  const std::string spec = write_spec("reset", "      mtu: 9000\n");
  const pid_t apply = spawn({"apply", "-f", spec, "--format", "json"}, "apply.json", {}, true);
  ASSERT_TRUE(eventually([&] { return calls_with(" burn") == 1; }, 60s));
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(::kill(-apply, SIGINT), 0);
  ASSERT_EQ(wait_exit(apply, 60s), 1) << state_.read("/apply.json.err");
  EXPECT_EQ(calls_with(" reset"), 0u) << state_.read("/calls.log");
  const nlohmann::json report = nlohmann::json::parse(state_.read("/apply.json"), nullptr, false);
  ASSERT_TRUE(report.is_object()) << state_.read("/apply.json");
  ASSERT_GE(report["changes"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["changes"][0]["status"], "failed") << report.dump(2);
  const std::string error = report["changes"][0].value("error", "");
  EXPECT_NE(error.find("SIGINT stopped the burn"), std::string::npos) << error;
  EXPECT_NE(error.find("the flash holds 22.39.1002"), std::string::npos) << error;
  EXPECT_NE(report["errors"].dump().find("SIGINT during the firmware step"), std::string::npos) << report.dump(2);
  EXPECT_NE(adapter().find("stored 22.39.1002"), std::string::npos) << adapter();
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "ens1f1np1"})[0]["mtu"], 1500);
}

// Issue 40, 2: an apply SIGKILLed during the burn leaves mstflint running; the next apply waits
// for that burn (naming it), adopts its result and never starts a second one.
TEST_F(FirmwareEndToEnd, AnOrphanedBurnIsWaitedForAndAdoptedNotBurntTwice) {
  fake({"burn-seconds", "4"});
  const std::string spec = write_spec("reboot");
  const pid_t first = spawn({"apply", "-f", spec}, "first.log");
  ASSERT_TRUE(eventually([&] { return calls_with(" burn") == 1; }, 60s));
  std::this_thread::sleep_for(500ms);
  ::kill(first, SIGKILL);
  wait_exit(first, 10s);
  // Meanwhile, what rdmactl shows of the adapter says an operation is under way, and whose.
  nlohmann::json shown;
  EXPECT_EQ(rdmactl({"show", "--format", "json"}, &shown), 0) << last_err_;
  EXPECT_NE(shown.dump().find("operationInProgress"), std::string::npos) << shown.dump(2);
  nlohmann::json report;
  EXPECT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 3) << last_err_ << report.dump(2);
  EXPECT_EQ(calls_with(" burn"), 1u) << state_.read("/calls.log");
  EXPECT_NE(last_err_.find("which is gone"), std::string::npos) << last_err_;
  EXPECT_NE(adapter().find("stored 22.41.1000"), std::string::npos) << adapter();
}

// Issue 40, 3: the same adapter seen from two network namespaces (two applies at once): one burn,
// one reset, and both runs converge.
TEST_F(FirmwareEndToEnd, TwoNamespacesWithOneAdapterBurnAndResetItOnce) {
  auto other_ns = TestNamespace::create();
  ASSERT_TRUE(other_ns.has_value()) << other_ns.error().to_string();
  ASSERT_TRUE(other_ns->add_veth("ens1f0np0", "ens1f1np1").has_value());
  TempTree other_root;
  std::filesystem::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx6dx-roce", other_root.root(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  for (const char* tool : kFakeTools) other_root.symlink(fake_tool(tool), std::string("/usr/sbin/") + tool);
  std::filesystem::create_directories(other_root.root() + "/srv/firmware");
  fake({"add-image", other_root.root() + "/srv/firmware/fw-ConnectX6Dx-rel-22_41_1000.bin", kPsid, "22.41.1000"});
  fake({"burn-seconds", "2"});
  const std::string spec = write_spec("reset");
  const std::string other_spec = other_root.root() + "/fabric.yaml";
  std::filesystem::copy_file(spec, other_spec);
  const pid_t a = spawn({"apply", "-f", spec}, "a.log");
  const pid_t b = spawn({"apply", "-f", other_spec}, "b.log",
                        {RDMACTL_BINARY, "--netns", other_ns->name(), "--node", "gpu-01", "--root", other_root.root()});
  EXPECT_EQ(wait_exit(a, 120s), 0) << state_.read("/a.log.err");
  EXPECT_EQ(wait_exit(b, 120s), 0) << state_.read("/b.log.err");
  EXPECT_EQ(calls_with(" burn"), 1u) << state_.read("/calls.log");
  EXPECT_EQ(calls_with(" reset"), 1u) << state_.read("/calls.log");
  EXPECT_NE(adapter().find("running 22.41.1000"), std::string::npos) << adapter();
}

// Issue 40, 7: SIGTERM while waiting for the host lock ends the wait at once, changes nothing and
// reports no rollback.
TEST_F(FirmwareEndToEnd, SigtermWhileWaitingForTheHostLockStopsAtOnce) {
  std::filesystem::create_directories("/run/rdmactl");
  const std::string lock_path = "/run/rdmactl/lock-" + ns().inode();
  const int held = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  const std::string spec = write_spec("reboot");
  const pid_t apply = spawn({"apply", "-f", spec, "--lock-timeout", "100s"}, "apply.log");
  ASSERT_TRUE(eventually([&] { return state_.read("/apply.log.err").find("waiting for the host lock") != std::string::npos; },
                         30s))
      << state_.read("/apply.log.err");
  const auto sent = std::chrono::steady_clock::now();
  ::kill(apply, SIGTERM);
  const int rc = wait_exit(apply, 10s);
  ::close(held);
  EXPECT_NE(rc, -1) << "still waiting 10 s after SIGTERM";
  EXPECT_NE(rc, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 5s);
  const std::string err = state_.read("/apply.log.err");
  EXPECT_NE(err.find("SIGTERM while waiting for the lock"), std::string::npos) << err;
  EXPECT_EQ(err.find("were rolled back"), std::string::npos) << err;
  EXPECT_EQ(calls_with(" burn"), 0u);
}

// Issue 40, 7: an image replaced after rdmactl checked it: before the private copy is made, the copy
// is checked again and refused; after, the copy (the checked bytes) is what is burnt.
TEST_F(FirmwareEndToEnd, AnImageSwappedAfterItsCheckIsNeverBurnt) {
  const std::string planned = images_ + "/fw-ConnectX6Dx-rel-22_41_1000.bin";
  const std::string older = state_.root() + "/older.bin";
  fake({"add-image", older, kPsid, "22.38.1002"});
  const std::string spec = write_spec("reboot");
  fake({"swap-image", "after-query", planned, older});
  nlohmann::json report;
  EXPECT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 1) << last_err_ << report.dump(2);
  EXPECT_NE(report.dump().find("is not the image that was planned any more"), std::string::npos) << report.dump(2);
  EXPECT_EQ(calls_with(" burn"), 0u) << state_.read("/calls.log");
  EXPECT_NE(adapter().find("stored 22.39.1002"), std::string::npos) << adapter();
}

TEST_F(FirmwareEndToEnd, AnImageSwappedAsTheBurnStartsIsNotWhatIsBurnt) {
  const std::string planned = images_ + "/fw-ConnectX6Dx-rel-22_41_1000.bin";
  const std::string older = state_.root() + "/older.bin";
  fake({"add-image", older, kPsid, "22.38.1002"});
  const std::string spec = write_spec("reboot");
  fake({"swap-image", "before-burn", planned, older});
  nlohmann::json report;
  EXPECT_EQ(rdmactl({"apply", "-f", spec, "--format", "json"}, &report), 3) << last_err_ << report.dump(2);
  EXPECT_EQ(calls_with(" burn"), 1u);
  EXPECT_NE(adapter().find("stored 22.41.1000"), std::string::npos) << adapter();
}

}  // namespace netns_firmware_e2e_test
}  // namespace rdmactl::test
