// SPDX-License-Identifier: Apache-2.0
// SpecWatch: inotify on the directory of the agent's spec file, so that a new spec is seen when it
// lands instead of at the next poll.
//
// The ways a spec file is replaced, and what each looks like in the directory:
//   - an editor or an atomic writer (Ansible's copy, `mv f.new f`): IN_MOVED_TO of the name;
//   - scp, cat > f, a git checkout (which unlinks and writes a new file): IN_CREATE or IN_MODIFY
//     while it is written, IN_CLOSE_WRITE when the writer closes it;
//   - a Kubernetes ConfigMap volume: the spec is a symlink `f -> ..data/f`, and kubelet swaps the
//     `..data` symlink by renaming `..data_tmp` over it (IN_MOVED_TO of "..data"
//     in the same directory; AtomicWriter in kubernetes/pkg/volume/util/atomic_writer.go);
//   - a symlink elsewhere (/etc/rdmactl/fabric.yaml -> /srv/gitops/fabric.yaml): the same events
//     in the target's directory, which is watched too (and again whenever the link changes).
// A rename or a close after writing gives a whole file: the agent reads it at once. A create or a
// modify is a file being written: the agent waits for it to stop changing, as it does for a poll.
//
// The agent keeps its stat+hash poll as the fallback: inotify sees nothing of a network file
// system's remote writes, and a host out of inotify watches still converges.
#pragma once

#include <set>
#include <string>

#include "agent/core/result.h"

namespace rdmactl {

class SpecWatch {
 public:
  // What a batch of events says about the spec.
  enum class Seen {
    kNothing,   // events about other files only
    kWhole,     // the spec was replaced whole (renamed over, closed after writing, a symlink swapped)
    kChanging,  // the spec is being written (created, modified, removed), or events were lost
  };

  // Watches the directory of `spec_path` (and of its symlink target). Fails when inotify is
  // unavailable (no watches left: fs.inotify.max_user_watches) or the directory does not exist.
  static Result<SpecWatch> open(const std::string& spec_path);
  SpecWatch(SpecWatch&& other) noexcept;
  SpecWatch& operator=(SpecWatch&& other) noexcept;
  SpecWatch(const SpecWatch&) = delete;
  SpecWatch& operator=(const SpecWatch&) = delete;
  ~SpecWatch();

  // The inotify descriptor (non-blocking), to poll for reading.
  int fd() const { return fd_; }
  // Reads every pending event and says what they mean for the spec; re-watches the symlink
  // target's directory when the link now points elsewhere.
  Seen read_events();

 private:
  SpecWatch(int fd, std::string spec_path) : fd_(fd), spec_path_(std::move(spec_path)) {}
  // (Re)computes the names and directories of interest and adds watches for new directories.
  Result<void> arm();

  int fd_ = -1;
  std::string spec_path_;
  std::set<std::string> dirs_;          // watched directories
  std::set<std::string> names_;         // "dir/name" entries whose events concern the spec
};

}  // namespace rdmactl
