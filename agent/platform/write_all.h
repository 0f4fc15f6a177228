// SPDX-License-Identifier: Apache-2.0
// write_all: the whole of a buffer written to a file descriptor, the loop that HostFs::replace_file
// and replace_own_file share.
#pragma once

#include <string_view>

namespace rdmactl {

// Writes all of `data` to `fd`, again after EINTR and after a short write. 0, or the errno of the
// write that failed.
int write_all(int fd, std::string_view data);

}  // namespace rdmactl
