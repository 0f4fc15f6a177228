// SPDX-License-Identifier: Apache-2.0
// HostFs: every read and write of sysfs, configfs, debugfs and /proc goes through here.
//
// Built with a root directory (`--root`), so the same code reads a live host at "/" and a fixture
// tree in tests and demos. Paths are given as on a live host ("/sys/class/net/eth0/mtu").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

class HostFs {
 public:
  explicit HostFs(std::string root = "/");

  const std::string& root() const { return root_; }
  // The real path of a host path under the root.
  std::string path(std::string_view host_path) const;

  bool exists(std::string_view host_path) const;
  // The file's text with trailing newlines and spaces cut (sysfs values end in "\n").
  Result<std::string> read(std::string_view host_path) const;
  // The file's bytes exactly as stored: configuration files that are edited line by line
  // (opensm.conf) must keep their final newline and trailing blanks.
  Result<std::string> read_file(std::string_view host_path) const;
  // Writes the whole value in one write(2), as sysfs expects; the kernel's errno is kept.
  Result<void> write(std::string_view host_path, std::string_view value) const;
  // Replaces a regular file (configuration such as /etc/opensm/opensm.conf, rdmactl's own state)
  // with `content`: written to a temporary file beside it, then renamed over it, so readers see
  // the old or the new file, never half of one. Missing parent directories are created.
  Result<void> replace_file(std::string_view host_path, std::string_view content, unsigned mode = 0644) const;
  // Entry names of a directory, sorted, without "." and "..".
  Result<std::vector<std::string>> list(std::string_view host_path) const;
  // The target of a symbolic link, as stored (often relative: "../../devices/pci0000:00/...").
  Result<std::string> read_link(std::string_view host_path) const;
  Result<void> make_directory(std::string_view host_path) const;
  // Removes an empty directory (configfs groups: rmdir also drops the groups the kernel made in
  // it); a directory that is already gone is fine.
  Result<void> remove_directory(std::string_view host_path) const;

  // Test seam: a model of the kernel behind a fixture tree's files (tests/unit/models/), never set
  // on a live host. HostFs runs every operation on the fixture's plain files exactly as on a live
  // host (open with O_TRUNC and one write(2), mkdir, rmdir); the model then does what the kernel's
  // store, mkdir and rmdir handlers would.
  class KernelModel {
   public:
    virtual ~KernelModel() = default;
    // After `value` was written to the file of host path `path` (`real_path` under the root), which
    // held `previous`. nullopt: the file is not modelled (a plain file keeps what was written).
    // 0: the kernel's store function takes the value; the model leaves in the file what its show
    // function prints then. An errno: the store function refuses it; HostFs puts `previous` back
    // and fails the write with that errno.
    virtual std::optional<int> stored(std::string_view path, const std::string& real_path,
                                      const std::string& previous, std::string_view value) = 0;
    // After mkdir made `path`: 0 or nullopt to keep it (the model may fill it, as configfs does
    // with default groups), or an errno to refuse it (HostFs removes it and fails with that errno).
    virtual std::optional<int> made_directory(std::string_view path, const std::string& real_path) = 0;
    // Before rmdir of `path`: configfs drops a group's default groups with it, so the model empties
    // what the kernel made in it.
    virtual void removing_directory(std::string_view path, const std::string& real_path) = 0;
  };
  void set_kernel_model(std::shared_ptr<KernelModel> model) { model_ = std::move(model); }

 private:
  std::string root_;
  std::shared_ptr<KernelModel> model_;
};

}  // namespace rdmactl
