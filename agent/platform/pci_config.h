// SPDX-License-Identifier: Apache-2.0
// PCI configuration space of one function, through pciutils' libpci (Debian libpci-dev), whose
// linux-sysfs method reads and writes /sys/bus/pci/devices/<bdf>/config. Its "sysfs.path" parameter
// is set to <root>/sys/bus/pci, so a fixture tree (a `config` file under --root) stands for a host.
//
// What rdmactl reads and writes here is the PCI Express capability's Device Control register
// (PCI_EXP_DEVCTL, include/uapi/linux/pci_regs.h): Max_Read_Request_Size (bits 14:12) and, read only,
// Max_Payload_Size (bits 7:5). Both encode 128 << n bytes, n 0..5 (6 and 7 are reserved).
//
// libpci reports a failed read or write only through its warning callback and a 0 return
// (lib/sysfs.c sysfs_read/sysfs_write in pciutils 3.9): PciConfigSpace turns both into errors with
// the errno, and a write is followed by a read back, so a write the kernel dropped or rewrote is
// seen. The kernel refuses config writes under lockdown (drivers/pci/pci-sysfs.c pci_write_config:
// security_locked_down(LOCKDOWN_PCI_ACCESS) returns -EPERM, security/lockdown/lockdown.c), and gives
// a caller without CAP_SYS_ADMIN only the first 64 bytes (pci_read_config).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"

namespace rdmactl {

// PCI_EXP_DEVCTL and its fields (pci_regs.h).
inline constexpr int kPciExpDevCtl = 0x08;
inline constexpr uint16_t kPciExpDevCtlReadRq = 0x7000;   // PCI_EXP_DEVCTL_READRQ
inline constexpr uint16_t kPciExpDevCtlPayload = 0x00e0;  // PCI_EXP_DEVCTL_PAYLOAD

// 128 << code bytes for codes 0..5; nullopt for the reserved 6 and 7.
std::optional<int> pcie_size_bytes(unsigned code);
// The code of 128, 256, ..., 4096 bytes; nullopt for anything else.
std::optional<unsigned> pcie_size_code(int bytes);

// One function's configuration space. An interface, so that tests can put a model of what the
// kernel does to a write (lockdown, a platform that rewrites the value) in front of libpci.
class PciConfigSpace {
 public:
  virtual ~PciConfigSpace() = default;
  // The offset of the PCI Express capability (PCI_CAP_ID_EXP), nullopt when the function has none.
  virtual Result<std::optional<int>> express_capability() = 0;
  virtual Result<uint16_t> read_word(int pos) = 0;
  // Writes the word; an error carries the errno the kernel returned.
  virtual Result<void> write_word(int pos, uint16_t value) = 0;
};

// libpci over <fs root>/sys/bus/pci for function `bdf` ("0000:3b:00.0"). Fails when the function
// has no readable configuration space (no such function; not root: only 64 bytes are readable).
Result<std::unique_ptr<PciConfigSpace>> open_pci_config(const HostFs& fs, const std::string& bdf);

// How a reconciler opens a function's configuration space (tests pass their own).
using PciConfigOpener = std::function<Result<std::unique_ptr<PciConfigSpace>>(const HostFs&, const std::string&)>;

struct PcieDeviceControl {
  int express_capability = 0;  // offset of the capability
  uint16_t value = 0;          // the whole register
  std::optional<int> max_read_request;  // bytes; nullopt: a reserved encoding
  std::optional<int> max_payload;
};

// The Device Control register, or kNotSupported when the function has no PCI Express capability.
Result<PcieDeviceControl> read_device_control(PciConfigSpace& config, const std::string& bdf);

// Read-modify-write of Max_Read_Request_Size only (every other Device Control bit is written back
// as read), then a read back: returns the register as it reads after the write.
Result<PcieDeviceControl> write_max_read_request(PciConfigSpace& config, const std::string& bdf, int bytes);

}  // namespace rdmactl
