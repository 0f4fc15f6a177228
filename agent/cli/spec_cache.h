// SPDX-License-Identifier: Apache-2.0
// Where the spec cache's entries (agent/spec/cache.h) are kept: /var/cache/rdmactl under --root,
// rdmactl's own directory (agent/platform/own_files.h), and how a command loads its spec through it.
#pragma once

#include <cstddef>
#include <string>

#include "agent/core/result.h"
#include "agent/spec/spec.h"

namespace rdmactl::cli {

// The host path of the cache directory (prefix it with --root).
inline constexpr const char* kSpecCacheDirectory = "/var/cache/rdmactl";
// Entries kept: a node sees a handful of specs (the live one, the one an Ansible run pushes);
// after a write the oldest beyond these go.
inline constexpr std::size_t kSpecCacheEntries = 16;

// load_spec(path), through the cache in `dir` (a real path; empty: no cache). A hit is the entry;
// a miss loads the spec and, when it is valid, keeps it. Nothing about the cache is ever an error:
// a directory that cannot be made or is not rdmactl's own only means no cache.
Result<FabricSpec> load_spec_cached(const std::string& path, const std::string& dir);

}  // namespace rdmactl::cli
