// SPDX-License-Identifier: Apache-2.0
// PciConfigSpace through libpci's linux-sysfs method (pci_config.h). Compiled outside the unity
// build: <pci/pci.h> defines `byte`, `word` and the PCI_* register macros at global scope.
#include "agent/platform/pci_config.h"

#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

extern "C" {
#include <pci/pci.h>
}

namespace rdmactl {
namespace {

// libpci reports problems through callbacks without a context pointer: the last warning of this
// thread (with the errno at the time) is kept for the error that follows it.
thread_local std::string libpci_warning;
thread_local int libpci_errno = 0;

void on_libpci_warning(char* format, ...) {
  libpci_errno = errno;  // sysfs_write calls this right after the failed pwrite
  std::array<char, 512> text{};
  va_list args;
  va_start(args, format);
  std::vsnprintf(text.data(), text.size(), format, args);
  va_end(args);
  libpci_warning = text.data();
}

// libpci's error callback must not return (PCI_NONRET). With the method chosen, a device made by
// pci_get_dev and aligned word accesses, it is reached only for a path over 1024 characters
// (sysfs_obj_name), which open_pci_config refuses first.
[[noreturn]] void on_libpci_error(char* format, ...) {
  std::array<char, 512> text{};
  va_list args;
  va_start(args, format);
  std::vsnprintf(text.data(), text.size(), format, args);
  va_end(args);
  spdlog::critical("libpci: {}", text.data());
  std::abort();
}

void on_libpci_debug(char*, ...) {}

struct AccessDeleter {
  void operator()(pci_access* a) const { pci_cleanup(a); }
};
struct DeviceDeleter {
  void operator()(pci_dev* d) const { pci_free_dev(d); }
};

// sysfs_obj_name's buffer (OBJNAMELEN): "<sysfs.path>/devices/<bdf>/config" must fit in it.
constexpr size_t kLibpciPathMax = 1024 - 64;

class LibpciConfigSpace final : public PciConfigSpace {
 public:
  LibpciConfigSpace(std::unique_ptr<pci_access, AccessDeleter> access, std::unique_ptr<pci_dev, DeviceDeleter> dev,
                    std::string bdf)
      : access_(std::move(access)), dev_(std::move(dev)), bdf_(std::move(bdf)) {}
  ~LibpciConfigSpace() override { dev_.reset(); }  // the device before the access it belongs to

  Result<std::optional<int>> express_capability() override {
    pci_cap* cap = pci_find_cap(dev_.get(), PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
    if (cap == nullptr) return std::optional<int>();
    return std::optional<int>(static_cast<int>(cap->addr));
  }

  Result<uint16_t> read_word(int pos) override {
    std::array<u8, 2> bytes{};
    libpci_warning.clear();
    if (!pci_read_block(dev_.get(), pos, bytes.data(), static_cast<int>(bytes.size()))) {
      return failed("reading", pos);
    }
    return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));  // config space is little-endian
  }

  Result<void> write_word(int pos, uint16_t value) override {
    libpci_warning.clear();
    libpci_errno = 0;
    if (!pci_write_word(dev_.get(), pos, value)) return failed("writing", pos);
    return ok();
  }

 private:
  Error failed(const std::string& what, int pos) const {
    char offset[16];
    std::snprintf(offset, sizeof offset, "0x%x", pos);
    std::string message = what + " PCI configuration space of " + bdf_ + " at " + offset + " failed";
    if (!libpci_warning.empty()) message += " (libpci: " + libpci_warning + ")";
    Error e = libpci_errno != 0 ? make_errno_error(message, libpci_errno, "pci/" + bdf_)
                                : make_error(ErrorKind::kPlatform, message, "pci/" + bdf_);
    return e;
  }

  std::unique_ptr<pci_access, AccessDeleter> access_;
  std::unique_ptr<pci_dev, DeviceDeleter> dev_;
  std::string bdf_;
};

}  // namespace

std::optional<int> pcie_size_bytes(unsigned code) {
  if (code > 5) return std::nullopt;  // 110b and 111b are reserved (PCIe Base, Device Control)
  return 128 << code;
}

std::optional<unsigned> pcie_size_code(int bytes) {
  for (unsigned code = 0; code <= 5; ++code) {
    if (bytes == (128 << code)) return code;
  }
  return std::nullopt;
}

Result<std::unique_ptr<PciConfigSpace>> open_pci_config(const HostFs& fs, const std::string& bdf) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(bdf.c_str(), "%4x:%2x:%2x.%1u%c", &domain, &bus, &device, &function, &tail) != 4 || function > 7) {
    return make_error(ErrorKind::kInvalidSpec, "not a PCI address (domain:bus:device.function): " + bdf);
  }
  std::string sysfs_path = fs.path("/sys/bus/pci");
  if (sysfs_path.size() > kLibpciPathMax) {
    return make_error(ErrorKind::kUsage, "the --root path is too long for libpci: " + fs.root());
  }
  if (!fs.exists("/sys/bus/pci/devices/" + bdf + "/config")) {
    return make_error(ErrorKind::kNotFound, "no PCI function " + bdf + " (no /sys/bus/pci/devices/" + bdf + "/config)",
                      "pci/" + bdf);
  }
  std::unique_ptr<pci_access, AccessDeleter> access(pci_alloc());
  if (!access) return make_error(ErrorKind::kPlatform, "libpci: pci_alloc failed");
  access->method = PCI_ACCESS_SYS_BUS_PCI;  // never /proc/bus/pci or direct port I/O
  access->error = on_libpci_error;
  access->warning = on_libpci_warning;
  access->debug = on_libpci_debug;
  std::string param = "sysfs.path";
  if (pci_set_param(access.get(), param.data(), sysfs_path.data()) != 0) {
    return make_error(ErrorKind::kPlatform, "libpci has no sysfs.path parameter (not built with linux-sysfs)");
  }
  pci_init(access.get());
  std::unique_ptr<pci_dev, DeviceDeleter> dev(pci_get_dev(access.get(), static_cast<int>(domain), static_cast<int>(bus),
                                                          static_cast<int>(device), static_cast<int>(function)));
  if (!dev) return make_error(ErrorKind::kPlatform, "libpci: pci_get_dev failed for " + bdf);
  // The kernel gives the first 64 bytes to anyone and the rest only to CAP_SYS_ADMIN
  // (drivers/pci/pci-sysfs.c pci_read_config); the capabilities live beyond them.
  std::array<u8, 256> header{};
  libpci_warning.clear();
  if (!pci_read_block(dev.get(), 0, header.data(), 64)) {
    return make_error(ErrorKind::kPlatform, "cannot read the PCI configuration space of " + bdf +
                                                (libpci_warning.empty() ? "" : " (libpci: " + libpci_warning + ")"),
                      "pci/" + bdf);
  }
  if (!pci_read_block(dev.get(), 0, header.data(), static_cast<int>(header.size()))) {
    return make_error(ErrorKind::kPermission,
                      "only the first 64 bytes of the PCI configuration space of " + bdf +
                          " are readable: the kernel gives the capabilities to root (CAP_SYS_ADMIN) only; run rdmactl as root",
                      "pci/" + bdf);
  }
  return std::unique_ptr<PciConfigSpace>(new LibpciConfigSpace(std::move(access), std::move(dev), bdf));
}

Result<PcieDeviceControl> read_device_control(PciConfigSpace& config, const std::string& bdf) {
  auto cap = config.express_capability();
  if (!cap) return cap.error();
  if (!*cap) {
    return make_error(ErrorKind::kNotSupported, bdf + " has no PCI Express capability (a conventional PCI function)",
                      "pci/" + bdf);
  }
  auto word = config.read_word(**cap + kPciExpDevCtl);
  if (!word) return word.error();
  PcieDeviceControl out;
  out.express_capability = **cap;
  out.value = *word;
  out.max_read_request = pcie_size_bytes((*word & kPciExpDevCtlReadRq) >> 12);
  out.max_payload = pcie_size_bytes((*word & kPciExpDevCtlPayload) >> 5);
  return out;
}

Result<PcieDeviceControl> write_max_read_request(PciConfigSpace& config, const std::string& bdf, int bytes) {
  const std::optional<unsigned> code = pcie_size_code(bytes);
  if (!code) {
    return make_error(ErrorKind::kInvalidSpec,
                      "Max_Read_Request_Size is 128, 256, 512, 1024, 2048 or 4096 bytes, not " + std::to_string(bytes),
                      "pci/" + bdf);
  }
  auto before = read_device_control(config, bdf);
  if (!before) return before.error();
  const auto value = static_cast<uint16_t>((before->value & ~kPciExpDevCtlReadRq) | (*code << 12));
  if (value != before->value) {
    if (auto written = config.write_word(before->express_capability + kPciExpDevCtl, value); !written) {
      return written.error();
    }
  }
  return read_device_control(config, bdf);
}

}  // namespace rdmactl
