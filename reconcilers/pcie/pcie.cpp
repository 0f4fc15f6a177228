// SPDX-License-Identifier: Apache-2.0
// The pci reconciler: PCIe Max_Read_Request_Size through libpci (see pci.h for the observed shape).
#include "reconcilers/pcie/pcie.h"

#include <cerrno>
#include <string>
#include <utility>

#include "agent/core/json_text.h"
#include "reconcilers/common/pci_function.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kPciName = "pcie";
// The spec's path below the interface: `pcie:` (`pci:` is the selector of a PCI function).
constexpr const char* kReadRequestField = "pcie.maxReadRequest";
// securityfs's lockdown file: "none [integrity] confidentiality" (security/lockdown/lockdown.c
// lockdown_read brackets the level in force).
constexpr const char* kLockdownFile = "/sys/kernel/security/lockdown";

// The one place that reads the spec's setting.
const std::optional<int>& wanted_read_request(const InterfaceSpec& iface) { return iface.pcie.max_read_request; }
bool wants_pci(const InterfaceSpec& iface) { return wanted_read_request(iface).has_value(); }

nlohmann::json pcie_size_json(const std::optional<int>& bytes) {
  return bytes ? nlohmann::json(*bytes) : nlohmann::json("reserved");
}

nlohmann::json observe_pcie_control(const HostFs& fs, const PciConfigOpener& opener, const std::string& bdf) {
  auto config = opener(fs, bdf);
  if (!config) return {{"error", config.error().message}};
  auto control = read_device_control(**config, bdf);
  if (!control) {
    if (control.error().kind == ErrorKind::kNotSupported) return {{"expressCapability", false}};
    return {{"error", control.error().message}};
  }
  nlohmann::json out = {{"maxReadRequest", pcie_size_json(control->max_read_request)},
                        {"maxPayload", pcie_size_json(control->max_payload)}};
  if (auto pf = physical_function_of(fs, bdf)) out["physfn"] = *pf;
  return out;
}

// The level in brackets, "integrity" or "confidentiality"; "" when not locked down or unknown.
std::string lockdown_level(const HostFs& fs) {
  auto text = fs.read(kLockdownFile);
  if (!text) return {};
  const size_t open = text->find('[');
  const size_t close = text->find(']', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::string level = text->substr(open + 1, close - open - 1);
  return level == "none" ? std::string() : level;
}

std::string lockdown_refusal(const std::string& level, const std::string& bdf) {
  return "the kernel is locked down (" + level + ", as Secure Boot sets it): it refuses writes to the PCI "
         "configuration space of " + bdf + " (EPERM, LOCKDOWN_PCI_ACCESS). Set Max_Read_Request_Size in the firmware "
         "(BIOS) setup, or boot without lockdown; rdmactl cannot change it on this host";
}

Error config_write_refused(const HostFs& fs, const Change& change, const std::string& bdf, Error cause) {
  cause.where = change.resource;
  if (cause.err_no != EPERM) return cause;
  const std::string level = lockdown_level(fs);
  if (!level.empty()) {
    cause.message = lockdown_refusal(level, bdf);
  } else {
    cause.message += ": run as root; a root process gets EPERM when the kernel is locked down (Secure Boot), see "
                     + std::string(kLockdownFile);
  }
  return cause;
}

class PciReconciler final : public Reconciler {
 public:
  explicit PciReconciler(PciConfigOpener opener) : opener_(std::move(opener)) {}

  const char* name() const override { return kPciName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    const HostFs& fs = platform.fs();
    for (const std::string& bdf : pci_functions_to_observe(fs, spec, state, wants_pci)) {
      PciFunctionState& function = state.pci_function(bdf);
      if (!function.pcie_control) {
        function.pcie_control = observe_pcie_control(fs, opener_, bdf);
        // Under lockdown every write would fail (EPERM): diff says so instead of planning one that
        // fails at apply and rolls back the run's other changes, every run.
        if (const std::string level = lockdown_level(fs); !level.empty() && function.pcie_control->is_object()) {
          (*function.pcie_control)["lockdown"] = level;
        }
      }
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    const auto value_of = [](const InterfaceSpec& i) { return nlohmann::json(*wanted_read_request(i)); };
    for (const PciTarget& target : pci_targets(spec, state, out, wants_pci, value_of, kReadRequestField)) {
      const InterfaceSpec& iface = *target.iface;
      const int desired = *wanted_read_request(iface);
      const auto refuse = [&](ErrorKind kind, const std::string& message) {
        out.errors.push_back(selector_error(iface, make_error(kind, message)));
      };
      if (!pcie_size_code(desired)) {
        refuse(ErrorKind::kInvalidSpec, std::string(kReadRequestField) + " is 128, 256, 512, 1024, 2048 or 4096 bytes, not " +
                                            std::to_string(desired));
        continue;
      }
      auto read = observed_pci_json(state, target.pci, &PciFunctionState::pcie_control, "PCIe Device Control");
      if (!read) {
        out.errors.push_back(selector_error(iface, read.error()));
        continue;
      }
      const nlohmann::json& observed = **read;
      if (observed.value("expressCapability", true) == false) {
        refuse(ErrorKind::kNotSupported, target.pci + " has no PCI Express capability, so no Max_Read_Request_Size "
                                                      "(a conventional PCI function): remove " + std::string(kReadRequestField));
        continue;
      }
      if (observed.contains("physfn")) {
        const std::string pf = json_plain_text(observed["physfn"]);
        refuse(ErrorKind::kNotSupported,
               target.pci + " is an SR-IOV virtual function of " + pf + ": a VF's Max_Read_Request_Size is reserved "
               "(RsvdP; the PF's setting applies to its VFs). Set " + std::string(kReadRequestField) + " on the PF " + pf + " instead");
        continue;
      }
      const std::string resource = pci_resource(target.pci);
      const nlohmann::json current = observed.value("maxReadRequest", nlohmann::json());
      if (current == desired) {
        out.compared(resource, kReadRequestField, kPciName);
        continue;
      }
      if (const std::string level = observed.value("lockdown", ""); !level.empty()) {
        refuse(ErrorKind::kNotSupported,
               lockdown_refusal(level, target.pci) + " (it is " + json_plain_text(current) + " bytes, the spec wants " +
                   std::to_string(desired) + ")");
        continue;
      }
      Change change = make_change(resource, kReadRequestField, current, desired, kPciName, false);
      change.via = "PCIe Device Control of " + target.pci + " (config space, libpci)";
      change.note = "not kept across a reset or reboot of the function: the agent's next reconcile sets it again";
      out.changes.push_back(std::move(change));
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    if (change.field != kReadRequestField) return unknown_field(change);
    auto bdf = pci_of_resource(change.resource);
    if (!bdf) return bdf.error();
    if (!change.desired.is_number_integer()) {
      return make_error(ErrorKind::kNotSupported,
                        "rdmactl sets Max_Read_Request_Size to a size in bytes, not " + json_text(change.desired),
                        change.resource);
    }
    const int desired = change.desired.get<int>();
    const HostFs& fs = platform.fs();
    auto config = opener_(fs, *bdf);
    if (!config) return config.error();
    auto after = write_max_read_request(**config, *bdf, desired);
    if (!after) return config_write_refused(fs, change, *bdf, after.error());
    if (after->max_read_request != desired) {
      return make_error(ErrorKind::kVerification,
                        "wrote Max_Read_Request_Size " + std::to_string(desired) + " to " + *bdf + ", but it reads back " +
                            json_plain_text(pcie_size_json(after->max_read_request)) +
                            ": the device or platform does not take that size",
                        change.resource);
    }
    return ok();
  }

 private:
  PciConfigOpener opener_;
};

}  // namespace

std::unique_ptr<Reconciler> make_pcie_reconciler(PciConfigOpener opener) {
  return std::make_unique<PciReconciler>(std::move(opener));
}

}  // namespace rdmactl::reconcilers
