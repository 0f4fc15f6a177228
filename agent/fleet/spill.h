// SPDX-License-Identifier: Apache-2.0
// Text written once and read back later, out of memory: an unnamed temporary file (O_TMPFILE in
// $TMPDIR, else /tmp; it disappears with the process, whatever way it ends). The fleet plan keeps
// each node's rendered part of the report here, so that its memory does not grow with the fleet:
// what it keeps per node is where that part lies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "agent/core/result.h"

namespace rdmactl {

class Spill {
 public:
  struct Piece {
    uint64_t offset = 0;
    uint64_t length = 0;
  };

  // The temporary file, or an error naming the directory it could not be made in.
  static Result<Spill> open();
  Spill(Spill&& other) noexcept;
  Spill& operator=(Spill&&) = delete;
  Spill(const Spill&) = delete;
  ~Spill();

  Result<Piece> append(std::string_view text);
  // A piece appended before (the pending writes are flushed first).
  Result<std::string> read(const Piece& piece);
  uint64_t size() const { return size_; }

 private:
  explicit Spill(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  Result<void> flush();

  int fd_ = -1;
  std::string dir_;
  std::string pending_;  // written in large blocks
  uint64_t size_ = 0;    // appended so far, pending included
  uint64_t flushed_ = 0;
};

}  // namespace rdmactl
