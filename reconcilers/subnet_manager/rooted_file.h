// SPDX-License-Identifier: Apache-2.0
// OpenSM's files under --root DIR, found the way OpenSM itself would find them chrooted into DIR.
//
// opensm.conf's partition_config_file is a path the host's administrator (or whoever wrote the
// fixture tree or image DIR holds) chose: `/../../../..etc/x`, or a link in DIR to `/tmp`, must not
// make rdmactl write outside DIR. So a path is resolved as chroot(2) would: ".." never climbs above
// DIR, and a symbolic link is followed inside DIR (an absolute target starts again at DIR). The
// reads and writes then walk the resolved path one directory at a time with O_NOFOLLOW, so a link
// that appears between the resolution and the write is refused, never followed. Writes go to a
// temporary file made anew (O_EXCL) beside the target and renamed over it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/core/result.h"

namespace rdmactl::reconcilers::subnet_manager {

// `path` (absolute) resolved under `root` as chroot(root) would: an absolute path without ".",
// ".." or links, whose last components may not exist yet. Errors (with errno): a relative path,
// more than 40 links (ELOOP, as the kernel's MAXSYMLINKS), a component that is not a directory.
Result<std::string> resolve_in_root(const std::string& root, std::string_view path);

// The bytes of the file at a resolved path; std::nullopt when it does not exist.
Result<std::optional<std::string>> read_in_root(const std::string& root, const std::string& resolved);

// Replaces the file at a resolved path with `content` (missing directories made 0755), keeping the
// mode of the file it replaces (0644 for a new one).
Result<void> replace_in_root(const std::string& root, const std::string& resolved, std::string_view content);

// Removes the file at a resolved path; one already gone is fine.
Result<void> remove_in_root(const std::string& root, const std::string& resolved);

}  // namespace rdmactl::reconcilers::subnet_manager
