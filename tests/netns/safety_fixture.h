// SPDX-License-Identifier: Apache-2.0
// The Safety fixture of the writer's guarantees tests (safety_test.cpp, recovery_test.cpp): a veth
// pair in a throwaway namespace for rtnetlink plus, under --root, the cx7-ib fixture with Debian's
// OpenSM, whose fake systemctl can hold `enable` until the test lets it go: a breakpoint half-way
// through an apply (the MTU change is made, the SM change is in progress). rdmactl runs as the
// built binary, in the foreground or the background.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

extern char** environ;

namespace rdmactl::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline constexpr const char* kSafetyGuid = "0x946dae0300f14a20";

class Safety : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(ns().add_veth("veth0", "veth1").has_value());
    fs::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/sysfs/cx7-ib", root_.root(),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::copy(std::string(RDMACTL_SOURCE_DIR) + "/tests/fixtures/opensm/debian", root_.root(),
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    // The fake tools, where --root looks for them and first in PATH.
    fs::create_directories(root_.root() + "/usr/sbin");
    for (const char* tool : {"systemctl", "sminfo", "mstconfig"}) {
      fs::create_symlink(std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools/" + tool, root_.root() + "/usr/sbin/" + tool);
    }
    state_.write("/root", root_.root() + "\n");
    state_.write("/opensm/layout", "debian\n");
    state_.write("/units/opensm.state", "disabled\n");
    state_.write("/units/opensm.active", "inactive\n");
    state_.write("/units/opensm@.state", "static\n");
    state_.write("/sm/ports", std::string("mlx5_0 1 ") + kSafetyGuid + " 18 ib\n");
    // Another SM on the fabric (lower priority): when this node's stops, one is still master, so
    // the rollback's wait for the election ends at once.
    state_.write("/sm/remote", "ib 3 0x0002c90300001234 10\n");
    saved_path_ = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (std::string(RDMACTL_SOURCE_DIR) + "/tests/fake-tools:" + saved_path_).c_str(), 1);
    ::setenv("RDMACTL_FAKE_STATE", state_.root().c_str(), 1);
  }
  void TearDown() override {
    if (!saved_path_.empty()) ::setenv("PATH", saved_path_.c_str(), 1);
    ::unsetenv("RDMACTL_FAKE_STATE");
    NetnsTest::TearDown();
  }

  std::string spec(int mtu, bool sm) {
    const std::string path = root_.root() + "/spec-" + std::to_string(mtu) + (sm ? "-sm" : "") + ".yaml";
    std::ofstream out(path);
    out << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: safety\ndefaults:\n  interfaces:\n"
        << "    - name: veth0\n      mtu: " << mtu << "\n";
    if (sm) out << "  subnetManager: {enabled: true, priority: 15, port: {rdmaDevice: mlx5_0, port: 1}}\n";
    out << "  selftest: {enabled: false}\n";
    return path;
  }
  std::vector<std::string> argv(std::vector<std::string> args) {
    std::vector<std::string> out = {RDMACTL_BINARY, "--netns", ns().name(), "--node", "safety", "--root", root_.root()};
    out.insert(out.end(), args.begin(), args.end());
    return out;
  }
  int rdmactl(std::vector<std::string> args, std::string* out = nullptr, std::string* err = nullptr) {
    std::string ignored;
    return ns().run(argv(std::move(args)), out ? out : &ignored, err ? err : &ignored);
  }
  // rdmactl in the background, its output in files; returns its pid.
  pid_t start(std::vector<std::string> args, const std::string& name) {
    const std::vector<std::string> full = argv(std::move(args));
    std::vector<char*> cargv;
    for (const std::string& a : full) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = root_.root() + "/" + name + ".out";
    const std::string err = root_.root() + "/" + name + ".err";
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }
  // Waits (bounded) for `pid` and returns its exit code, 128+N for a signal N.
  static int wait_for(pid_t pid, std::chrono::seconds bound = 120s) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "rdmactl did not finish within " << bound.count() << " s";
        return -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Until the apply --confirm whose stderr is NAME.err says it waits for confirm, bounded.
  bool wait_confirming(const std::string& name) const {
    for (int i = 0; i < 600; ++i) {
      if (read(name + ".err").find("to keep the changes, or they are reverted") != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Until the fake systemctl says it is blocked (the apply is half-way), bounded.
  bool wait_blocked() const {
    for (int i = 0; i < 600; ++i) {
      if (state_.read("/calls.log").find("systemctl blocked opensm") != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  int mtu() { return ns().ip_json({"link", "show", "dev", "veth0"})[0]["mtu"].get<int>(); }
  bool journal_exists() const {
    for (const auto& e : fs::directory_iterator(root_.root() + "/var/lib/rdmactl")) {
      if (e.path().filename().string().rfind("journal-", 0) == 0) return true;
    }
    return false;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(root_.root() + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  TempTree root_;
  TempTree state_;
  std::string saved_path_;
};

}  // namespace rdmactl::test
