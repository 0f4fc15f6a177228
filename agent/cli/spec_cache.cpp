// SPDX-License-Identifier: Apache-2.0
// The spec cache's directory (spec_cache.h).
#include "agent/cli/spec_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "agent/platform/own_files.h"
#include "agent/spec/cache.h"

namespace rdmactl::cli {
namespace {

constexpr mode_t kCacheDirectoryMode = 0700;
// A spec is at most 4 MiB of YAML; its typed form is of the same order.
constexpr std::size_t kMaxEntryBytes = 64u << 20;

// Why `dir` is not a cache to believe, or nullopt when it is: made when missing (0700), owned by
// root or this user (open_own_directory), and writable by no one else, who could plant an entry.
std::optional<std::string> not_own_directory(const std::string& dir) {
  auto directory = open_own_directory(dir, kCacheDirectoryMode);
  if (!directory) return directory.error().to_string();
  struct stat st {};
  if (::fstat(directory->get(), &st) != 0) return dir + ": cannot stat: " + std::strerror(errno);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return dir + ": writable by others than its owner: not used";
  return std::nullopt;
}

// Removes the oldest entries beyond kSpecCacheEntries (by modification time, then name), never
// `kept`, the one just written (file times are as coarse as the kernel's tick: a tie is likely).
void prune(const std::string& dir, const std::string& kept) {
  auto directory = open_own_directory(dir, kCacheDirectoryMode);
  if (!directory) return;
  const int listing_fd = ::dup(directory->get());
  if (listing_fd < 0) return;
  DIR* listing = ::fdopendir(listing_fd);
  if (listing == nullptr) {
    ::close(listing_fd);
    return;
  }
  std::vector<std::pair<std::pair<long long, long long>, std::string>> entries;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.rfind(kSpecCacheEntryPrefix, 0) != 0 || name.size() < std::strlen(kSpecCacheEntrySuffix) ||
        name.compare(name.size() - std::strlen(kSpecCacheEntrySuffix), std::string::npos, kSpecCacheEntrySuffix) != 0) {
      continue;
    }
    struct stat st {};
    if (name == kept || ::fstatat(directory->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    entries.push_back({{st.st_mtim.tv_sec, st.st_mtim.tv_nsec}, name});
  }
  ::closedir(listing);
  if (entries.size() < kSpecCacheEntries) return;
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a > b; });
  for (std::size_t i = kSpecCacheEntries - 1; i < entries.size(); ++i) {
    ::unlinkat(directory->get(), entries[i].second.c_str(), 0);
  }
}

}  // namespace

Result<FabricSpec> load_spec_cached(const std::string& path, const std::string& dir) {
  auto text = read_spec_input(path, SpecInput::kFileOrPipe);
  if (!text) return text.error();
  const std::string name = spec_input_name(path);
  const std::string build_id = program_build_id();
  if (dir.empty() || build_id.empty()) return load_spec_text(*text, name);

  const auto started = std::chrono::steady_clock::now();
  const std::string entry_name = spec_cache_name(build_id, name, *text);
  // The directory must be rdmactl's own before an entry in it is believed; a user who cannot make
  // it has no cache.
  if (auto problem = not_own_directory(dir)) {
    spdlog::debug("spec cache: none: {}", *problem);
    return load_spec_text(*text, name);
  }
  auto stored = read_own_file(dir, entry_name, kMaxEntryBytes);
  if (stored && *stored) {
    if (auto spec = spec_from_cache_bytes(**stored, name, *text)) {
      spdlog::debug("spec cache: {} read from {}/{} in {:.1f} ms", name, dir, entry_name,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
      return std::move(*spec);
    }
    // Same build, same spec, same name: anything but the bytes written is damage (the disk, a
    // hand), worth a word. The entry is written again below.
    spdlog::warn("spec cache: {}/{} is damaged: not used, loading the spec", dir, entry_name);
  } else if (!stored) {
    spdlog::debug("spec cache: {}", stored.error().to_string());
  }

  auto spec = load_spec_text(*text, name);
  if (!spec) return spec;
  if (auto written = replace_own_file(dir, entry_name, spec_cache_bytes(*spec, name), 0600, kCacheDirectoryMode);
      !written) {
    spdlog::debug("spec cache: not kept: {}", written.error().to_string());
  } else {
    prune(dir, entry_name);
  }
  return spec;
}

}  // namespace rdmactl::cli
