// SPDX-License-Identifier: Apache-2.0
// A private copy of a firmware image, so that what is burnt is what was checked: the file is read
// once into a memfd, which is handed to mstflint (FirmwareToolGuard::image_fd) and named by it
// /dev/fd/N, its own descriptor. A file replaced or rewritten at the image's path afterwards reaches
// nothing, and the copy lives as long as the tool that reads it (mstflint opens the image again by
// name for each read: mlxfwops/lib/flint_io.cpp FImage::read), rdmactl alive or not.
#pragma once

#include <string>

#include "agent/core/fd.h"
#include "agent/core/result.h"

namespace rdmactl {

struct FirmwareImageCopy {
  UniqueFd fd;       // the memfd, close-on-exec: handed to a tool explicitly
  std::string path;  // "/dev/fd/N", as the tool that inherits it names it
};

// Errors: the image cannot be opened or read, is not a regular file, or is over 1 GiB (kPlatform,
// `where` the image's path).
Result<FirmwareImageCopy> firmware_image_copy(const std::string& image);

}  // namespace rdmactl
