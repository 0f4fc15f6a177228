// SPDX-License-Identifier: Apache-2.0
// rdmactl's own files: the host lock (/run/rdmactl), the apply journal and the link-type record
// (/var/lib/rdmactl), the audit log (/var/log/rdmactl).
//
// They are written as root, in directories that a --root tree, or anyone who could write /run or
// /var before rdmactl first ran, might have filled with symbolic links: a link named audit.jsonl
// pointing at /etc/shadow must not get audit lines appended to it. So each is opened relative to
// its directory's descriptor with O_NOFOLLOW, and the directory itself is opened with O_NOFOLLOW
// and must be a directory that belongs to root or to this process's user. The directories above it
// (/run, a --root tree's var/log) are the administrator's and may be links.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "agent/core/fd.h"
#include "agent/core/result.h"

namespace rdmactl {

// The directory `dir` (a real path), created with `mode` (and its parents) when missing.
Result<UniqueFd> open_own_directory(const std::string& dir, mode_t mode);
// The file `name` in it, opened with `flags` (plus O_NOFOLLOW and O_CLOEXEC); created with
// `mode` under O_CREAT. A symbolic link there is refused (ELOOP), and so is anything but a
// regular file.
Result<UniqueFd> open_own_file(const std::string& dir, const std::string& name, int flags, mode_t mode,
                               mode_t dir_mode);
// The file's bytes, at most `limit` of them; nullopt when there is none.
Result<std::optional<std::string>> read_own_file(const std::string& dir, const std::string& name, std::size_t limit);
// Replaces the file durably: a temporary file beside it (created anew, O_EXCL), written, fsync'd,
// renamed over it, and the directory fsync'd: after a crash the file is whole or as before.
Result<void> replace_own_file(const std::string& dir, const std::string& name, const std::string& content,
                              mode_t mode, mode_t dir_mode);
// Removes it (none is fine), and fsyncs the directory.
Result<void> remove_own_file(const std::string& dir, const std::string& name);

}  // namespace rdmactl
