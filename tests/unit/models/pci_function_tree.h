// SPDX-License-Identifier: Apache-2.0
// PCI functions in a fixture tree as the kernel lays them out: /sys/bus/pci/devices/<bdf> a link to
// the function's directory under /sys/devices (drivers/pci/bus.c, pci_bus_add_device), and its
// `config` file, the configuration space as pci_read_config returns it to root (4096 bytes for a
// PCI Express function, 256 for conventional PCI: pci_dev_config_attr_bin_size).
//
// The configuration space is built, not captured: no capture of a ConnectX config space is among
// the project's references. Its layout follows include/uapi/linux/pci_regs.h: the type 0 header
// (vendor 0x15b3, device 0x101d ConnectX-6 Dx, class 0x020000, Status with PCI_STATUS_CAP_LIST, the
// capability pointer at 0x34) and a capability list Power Management (0x40) -> VPD (0x48) -> PCI
// Express (0x60) -> MSI-X (0x9c), then the extended capabilities AER (0x100) and SR-IOV (0x180).
// Device Control reads as firmware leaves a ConnectX: MaxPayload 256 (code 1), MaxReadReq 512
// (code 2), with RlxdOrd+ and ExtTag+ set (0x2130), so a test sees that a write keeps those bits.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "agent/spec/spec.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {

// Offsets of the built configuration space.
inline constexpr int kFixtureExpressCap = 0x60;
inline constexpr int kFixtureDevCtl = kFixtureExpressCap + 0x08;  // PCI_EXP_DEVCTL
inline constexpr uint16_t kFixtureDevCtlValue = 0x2130;

struct ConfigSpaceImage {
  bool express = true;  // false: a conventional PCI function (no PCI Express capability)
  uint16_t device_control = kFixtureDevCtlValue;
  uint16_t total_vfs = 8;  // SR-IOV capability's TotalVFs (0: no SR-IOV capability)
};

inline std::vector<uint8_t> build_config_space(const ConfigSpaceImage& image) {
  std::vector<uint8_t> c(image.express ? 4096 : 256, 0);
  const auto put16 = [&](int at, uint16_t v) {
    c[at] = static_cast<uint8_t>(v & 0xff);
    c[at + 1] = static_cast<uint8_t>(v >> 8);
  };
  const auto put32 = [&](int at, uint32_t v) {
    put16(at, static_cast<uint16_t>(v & 0xffff));
    put16(at + 2, static_cast<uint16_t>(v >> 16));
  };
  put16(0x00, 0x15b3);  // PCI_VENDOR_ID
  put16(0x02, 0x101d);  // PCI_DEVICE_ID
  put16(0x04, 0x0406);  // PCI_COMMAND: memory, bus master, INTx disable
  put16(0x06, 0x0010);  // PCI_STATUS: PCI_STATUS_CAP_LIST
  c[0x0b] = 0x02;       // PCI_CLASS_DEVICE: network controller, Ethernet (0x0200)
  c[0x0e] = 0x80;       // PCI_HEADER_TYPE: normal, multi-function
  c[0x34] = 0x40;       // PCI_CAPABILITY_LIST
  // Power Management, next VPD.
  c[0x40] = 0x01;
  c[0x41] = 0x48;
  put16(0x42, 0x0003);
  // VPD, next PCI Express (or MSI-X for a conventional function).
  c[0x48] = 0x03;
  c[0x49] = image.express ? 0x60 : 0x9c;
  if (image.express) {
    c[0x60] = 0x10;  // PCI_CAP_ID_EXP
    c[0x61] = 0x9c;
    put16(0x62, 0x0002);                 // PCI_EXP_FLAGS: version 2, endpoint
    put32(0x64, 0x10008fe2);             // PCI_EXP_DEVCAP: MaxPayload 512, FLR
    put16(kFixtureDevCtl, image.device_control);
  }
  // MSI-X, last of the list.
  c[0x9c] = 0x11;
  c[0x9d] = 0x00;
  if (image.express) {
    put32(0x100, 0x18010001);  // AER, version 1, next 0x180
    put32(0x180, image.total_vfs ? 0x00010010u : 0u);  // SR-IOV, version 1, last
    put16(0x180 + 0x0e, image.total_vfs);              // PCI_SRIOV_TOTAL_VF
  }
  return c;
}

// /sys/bus/pci/devices/<bdf> -> the function's directory `device_dir` (a host path under /sys/devices).
inline void link_pci_device(const TempTree& tree, const std::string& bdf, const std::string& device_dir) {
  tree.symlink("../../.." + device_dir.substr(4), "/sys/bus/pci/devices/" + bdf);  // "../../../devices/..."
}

inline void write_config_space(const TempTree& tree, const std::string& device_dir, const ConfigSpaceImage& image) {
  const std::vector<uint8_t> bytes = build_config_space(image);
  tree.write(device_dir + "/config", std::string(bytes.begin(), bytes.end()));
}

// The 16-bit word at `offset` of a function's config file.
inline uint16_t config_word(const TempTree& tree, const std::string& device_dir, int offset) {
  const std::string bytes = tree.read(device_dir + "/config");
  if (bytes.size() < static_cast<size_t>(offset) + 2) return 0xffff;
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[offset]) | (static_cast<uint8_t>(bytes[offset + 1]) << 8));
}

// The two ConnectX-6 Dx functions of tests/fixtures/sysfs/cx6dx-roce.
inline const std::string kCx6Pf0 = "0000:3b:00.0";
inline const std::string kCx6Pf1 = "0000:3b:00.1";
inline std::string cx6_device_dir(const std::string& bdf) { return "/sys/devices/pci0000:3a/0000:3a:00.0/" + bdf; }

// A spec interface naming `netdev`, set at fabric.yaml:`line`; the test sets the PCI concern.
inline InterfaceSpec interface_named(const std::string& netdev, int line) {
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kName, netdev, 1};
  iface.origin.file = "fabric.yaml";
  iface.origin.line = line;
  return iface;
}

}  // namespace rdmactl::test
