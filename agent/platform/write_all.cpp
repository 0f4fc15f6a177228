// SPDX-License-Identifier: Apache-2.0
// write_all (see write_all.h).
#include "agent/platform/write_all.h"

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace rdmactl {

int write_all(int fd, std::string_view data) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    written += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace rdmactl
