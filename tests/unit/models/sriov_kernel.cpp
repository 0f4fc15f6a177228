// SPDX-License-Identifier: Apache-2.0
// The sriov_numvfs model (sriov_kernel.h); each rule names the kernel function it follows.
#include "tests/unit/models/sriov_kernel.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>

namespace rdmactl::test {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSriovModelDevices = "/sys/bus/pci/devices/";
constexpr std::string_view kSriovModelNumVfsFile = "/sriov_numvfs";

// kstrtou16(buf, 0, &v) as lib/kstrtox.c parses: an optional '+', a base from the prefix (0x: 16,
// 0: 8, else 10), digits only, one trailing newline allowed; above 65535 is -ERANGE. Any failure
// is -EINVAL to the writer (sriov_numvfs_store returns -EINVAL when kstrtou16 < 0).
std::optional<unsigned> model_kstrtou16(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
  }
  if (text.empty()) return std::nullopt;
  unsigned long value = 0;
  for (char ch : text) {
    unsigned digit = 0;
    if (ch >= '0' && ch <= '9') digit = static_cast<unsigned>(ch - '0');
    else if (ch >= 'a' && ch <= 'f') digit = static_cast<unsigned>(ch - 'a' + 10);
    else if (ch >= 'A' && ch <= 'F') digit = static_cast<unsigned>(ch - 'A' + 10);
    else return std::nullopt;
    if (digit >= base) return std::nullopt;
    value = value * base + digit;
    if (value > 0xffff) return std::nullopt;
  }
  return static_cast<unsigned>(value);
}

void sriov_model_write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void sriov_model_link(const std::string& target, const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::error_code ignored;
  fs::remove(path, ignored);
  fs::create_symlink(target, path);
}

}  // namespace

void SriovKernel::add_pf(SriovPf pf) {
  const fs::path dir = root_ + pf.device_dir;
  // sriov_totalvfs_show / sriov_numvfs_show: "%u\n".
  sriov_model_write(dir / "sriov_totalvfs", std::to_string(pf.total_vfs) + "\n");
  sriov_model_write(dir / "sriov_numvfs", "0\n");
  std::error_code ignored;
  fs::remove(dir / "driver", ignored);
  if (!pf.driver.empty()) sriov_model_link("../../../../bus/pci/drivers/" + pf.driver, dir / "driver");
  num_vfs_[pf.bdf] = 0;
  pfs_[pf.bdf] = std::move(pf);
}

std::optional<int> SriovKernel::stored(std::string_view path, const std::string&, const std::string&,
                                       std::string_view value) {
  if (path.rfind(kSriovModelDevices, 0) != 0 || path.size() <= kSriovModelDevices.size() + kSriovModelNumVfsFile.size() ||
      path.substr(path.size() - kSriovModelNumVfsFile.size()) != kSriovModelNumVfsFile) {
    return std::nullopt;
  }
  const std::string bdf(path.substr(kSriovModelDevices.size(), path.size() - kSriovModelDevices.size() - kSriovModelNumVfsFile.size()));
  if (!pfs_.count(bdf)) return std::nullopt;
  const int result = store(bdf, value);
  writes_.push_back({std::string(value), result});
  if (result == 0) show(bdf);
  return result;
}

// drivers/pci/iov.c sriov_numvfs_store.
int SriovKernel::store(const std::string& bdf, std::string_view value) {
  SriovPf& pf = pfs_.at(bdf);
  const std::optional<unsigned> parsed = model_kstrtou16(value);
  if (!parsed) return EINVAL;
  const int num_vfs = static_cast<int>(*parsed);
  if (num_vfs > pf.total_vfs) return ERANGE;  // num_vfs > pci_sriov_get_totalvfs(pdev)
  if (num_vfs == num_vfs_[bdf]) return 0;     // the count in place: nothing to do
  // "no driver bound to device; cannot configure SR-IOV" and "driver does not support SR-IOV
  // configuration via sysfs": both -ENOENT.
  if (pf.driver.empty() || pf.driver == "no-sriov-configure") return ENOENT;
  if (num_vfs == 0) return configure(pf, 0);
  // "%d VFs already enabled. Disable before enabling %d VFs"
  if (num_vfs_[bdf] != 0) return EBUSY;
  return configure(pf, num_vfs);
}

// The driver's sriov_configure (mlx5_core_sriov_configure), with the PCI core's sriov_enable and
// sriov_disable beneath it.
int SriovKernel::configure(SriovPf& pf, int num_vfs) {
  if (num_vfs == 0) {
    // A driver that checks pci_vfs_assigned (ixgbe_pci_sriov_disable, older mlx5) -> -EPERM.
    if (pf.refuses_assigned && pf.assigned_vfs > 0) return EPERM;
    remove_vfs(pf);  // sriov_disable -> sriov_del_vfs -> pci_iov_remove_virtfn
    num_vfs_[pf.bdf] = 0;
    return 0;
  }
  if (pf.mmio_room_vfs && num_vfs > *pf.mmio_room_vfs) return ENOMEM;  // sriov_enable: nres != iov->nres
  // A driver returning fewer than asked: sriov_numvfs_store warns "%d VFs requested; only %d
  // enabled" and succeeds; num_VFs is what the driver enabled (pci_enable_sriov(dev, fewer)).
  const int enabled = pf.enables_at_most ? std::min(num_vfs, *pf.enables_at_most) : num_vfs;
  add_vfs(pf, enabled);
  num_vfs_[pf.bdf] = enabled;
  return 0;
}

// pci_iov_virtfn_bus / pci_iov_virtfn_devfn: the PF's routing ID + offset + stride * id.
std::string SriovKernel::vf_address(const SriovPf& pf, int id) const {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::sscanf(pf.bdf.c_str(), "%x:%x:%x.%u", &domain, &bus, &dev, &fn);
  const unsigned devfn = ((dev << 3) | fn) + static_cast<unsigned>(pf.vf_offset + pf.vf_stride * id);
  char text[16];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%u", domain, bus + (devfn >> 8), (devfn & 0xff) >> 3, devfn & 7);
  return text;
}

// pci_iov_add_virtfn + pci_iov_sysfs_link: the VF's device beside the PF (same bus: the same
// parent), "virtfn<id>" in the PF and "physfn" in the VF; the VF's netdev appears once mlx5_core
// probes it (sriov_drivers_autoprobe defaults to true).
void SriovKernel::add_vfs(const SriovPf& pf, int count) {
  const fs::path pf_dir = root_ + pf.device_dir;
  const std::string parent = pf.device_dir.substr(0, pf.device_dir.find_last_of('/'));
  for (int id = 0; id < count; ++id) {
    const std::string vf = vf_address(pf, id);
    const fs::path vf_dir = root_ + parent + "/" + vf;
    sriov_model_write(vf_dir / "vendor", "0x15b3\n");
    sriov_model_link("../" + pf.bdf, vf_dir / "physfn");
    sriov_model_link("../" + vf, pf_dir / ("virtfn" + std::to_string(id)));
    sriov_model_link("../../../devices" + parent.substr(std::string("/sys/devices").size()) + "/" + vf,
              root_ + std::string(kSriovModelDevices) + vf);
    if (!pf.vf_driver.empty()) sriov_model_link("../../../../bus/pci/drivers/" + pf.vf_driver, vf_dir / "driver");
    if (!pf.netdev.empty() && pf.vf_driver == "mlx5_core") {
      sriov_model_write(vf_dir / "net" / (pf.netdev + "v" + std::to_string(id)) / "mtu", "1500\n");
    }
  }
}

void SriovKernel::remove_vfs(const SriovPf& pf) {
  const fs::path pf_dir = root_ + pf.device_dir;
  const std::string parent = pf.device_dir.substr(0, pf.device_dir.find_last_of('/'));
  std::error_code ignored;
  for (int id = 0; fs::is_symlink(pf_dir / ("virtfn" + std::to_string(id)), ignored); ++id) {
    const std::string vf = vf_address(pf, id);
    fs::remove_all(root_ + parent + "/" + vf, ignored);
    fs::remove(root_ + std::string(kSriovModelDevices) + vf, ignored);
    fs::remove(pf_dir / ("virtfn" + std::to_string(id)), ignored);
  }
}

void SriovKernel::show(const std::string& bdf) {
  sriov_model_write(fs::path(root_ + pfs_.at(bdf).device_dir) / "sriov_numvfs", std::to_string(num_vfs_.at(bdf)) + "\n");
}

}  // namespace rdmactl::test
