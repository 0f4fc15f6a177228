// SPDX-License-Identifier: Apache-2.0
// The fake external tools of tests/fake-tools (mstconfig, systemctl, sminfo) for unit tests:
// first in PATH, their state in a temporary directory, set up through fake-firmware.
#pragma once

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/platform/command.h"
#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// tests/fake-tools first in PATH, with its own state directory, for the life of the object.
class FakeTools {
 public:
  FakeTools() {
    const char* path = std::getenv("PATH");
    path_.emplace("PATH", source_path("tests/fake-tools") + ":" + (path ? path : "/usr/bin:/bin"));
  }
  const std::string& state_dir() const { return state_.root(); }

  // fake-firmware ARGS...: add-device PCI TYPE PARAM=DEFAULT,CURRENT,NEXT..., fail-set, reboot.
  void firmware(std::vector<std::string> args) const {
    args.insert(args.begin(), source_path("tests/fake-tools/fake-firmware"));
    auto result = run_command(args);
    ASSERT_TRUE(result.has_value()) << result.error().to_string();
    ASSERT_EQ(result->exit_code, 0) << result->err;
  }
  // The fake mstconfig's invocations, one line each ("-y -d 0000:3b:00.0 set ...").
  std::vector<std::string> mstconfig_calls() const {
    std::vector<std::string> lines;
    std::string line;
    std::ifstream in(state_.root() + "/calls.log");
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
  }
  size_t mstconfig_sets() const {
    size_t n = 0;
    for (const std::string& line : mstconfig_calls()) n += line.find(" set ") != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  TempTree state_;
  ScopedEnv state_env_{"RDMACTL_FAKE_STATE", state_.root()};
  std::optional<ScopedEnv> path_;
};

}  // namespace rdmactl::test
