// SPDX-License-Identifier: Apache-2.0
// Shared by the agent's files (agent_spec.cpp, agent_watch.cpp): the spec file's stamp, and the
// wait for it to stop changing that both the watcher and the reconcile's spec refresh use.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rdmactl::agent_detail {

// What stat() says of the spec file: a write in place changes size, mtime and ctime, a rename
// over it the inode. A missing file is a stamp of its own.
struct FileStamp {
  bool exists = false;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const std::string& path);

// A stamp as text, to remember one across threads (Agent::whole_stamp_).
std::string stamp_key(const FileStamp& f);

// Whether the file was last written at least `settle` ago by its own timestamps. Not for an mtime
// in the future (clock skew, touch -d) nor one in whole seconds (a file system that keeps no
// finer time would make a file written just now look up to a second old): those are watched.
bool written_long_ago(const FileStamp& f, std::chrono::milliseconds settle);

// Whether some process has the file open for writing: a writer that pauses longer than the
// settle interval (a slow scp, `cat` from a pipe) leaves the stamp still while the file is half
// written. Asked of the kernel through a read lease, which fs/locks.c refuses with EAGAIN while
// the inode is open for writing (lease_open_conflict / check_conflicting_open:
// inode_is_open_for_write), and released at once. Where leases are unavailable (a file system
// without them, fs.leases-enable 0, a file neither ours nor CAP_LEASE's: EINVAL, EACCES) the
// answer is "no", and the stamp alone decides, as before.
bool open_for_writing(const std::string& path);

enum class Settled { kQuiet, kStillChanging, kStopping };

// Waits until the file at `path` has stopped changing: written `settle` ago or more, or the same
// stamp over `settle` of watching; `*quiet` is the stamp it settled at. kStillChanging when that
// takes past `give_up`; kStopping when `pause` says the agent stops.
template <typename Pause>
Settled wait_until_quiet(const std::string& path, std::chrono::milliseconds settle,
                         std::chrono::steady_clock::time_point give_up, Pause pause, FileStamp* quiet) {
  FileStamp last = stamp_of(path);
  if (written_long_ago(last, settle) && !open_for_writing(path)) {
    *quiet = last;
    return Settled::kQuiet;
  }
  for (;;) {
    if (std::chrono::steady_clock::now() + settle > give_up) return Settled::kStillChanging;
    if (!pause(settle)) return Settled::kStopping;
    const FileStamp now = stamp_of(path);
    if (now == last && !open_for_writing(path)) {
      *quiet = now;
      return Settled::kQuiet;
    }
    last = now;
  }
}

}  // namespace rdmactl::agent_detail
