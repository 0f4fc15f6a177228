// SPDX-License-Identifier: Apache-2.0
// Bounded, non-blocking reads of untrusted input files (see input.h).
#include "agent/spec/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "agent/core/fd.h"

namespace rdmactl {
namespace {

constexpr std::size_t kChunk = 64 * 1024;

Error not_a_regular_file(const std::string& name, mode_t mode) {
  return make_error(ErrorKind::kInvalidSpec,
                    name + " is " + file_type_phrase(mode) + ", not a regular file: it is not read");
}

Error too_large(const std::string& name, std::size_t limit, const std::string& how) {
  return make_error(ErrorKind::kInvalidSpec,
                    name + " is larger than " + size_text(limit) + " (" + how + "): it is not read");
}

// At most limit + 1 bytes from `fd`, so that more than `limit` is told from exactly it (`grown`
// says how there came to be more).
Result<std::string> read_descriptor(int fd, std::size_t limit, const std::string& name, const std::string& grown) {
  std::string text;
  char buffer[kChunk];
  while (text.size() <= limit) {
    const std::size_t want = std::min(sizeof buffer, limit + 1 - text.size());
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_errno_error("cannot read " + name, errno);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  if (text.size() > limit) return too_large(name, limit, grown);
  return text;
}

}  // namespace

std::string file_type_phrase(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

std::string size_text(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024;
  constexpr std::size_t kMiB = 1024 * kKiB;
  char text[32];
  if (bytes >= kMiB && bytes % kMiB == 0) {
    std::snprintf(text, sizeof text, "%zu MiB", bytes / kMiB);
  } else if (bytes >= kMiB) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else if (bytes >= kKiB && bytes % kKiB == 0) {
    std::snprintf(text, sizeof text, "%zu KiB", bytes / kKiB);
  } else if (bytes >= kKiB) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / kKiB);
  } else {
    std::snprintf(text, sizeof text, "%zu bytes", bytes);
  }
  return text;
}

Result<std::string> read_regular_file(const std::string& path, std::size_t limit, const std::string& name) {
  // stat first: a FIFO or a device is refused without being opened at all.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_errno_error("cannot open " + name, errno);
  if (!S_ISREG(st.st_mode)) return not_a_regular_file(name, st.st_mode);
  if (static_cast<std::size_t>(st.st_size) > limit) {
    return too_large(name, limit, std::to_string(st.st_size) + " bytes");
  }
  // O_NONBLOCK: if a FIFO was swapped in after the stat, open() still returns at once.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return make_errno_error("cannot open " + name, errno);
  if (::fstat(fd.get(), &st) != 0) return make_errno_error("cannot stat " + name, errno);
  if (!S_ISREG(st.st_mode)) return not_a_regular_file(name, st.st_mode);

  return read_descriptor(fd.get(), limit, name, "it grew while it was read");
}

Result<std::string> read_fifo(const std::string& path, std::size_t limit, const std::string& name) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return make_errno_error("cannot open " + name, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_errno_error("cannot stat " + name, errno);
  if (!S_ISFIFO(st.st_mode)) {
    return make_error(ErrorKind::kInvalidSpec, name + " is " + file_type_phrase(st.st_mode) + ", not a pipe: it is not read");
  }
  return read_descriptor(fd.get(), limit, name, "more was written into the pipe");
}

Result<std::string> read_bounded_stream(std::istream& in, std::size_t limit, const std::string& name) {
  std::string text;
  char buffer[kChunk];
  while (text.size() <= limit && in) {
    const std::size_t want = std::min(sizeof buffer, limit + 1 - text.size());
    in.read(buffer, static_cast<std::streamsize>(want));
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(ErrorKind::kPlatform, "cannot read " + name);
  if (text.size() > limit) return too_large(name, limit, "more was sent");
  return text;
}

}  // namespace rdmactl
