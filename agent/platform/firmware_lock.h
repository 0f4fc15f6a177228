// SPDX-License-Identifier: Apache-2.0
// FirmwareLock: one firmware operation (a burn, a reset) at a time per adapter, host-wide.
//
// An adapter is a PCI device, whichever network namespace its netdevs are in: its lock is
// /run/rdmactl/firmware-<adapter> (its PCI address without the function: 0000:3b:00), beside the host lock
// and never under --root. It is flock(2) on that file, taken by the run that burns or resets, and
// the descriptor is handed to the tool (CommandOptions::inherit_fd): mstflint or mstfwreset holds
// the lock for as long as it runs, so a burn that outlives the rdmactl that started it (SIGKILL,
// a service stop that killed only the main process, an OOM kill) still keeps every other rdmactl,
// in any namespace, from starting a second burn or a reset of that adapter. The file records the
// operation: the tool's command line, its pid and the pid's start time (/proc/<pid>/stat field
// 22, so that a pid reused since is not taken for it) and PID namespace, when it started, and the
// rdmactl that started it. A run that finds the lock held waits for it (the firmware reconciler
// waits the longer of --lock-timeout and a burn's deadline; serve 30 s, then its next trigger),
// names the operation while it waits, and then reads the adapter again: the orphan's result is
// adopted (an image already on flash is not burnt twice), never overwritten blindly.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

// Where the firmware locks are: the host's /run/rdmactl (the host lock's directory).
inline constexpr const char* kFirmwareLockDirectory = "/run/rdmactl";

class FirmwareLock {
 public:
  // Takes the lock of `adapter` (0000:3b:00), waiting up to `timeout` while another
  // operation holds it: `on_wait` is told once what holds it ("mstflint -d 0000:3b:00.0 -i ...
  // burn, pid 4711 since 2026-12-06T10:00:00Z, started by pid 4700 (rdmactl apply -f f.yaml), which
  // is gone"), and `interrupted` (may be empty) is asked every poll: non-zero stops the wait
  // (kInterrupted). Fails with kTimeout naming the holder. `waited` says whether it was held.
  static Result<FirmwareLock> acquire(const std::string& adapter, std::chrono::milliseconds timeout,
                                      const std::string& command, const std::function<void(const std::string&)>& on_wait,
                                      const std::function<int()>& interrupted);
  FirmwareLock(FirmwareLock&& other) noexcept;
  FirmwareLock& operator=(FirmwareLock&& other) noexcept;
  FirmwareLock(const FirmwareLock&) = delete;
  FirmwareLock& operator=(const FirmwareLock&) = delete;
  ~FirmwareLock();

  // The descriptor a tool inherits to hold the lock while it runs.
  int fd() const { return fd_; }
  bool waited() const { return waited_; }
  const std::string& path() const { return path_; }
  // Records the tool about to run (pid 0: not started yet); started() adds its pid once it runs.
  void record(const std::vector<std::string>& argv, int pid);
  void started(int pid) { record(argv_, pid); }

  // What the lock file at `path` says of its holder, for messages (as on_wait above).
  static std::string describe_holder(const std::string& text);
  // The operation running on `adapter` now, described as above; nullopt when none is (nothing is
  // taken: a shared lock tried and let go). For observers: what they read may change when it ends.
  static std::optional<std::string> in_progress(const std::string& adapter);

 private:
  FirmwareLock(int fd, std::string path, std::string adapter, std::string command)
      : fd_(fd), path_(std::move(path)), adapter_(std::move(adapter)), command_(std::move(command)) {}
  int fd_ = -1;
  bool waited_ = false;
  std::string path_;
  std::string adapter_;
  std::string command_;
  std::vector<std::string> argv_;
  int tool_pid_ = 0;  // the last tool recorded
};

}  // namespace rdmactl
