// SPDX-License-Identifier: Apache-2.0
// The checked spec kept between runs: its entries. (Where they are kept, and when they are used:
// agent/cli/spec_cache.h.) Loading a spec (YAML parse, schema, semantic checks) is most
// of what `plan` costs on a large host: 60 % at 4,096 interfaces. The typed result depends only on
// the spec's bytes, the name it is shown under and the program that checked it, so a valid spec's
// FabricSpec is kept in /var/cache/rdmactl (under --root), field by field, in a file named by the SHA-256
// of those three (the program by its ELF build ID, which changes with every build). A later run
// with the same three reads it back instead of loading the YAML.
//
// The cache never changes an answer: a spec that does not load is never kept (its problems are
// found again), a file that cannot be read, parsed or converted, or whose content does not match
// the SHA-256 it carries (a bit flipped on disk), is a miss, and a directory that
// cannot be made or written (a user without root, a read-only /var) only means no cache. The
// directory is rdmactl's own (own_files.h: 0700, owned by root or this user, no links followed)
// and must be writable by no one else.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "agent/spec/spec.h"

namespace rdmactl {

// An entry's file name: the prefix, the SHA-256 of its key in hex, the suffix.
inline constexpr const char* kSpecCacheEntryPrefix = "spec-";
inline constexpr const char* kSpecCacheEntrySuffix = ".bin";

// The running program's GNU build ID as hex; empty when it has none (then nothing is cached).
std::string program_build_id();
// The cache file's name for a spec's text shown as `file`, checked by the program `build_id`.
std::string spec_cache_name(const std::string& build_id, const std::string& file, const std::string& text);
// A valid spec as the cache keeps it (everything but its text), and back. The text is the spec's
// bytes, which the caller read; nullopt when the bytes are not a cache entry for this name and text.
std::string spec_cache_bytes(const FabricSpec& spec, const std::string& name);
std::optional<FabricSpec> spec_from_cache_bytes(const std::string& bytes, const std::string& name, std::string text);

}  // namespace rdmactl
