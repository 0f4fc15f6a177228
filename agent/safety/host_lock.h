// SPDX-License-Identifier: Apache-2.0
// HostLock: one writer per host, per network namespace. Every command that writes (apply, confirm's
// revert, the agent while it reconciles, the recovery of an interrupted run) holds it; plan, show
// and doctor never take it.
//
// The lock is flock(2) on /run/rdmactl/lock-<netns>, where <netns> is the inode of the caller's
// network namespace (/proc/self/ns/net): two namespaces are two hosts. It belongs to what is
// written, the namespace, so it is the host's /run whatever --root says: two runs with different
// fixture roots still write one namespace through rtnetlink. (A live namespace's inode is its own:
// only a deleted one's is reused, and nobody holds that one's lock any more.) The holder writes its
// pid, command line and start time into the file, so that a run that waits names it. flock is
// released by the kernel when the holder dies, however it dies. The directory and the file are
// opened without following symbolic links, and the directory must belong to root or to us.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "agent/core/result.h"

namespace rdmactl {

// The default of --lock-timeout: long enough for another apply (verify retries, an OpenSM election)
// to finish, short enough for an Ansible or Salt run to fail with a clear message.
constexpr std::chrono::seconds kDefaultLockTimeout{120};

// Where the locks are: the host's /run/rdmactl, never under --root.
inline constexpr const char* kLockDirectory = "/run/rdmactl";

class HostLock {
 public:
  // Waits up to `timeout` (0: do not wait) for the lock; then fails (kTimeout) naming the holder's
  // pid, command and start time. `command` is what this run writes for others to read. A signal
  // in `interrupt` (may be null; SIGTERM, SIGINT, SIGHUP) ends the wait at once (kInterrupted):
  // nothing was changed.
  static Result<HostLock> acquire(std::chrono::milliseconds timeout, const std::string& command,
                                  const std::atomic<int>* interrupt = nullptr);
  // The host-wide lock, /run/rdmactl/lock-host: what every namespace shares (change.h host_wide).
  // Taken after the namespace's lock, never before it, so that two runs cannot wait for each other.
  // Under a --root other than /, those things are the tree's (its sysfs devices, its OpenSM files,
  // its tools): the lock is lock-host-<device>-<inode> of that directory, so that two fixture trees
  // do not wait for each other.
  static Result<HostLock> acquire_host_wide(std::chrono::milliseconds timeout, const std::string& command,
                                            const std::string& root, const std::atomic<int>* interrupt = nullptr);
  HostLock(HostLock&& other) noexcept;
  HostLock& operator=(HostLock&& other) noexcept;
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;
  ~HostLock();

  const std::string& path() const { return path_; }
  // Whether another run held it when this one asked.
  bool waited() const { return waited_; }

 private:
  HostLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  static Result<HostLock> acquire_file(const std::string& name, const std::string& what,
                                       std::chrono::milliseconds timeout, const std::string& command,
                                       const std::atomic<int>* interrupt);
  int fd_ = -1;
  std::string path_;
  bool waited_ = false;
};

// The command line of this process, for the lock and the journal ("rdmactl apply -f fabric.yaml").
std::string this_command_line();

}  // namespace rdmactl
