// SPDX-License-Identifier: Apache-2.0
// Text written once and read back later (see spill.h).
#include "agent/fleet/spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace rdmactl {
namespace {

// Pending text is written once it reaches this much: few system calls, little memory.
constexpr size_t kBlock = 1 << 20;

}  // namespace

Result<Spill> Spill::open() {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string name = dir + "/rdmactl-report.XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return make_errno_error("cannot make a temporary file for the report (TMPDIR)", errno, dir);
  return Spill(fd, dir);
}

Spill::Spill(Spill&& other) noexcept
    : fd_(other.fd_), dir_(std::move(other.dir_)), pending_(std::move(other.pending_)), size_(other.size_),
      flushed_(other.flushed_) {
  other.fd_ = -1;
}

Spill::~Spill() {
  if (fd_ >= 0) ::close(fd_);
}

Result<void> Spill::flush() {
  size_t at = 0;
  while (at < pending_.size()) {
    const ssize_t n = ::pwrite(fd_, pending_.data() + at, pending_.size() - at, static_cast<off_t>(flushed_ + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_errno_error("cannot write the report's temporary file", n < 0 ? errno : EIO, dir_);
    at += static_cast<size_t>(n);
  }
  flushed_ += pending_.size();
  pending_.clear();
  return ok();
}

Result<Spill::Piece> Spill::append(std::string_view text) {
  const Piece piece{size_, text.size()};
  pending_.append(text);
  size_ += text.size();
  if (pending_.size() >= kBlock) {
    if (auto flushed = flush(); !flushed) return flushed.error();
  }
  return piece;
}

Result<std::string> Spill::read(const Piece& piece) {
  if (piece.offset + piece.length > flushed_) {
    if (auto flushed = flush(); !flushed) return flushed.error();
  }
  std::string out(piece.length, '\0');
  size_t at = 0;
  while (at < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + at, out.size() - at, static_cast<off_t>(piece.offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_errno_error("cannot read the report's temporary file", n < 0 ? errno : EIO, dir_);
    at += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace rdmactl
