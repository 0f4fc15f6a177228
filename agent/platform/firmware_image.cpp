// SPDX-License-Identifier: Apache-2.0
#include "agent/platform/firmware_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "agent/platform/write_all.h"

namespace rdmactl {
namespace {

// Images are tens of MB; a file much larger is not one.
constexpr off_t kFirmwareImageMaxBytes = off_t{1} << 30;

}  // namespace

Result<FirmwareImageCopy> firmware_image_copy(const std::string& image) {
  UniqueFd in(::open(image.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!in.valid()) return make_errno_error("cannot open the image", errno, image);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return make_errno_error("cannot stat the image", errno, image);
  if (!S_ISREG(st.st_mode) || st.st_size > kFirmwareImageMaxBytes) {
    return make_error(ErrorKind::kPlatform, "not a firmware image file (not a regular file, or over 1 GiB)", image);
  }
  UniqueFd copy(::memfd_create("rdmactl-firmware-image", MFD_CLOEXEC));
  if (!copy.valid()) return make_errno_error("cannot make a private copy of the image", errno, image);
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_errno_error("cannot read the image", errno, image);
    if (n == 0) break;
    if (const int err = write_all(copy.get(), std::string_view(buffer, static_cast<size_t>(n))); err != 0) {
      return make_errno_error("cannot copy the image", err, image);
    }
  }
  FirmwareImageCopy out;
  out.path = "/dev/fd/" + std::to_string(copy.get());
  out.fd = std::move(copy);
  return out;
}

}  // namespace rdmactl
