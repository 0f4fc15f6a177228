// SPDX-License-Identifier: Apache-2.0
// Reading the observed adapter firmware (see firmware.h).
#include "agent/state/firmware.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include "agent/core/text.h"

namespace rdmactl {

std::string adapter_of_pci(const std::string& pci) {
  const size_t dot = pci.rfind('.');
  return dot == std::string::npos ? pci : pci.substr(0, dot);
}

std::optional<int> compare_fw_versions(std::string_view a, std::string_view b) {
  auto fields = [](std::string_view v) -> std::optional<std::vector<std::string_view>> {
    std::vector<std::string_view> out;
    while (true) {
      const size_t dot = v.find('.');
      std::string_view field = v.substr(0, dot);
      if (!all_digits(field)) return std::nullopt;
      while (field.size() > 1 && field.front() == '0') field.remove_prefix(1);
      out.push_back(field);
      if (dot == std::string_view::npos) break;
      v.remove_prefix(dot + 1);
    }
    return out;
  };
  const auto fa = fields(a);
  const auto fb = fields(b);
  if (!fa || !fb) return std::nullopt;
  const size_t n = std::max(fa->size(), fb->size());
  for (size_t i = 0; i < n; ++i) {
    const std::string_view x = i < fa->size() ? (*fa)[i] : "0";
    const std::string_view y = i < fb->size() ? (*fb)[i] : "0";
    // Leading zeros are gone, so the longer number is the larger: no overflow on long fields.
    if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
    if (const int c = x.compare(y); c != 0) return c < 0 ? -1 : 1;
  }
  return 0;
}

bool fw_version_unknown(std::string_view version) {
  for (std::string_view mark : {"255.255.65535", "0.0.0000"}) {
    if (const auto order = compare_fw_versions(version, mark); order && *order == 0) return true;
  }
  return false;
}

bool FirmwareView::pending() const {
  if (running.empty() || stored.empty()) return false;
  const auto order = compare_fw_versions(running, stored);
  return order ? *order != 0 : running != stored;
}

FirmwareView firmware_view(const DeviceState& device) {
  FirmwareView view;
  if (device.firmware && device.firmware->is_object()) {
    const nlohmann::json& fw = *device.firmware;
    const auto text = [&](const char* key) {
      const auto it = fw.find(key);
      return it != fw.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    view.running = text("running");
    view.stored = text("stored");
    view.psid = text("psid");
    view.source = text("source");
  }
  if (fw_version_unknown(view.running)) view.running.clear();
  if (fw_version_unknown(view.stored)) view.stored.clear();
  if (view.running.empty() && !device.fw_version.empty() && !fw_version_unknown(device.fw_version)) {
    view.source = "sysfs";
    view.running = device.fw_version;
  }
  // mlx5's board_id is the PSID (mlx5_query_board_id copies query_adapter's vsd_contd_psid).
  if (view.psid.empty()) view.psid = device.board_id;
  return view;
}

namespace {

// The identity the firmware gives a function: "mac:<manufacturing base MAC>", else
// "serial:<devlink serial_number>"; "" when neither was read (a VF, a recorded state, no tool).
std::string identity_of(const DeviceState& d) {
  if (!d.firmware || !d.firmware->is_object()) return "";
  const auto it = d.firmware->find("identity");
  if (it == d.firmware->end() || !it->is_object()) return "";
  const auto text = [&](const char* key) {
    const auto v = it->find(key);
    return v != it->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  if (const std::string mac = text("baseMac"); !mac.empty()) return "mac:" + mac;
  if (const std::string serial = text("serialNumber"); !serial.empty()) return "serial:" + serial;
  return "";
}

}  // namespace

std::string adapter_of(const HostState& state, const DeviceState& device) {
  if (device.pci.empty()) return "";
  // The PCI devices joined through shared identities, until nothing more joins.
  std::set<std::string> pci_devices = {adapter_of_pci(device.pci)};
  std::set<std::string> identities;
  for (bool grew = true; grew;) {
    grew = false;
    for (const DeviceState& d : state.devices) {
      if (d.pci.empty()) continue;
      const std::string pci_device = adapter_of_pci(d.pci);
      const std::string identity = identity_of(d);
      const bool joined = pci_devices.contains(pci_device) || (!identity.empty() && identities.contains(identity));
      if (!joined) continue;
      grew = pci_devices.insert(pci_device).second || grew;
      if (!identity.empty()) grew = identities.insert(identity).second || grew;
    }
  }
  return *pci_devices.begin();
}

std::vector<const DeviceState*> adapter_devices(const HostState& state, const std::string& adapter) {
  std::vector<const DeviceState*> out;
  for (const DeviceState& d : state.devices) {
    if (!d.pci.empty() && adapter_of(state, d) == adapter) out.push_back(&d);
  }
  std::sort(out.begin(), out.end(), [](const DeviceState* a, const DeviceState* b) { return a->pci < b->pci; });
  return out;
}

}  // namespace rdmactl
