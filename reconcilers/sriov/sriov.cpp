// SPDX-License-Identifier: Apache-2.0
// The sriov reconciler: the VF count of a PF through sysfs sriov_numvfs (see sriov.h for the
// observed shape and the kernel's rules); what the firmware allows is in sriov_firmware.cpp.
#include "reconcilers/sriov/sriov.h"

#include <cerrno>
#include <charconv>
#include <map>
#include <string>
#include <utility>

#include "agent/core/json_text.h"
#include "reconcilers/common/pci_function.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/sriov/sriov_internal.h"

namespace rdmactl::reconcilers {
namespace {

using sriov_detail::kSriovField;
using sriov_detail::kSriovName;

bool wants_sriov(const InterfaceSpec& iface) { return iface.sriov.num_vfs.has_value(); }

std::string sriov_device_dir(const std::string& bdf) { return "/sys/bus/pci/devices/" + bdf; }

std::optional<int> parse_vf_count(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// virtfn<N> -> the VF's address and netdev, in N order (pci_iov_sysfs_link names them so).
nlohmann::json list_sriov_vfs(const HostFs& fs, const std::string& bdf) {
  std::map<int, nlohmann::json> by_index;
  auto entries = fs.list(sriov_device_dir(bdf));
  if (!entries) return nlohmann::json::array();
  for (const std::string& entry : *entries) {
    if (entry.rfind("virtfn", 0) != 0) continue;
    const auto index = parse_vf_count(entry.substr(6));
    auto link = fs.read_link(sriov_device_dir(bdf) + "/" + entry);
    if (!index || !link) continue;
    const std::string vf = link->substr(link->find_last_of('/') + 1);
    nlohmann::json item = {{"pci", vf}};
    if (auto driver = fs.read_link(sriov_device_dir(vf) + "/driver")) {
      item["driver"] = driver->substr(driver->find_last_of('/') + 1);
    }
    // The VF's netdev exists while a driver (mlx5_core, in the host or not) is bound to it.
    if (auto netdevs = fs.list(sriov_device_dir(vf) + "/net"); netdevs && !netdevs->empty()) item["netdev"] = netdevs->front();
    by_index[*index] = std::move(item);
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& [index, item] : by_index) out.push_back(std::move(item));
  return out;
}

nlohmann::json observe_sriov(const HostFs& fs, const std::string& bdf) {
  if (!fs.exists(sriov_device_dir(bdf))) return {{"error", "no PCI function " + bdf + " under /sys/bus/pci/devices"}};
  if (auto pf = physical_function_of(fs, bdf)) return {{"physfn", *pf}};
  const std::string dir = sriov_device_dir(bdf);
  // sriov_pf_attrs_are_visible: the sriov_* files exist only for a PF (dev_is_pf: an SR-IOV
  // capability with TotalVFs > 0, drivers/pci/iov.c sriov_init).
  if (!fs.exists(dir + "/sriov_totalvfs")) return {{"supported", false}};
  auto total = fs.read(dir + "/sriov_totalvfs");
  auto num = fs.read(dir + "/sriov_numvfs");
  if (!total || !num) return {{"error", (!total ? total.error() : num.error()).message}};
  const auto total_count = parse_vf_count(*total);
  const auto num_count = parse_vf_count(*num);
  if (!total_count || !num_count) {
    return {{"error", "sriov_totalvfs " + json_text(*total) + " or sriov_numvfs " + json_text(*num) + " is not a count"}};
  }
  std::string driver;
  if (auto link = fs.read_link(dir + "/driver")) driver = link->substr(link->find_last_of('/') + 1);
  return {{"numVfs", *num_count}, {"totalVfs", *total_count}, {"driver", driver}, {"vfs", list_sriov_vfs(fs, bdf)}};
}

// "ens1f0v0 (0000:3b:00.2), 0000:3b:00.3": the VFs a change destroys.
std::string describe_removed_vfs(const nlohmann::json& vfs) {
  std::string out;
  if (!vfs.is_array()) return out;
  for (const nlohmann::json& vf : vfs) {
    if (!out.empty()) out += ", ";
    const std::string pci = vf.value("pci", "");
    out += vf.contains("netdev") ? vf.value("netdev", "") + " (" + pci + ")" : pci;
  }
  return out;
}

Change vf_count_change(const std::string& pci, const nlohmann::json& observed, int current, int desired) {
  // A count changes only through 0 (sriov_numvfs_store: EBUSY while VFs exist), and 0 removes them.
  const bool destroys = current > 0;
  Change change = make_change(pci_resource(pci), kSriovField, current, desired, kSriovName, destroys);
  change.via = "sysfs /sys/bus/pci/devices/" + pci + "/sriov_numvfs" + (destroys && desired > 0 ? " (through 0)" : "");
  if (destroys) {
    const std::string vfs = describe_removed_vfs(observed.value("vfs", nlohmann::json::array()));
    change.note = "removes the " + std::to_string(current) + " VFs" + (vfs.empty() ? "" : ": " + vfs) +
                  (desired > 0 ? ", then creates " + std::to_string(desired) : "") +
                  "; their settings (MAC, VLAN, trust) and any VM using them are not carried over";
  }
  return change;
}

// Drivers that hand a VF to a VM or a user-space program (vfio-pci and its vendor variants such as
// mlx5_vfio_pci, pci-stub, Xen's pciback).
bool is_passthrough_driver(const std::string& driver) {
  return driver.find("vfio") != std::string::npos || driver == "pci-stub" || driver == "pciback" ||
         driver == "xen-pciback";
}

// The VFs a removal would take from a VM or a program: removing a VF bound to vfio-pci waits in the
// kernel until its user lets the device go (pci_disable_sriov -> the VF's remove ->
// vfio_unregister_group_dev, which blocks, "Device is currently in use"), and the write to
// sriov_numvfs hangs with it; Linux 6.1's mlx5_sriov_disable does not refuse first
// (pci_vfs_assigned counts only PCI_DEV_FLAGS_ASSIGNED, which vfio does not set).
std::string passed_through_vfs(const nlohmann::json& vfs) {
  std::string out;
  if (!vfs.is_array()) return out;
  for (const nlohmann::json& vf : vfs) {
    const std::string driver = vf.value("driver", "");
    if (!is_passthrough_driver(driver)) continue;
    if (!out.empty()) out += ", ";
    out += vf.value("pci", "") + " (" + driver + ")";
  }
  return out;
}

// What the kernel's errno means for a write to sriov_numvfs (sriov_numvfs_store, sriov_enable, and
// mlx5_core's mlx5_core_sriov_configure / mlx5_sriov_disable).
std::string explain_numvfs_errno(int err, const std::string& pci, const std::string& driver, int count) {
  const std::string who = driver.empty() ? "the driver" : driver;
  switch (err) {
    case ENOENT:
      return driver.empty() ? "no driver is bound to " + pci + ": the kernel creates VFs only through the PF's driver"
                            : driver + " has no sriov_configure: it cannot change the VF count through sysfs (some "
                                       "drivers take it as a module parameter instead)";
    case EBUSY: return "VFs exist already: the kernel takes a new count only from 0";
    case ERANGE: return std::to_string(count) + " is more than sriov_totalvfs of " + pci;
    case EINVAL: return who + " or the kernel refused " + std::to_string(count) + " VFs (EINVAL)";
    case ENOMEM:
      return "not enough memory, MMIO space or bus numbers for " + std::to_string(count) +
             " VFs (sriov_enable): enable SR-IOV in the BIOS so that it reserves room for the VF BARs, or boot "
             "with pci=realloc";
    case EPERM:
      // ixgbe_pci_sriov_disable and older mlx5 refuse while pci_vfs_assigned (PCI_DEV_FLAGS_ASSIGNED:
      // Xen's pciback, KVM's legacy assignment).
      return who + " refuses to remove VFs while a guest holds one (pci_vfs_assigned): detach them from the VMs "
                   "first";
    case EACCES: return "sriov_numvfs is writable by root only (mode 0644): run rdmactl as root";
    default: return {};
  }
}

Error numvfs_write_error(const Result<void>& written, const Change& change, const std::string& pci,
                         const std::string& driver, int count, const std::string& before) {
  Error e = written.error();
  e.where = change.resource;
  const std::string why = explain_numvfs_errno(e.err_no, pci, driver, count);
  // The errno's text follows in Error::to_string.
  e.message = before + "writing " + std::to_string(count) + " to sriov_numvfs of " + pci + " failed" +
              (!why.empty() ? ": " + why : e.err_no != 0 ? std::string() : ": " + e.message);
  return e;
}

class SriovReconciler final : public Reconciler {
 public:
  const char* name() const override { return kSriovName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    const HostFs& fs = platform.fs();
    for (const std::string& bdf : pci_functions_to_observe(fs, spec, state, wants_sriov)) {
      PciFunctionState& function = state.pci_function(bdf);
      if (!function.sriov) function.sriov = observe_sriov(fs, bdf);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    const auto value_of = [](const InterfaceSpec& i) { return nlohmann::json(*i.sriov.num_vfs); };
    for (const PciTarget& target : pci_targets(spec, state, out, wants_sriov, value_of, "sriov.numVfs")) {
      const InterfaceSpec& iface = *target.iface;
      const int desired = *iface.sriov.num_vfs;
      auto read = observed_pci_json(state, target.pci, &PciFunctionState::sriov, "SR-IOV state");
      if (!read) {
        out.errors.push_back(selector_error(iface, read.error()));
        continue;
      }
      const nlohmann::json& observed = **read;
      const std::string resource = pci_resource(target.pci);
      if (observed.contains("physfn")) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kNotSupported,
                              target.pci + " is an SR-IOV virtual function of " + json_plain_text(observed["physfn"]) +
                                  ": a VF has no VFs of its own. Set sriov.numVfs on the PF")));
        continue;
      }
      const bool supported = observed.value("supported", true);
      const int current = supported ? observed.value("numVfs", 0) : 0;
      if (current == desired) {
        out.compared(resource, kSriovField, kSriovName);
        continue;
      }
      if (!supported || desired > observed.value("totalVfs", 0)) {
        auto waiting = sriov_detail::after_firmware(iface, state, target.pci, observed, desired);
        if (!waiting) {
          out.errors.push_back(selector_error(iface, waiting.error()));
          continue;
        }
        Change change = vf_count_change(target.pci, observed, current, desired);
        change.requires_ = "reboot";
        change.status = ChangeStatus::kPendingReboot;
        change.via = "sysfs sriov_numvfs of " + target.pci + ", once the firmware allows it after a reboot";
        change.note = *waiting + (change.note.empty() ? "" : "; then it " + change.note);
        out.changes.push_back(std::move(change));
        continue;
      }
      if (current > 0) {
        if (const std::string held = passed_through_vfs(observed.value("vfs", nlohmann::json::array())); !held.empty()) {
          out.errors.push_back(selector_error(
              iface, make_error(ErrorKind::kNotSupported,
                                "sriov.numVfs " + std::to_string(current) + " -> " + std::to_string(desired) +
                                    " removes the VFs of " + target.pci + ", but a VM or a program holds " + held +
                                    ": the kernel would wait for it to let the VF go "
                                    "(vfio_unregister_group_dev), and the write would hang. Stop the VM or unbind "
                                    "the VF first; rdmactl does not remove it")));
          continue;
        }
      }
      if (observed.value("driver", "").empty()) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kNotSupported, "no driver is bound to " + target.pci +
                                                            ": the kernel creates VFs only through the PF's driver "
                                                            "(sriov_numvfs_store: ENOENT); load it (mlx5_core)")));
        continue;
      }
      out.changes.push_back(vf_count_change(target.pci, observed, current, desired));
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    if (change.field != kSriovField) return unknown_field(change);
    auto pci = pci_of_resource(change.resource);
    if (!pci) return pci.error();
    if (!change.desired.is_number_integer() || change.desired.get<int>() < 0) {
      return make_error(ErrorKind::kNotSupported, "a VF count is a number, not " + json_text(change.desired),
                        change.resource);
    }
    const int desired = change.desired.get<int>();
    const HostFs& fs = platform.fs();
    const std::string file = sriov_device_dir(*pci) + "/sriov_numvfs";
    std::string driver;
    if (const PciFunctionState* f = state.find_pci_function(*pci); f && f->sriov && f->sriov->is_object()) {
      driver = f->sriov->value("driver", "");
    }
    auto text = fs.read(file);  // what is there now, not what the plan saw
    if (!text) return numvfs_write_error(Result<void>(text.error()), change, *pci, driver, desired, "");
    const std::optional<int> now = parse_vf_count(*text);
    if (now == desired) return ok();
    std::string removed;
    if (now.value_or(0) > 0) {
      if (auto written = fs.write(file, "0\n"); !written) return numvfs_write_error(written, change, *pci, driver, 0, "");
      removed = "the " + std::to_string(*now) + " VFs were removed, but ";
      if (desired == 0) return ok();
    }
    // sysfs takes the whole value in one write; kstrtou16 accepts the trailing newline.
    if (auto written = fs.write(file, std::to_string(desired) + "\n"); !written) {
      return numvfs_write_error(written, change, *pci, driver, desired, removed);
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_sriov_reconciler() { return std::make_unique<SriovReconciler>(); }

}  // namespace rdmactl::reconcilers
