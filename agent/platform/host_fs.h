// HostFs: every read and write of sysfs, configfs, debugfs and /proc goes through here.
//
// Built with a root directory (`--root`), so the same code reads a live host at "/" and a fixture
// tree in tests and demos. Paths are given as on a live host ("/sys/class/net/eth0/mtu").
#pragma once

#include <functional>
#include <memory>
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

  // Test seam for fixture trees. A fixture holds plain files, but some sysfs attributes are not
  // plain values: a write to a vendor driver's qos/dscp2prio ("26 3") updates one row of a 64-row
  // table that a read returns whole. An emulator claims writes to host paths ending in `suffix`
  // and does what the driver's store function does with them (the real file path is passed in).
  // Never used on a live host.
  using AttributeStore = std::function<Result<void>(const std::string& real_path, std::string_view value)>;
  void emulate_attribute(std::string suffix, AttributeStore store);

 private:
  std::string root_;
  std::shared_ptr<std::vector<std::pair<std::string, AttributeStore>>> emulated_;
};

}  // namespace rdmactl
