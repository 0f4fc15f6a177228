// SPDX-License-Identifier: Apache-2.0
// The link_type reconciler: firmware LINK_TYPE_P<n> through mstconfig, staged for the next boot,
// with a guard against reboot loops (see link_type.h for the observed shape and the guard).
#include "reconcilers/link_type/link_type.h"
#include "agent/core/json_text.h"

#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/platform/mstconfig_tool.h"
#include "reconcilers/common/boot_staging.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kLinkTypeName = "link_type";
// rdmactl's own record of what it staged, under --root like every other host file (boot_staging.h).
constexpr const char* kStagingFile = "/var/lib/rdmactl/link-type.json";

// Where a port's LINK_TYPE lives: the PCI function mstconfig opens and the parameter.
struct Target {
  std::string pci;
  int port = 1;
  std::string param;  // LINK_TYPE_P<n>
};

Result<Target> target_of(const std::string& pci, int port) {
  auto number = mstconfig_port_number(pci, port);
  if (!number) return number.error();
  return Target{pci, port, "LINK_TYPE_P" + std::to_string(*number)};
}

std::string resource_of(const DeviceState& device, const PortState& port) {
  std::string resource = "pci/" + device.pci;
  if (device.ports.size() > 1) resource += "/" + std::to_string(port.port);
  return resource;
}

// "pci/0000:c1:00.0" or "pci/0000:05:00.0/2" -> its Target.
Result<Target> target_of_resource(const std::string& resource) {
  const std::string prefix = "pci/";
  if (resource.rfind(prefix, 0) != 0) return make_error(ErrorKind::kPlatform, "not a pci/<bdf> resource", resource);
  std::string pci = resource.substr(prefix.size());
  int port = 1;
  if (const size_t slash = pci.find('/'); slash != std::string::npos) {
    const std::string text = pci.substr(slash + 1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return make_error(ErrorKind::kPlatform, "not a pci/<bdf>/<port> resource", resource);
    }
    pci.resize(slash);
  }
  auto target = target_of(pci, port);
  if (!target) {
    Error e = target.error();
    e.where = resource;
    return e;
  }
  return target;
}

// LINK_TYPE's values are fixed by the firmware: 1 InfiniBand, 2 Ethernet, 3 VPI. Anything but the
// first two stays as mstconfig prints it, so it differs from every desired value.
nlohmann::json spec_form(const std::string& raw) {
  const std::optional<long> number = mstconfig_enum_number(raw);
  if (number == 1) return "infiniband";
  if (number == 2) return "ethernet";
  return raw;
}

std::optional<std::string> firmware_form(const nlohmann::json& value) {
  if (value == "infiniband") return "IB";
  if (value == "ethernet") return "ETH";
  return std::nullopt;
}

// The port's LINK_TYPE in the observed shape, or {"error": why}.
nlohmann::json query(const Target& target) {
  auto value = mstconfig_query(target.pci, target.param);
  if (!value) return {{"error", value.error().message}};
  return {{"default", spec_form(value->default_value)},
          {"current", spec_form(value->current)},
          {"nextBoot", spec_form(value->next_boot)}};
}

PortState* mutable_port(HostState& state, const PortRef& ref) {
  for (DeviceState& d : state.devices) {
    if (&d != ref.device) continue;
    for (PortState& p : d.ports) {
      if (&p == ref.port) return &p;
    }
  }
  return nullptr;
}

std::string describe_port(const PortRef& ref, const Target& target) {
  return ref.device->name + " port " + std::to_string(ref.port->port) + " (" + target.pci + " " + target.param + ")";
}

// The port's observed link type, or why diff cannot plan from it (not observed, or not readable).
Result<const nlohmann::json*> observed_link_type(const HostState& state, const PortState& port,
                                                 const std::string& port_text) {
  if (!port.link_type) {
    const std::string why = state.recorded_from.empty()
                                ? "was not observed"
                                : "is not in the recorded state " + state.recorded_from;
    return make_error(ErrorKind::kNotFound, "the firmware link type of " + port_text + " " + why);
  }
  const nlohmann::json& observed = *port.link_type;
  if (!observed.is_object()) {
    return make_error(ErrorKind::kPlatform, "the firmware link type of " + port_text +
                                                " is not an object: " + json_text(observed));
  }
  if (observed.contains("error")) {
    return make_error(ErrorKind::kPlatform, "cannot read the firmware link type of " + port_text + ": " +
                                                json_plain_text(observed["error"]));
  }
  return &observed;
}

class LinkTypeReconciler final : public Reconciler {
 public:
  const char* name() const override { return kLinkTypeName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    if (!spec) return ok();  // show: mstconfig takes seconds per device; ask only what a spec needs
    const BootStaging staging = BootStaging::load(platform.fs(), kStagingFile);
    for (const InterfaceSpec& iface : spec->interfaces) {
      if (!iface.link_type) continue;
      auto ref = state.resolve_port(iface.selector);
      if (!ref) continue;  // diff reports the selector
      PortState* port = mutable_port(state, *ref);
      if (!port || port->link_type) continue;  // already observed through another selector
      auto target = target_of(ref->device->pci, ref->port->port);
      if (!target) {
        port->link_type = nlohmann::json{{"error", target.error().message}};
        continue;
      }
      nlohmann::json observed = query(*target);
      if (!observed.contains("error")) {
        if (auto staged = staging.staged_before_reboot(target->pci, target->param)) {
          observed["stagedBeforeReboot"] = *staged;
        }
      }
      port->link_type = std::move(observed);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    std::map<std::string, nlohmann::json> planned;  // resource -> desired, across selectors
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.link_type) continue;
      auto ref = state.resolve_port(iface.selector);
      if (!ref) {
        out.errors.push_back(selector_error(iface, ref.error()));
        continue;
      }
      auto target = target_of(ref->device->pci, ref->port->port);
      if (!target) {
        out.errors.push_back(selector_error(iface, target.error()));
        continue;
      }
      const std::string port_text = describe_port(*ref, *target);
      auto read = observed_link_type(state, *ref->port, port_text);
      if (!read) {
        out.errors.push_back(selector_error(iface, read.error()));
        continue;
      }
      const nlohmann::json& observed = **read;
      const nlohmann::json desired = *iface.link_type;
      const std::string resource = resource_of(*ref->device, *ref->port);
      if (auto seen = planned.find(resource); seen != planned.end()) {
        if (seen->second != desired) {
          out.errors.push_back(selector_error(
              iface, make_error(ErrorKind::kInvalidSpec, "another interface entry names the same port " + port_text +
                                                             " with linkType " + json_plain_text(seen->second))));
        }
        continue;
      }
      planned[resource] = desired;
      const nlohmann::json current = observed.value("current", nlohmann::json());
      const nlohmann::json next_boot = observed.value("nextBoot", nlohmann::json());
      if (current == desired && next_boot == desired) {
        out.compared(resource, "linkType", kLinkTypeName);
        continue;
      }
      if (current == desired) {
        // Someone staged the other protocol: the port would flip at the next cold boot. Setting
        // the next-boot value back needs no reboot, since the firmware runs the spec's already.
        Change change = make_change(resource, "linkType", nlohmann::json{{"nextBoot", next_boot}}, desired, kLinkTypeName, false);
        change.via = "mstconfig " + target->param + " of " + target->pci + " (firmware)";
        change.note = "the firmware runs " + json_plain_text(desired) + ", but " + json_plain_text(next_boot) +
                      " is staged for the next boot: it is set back";
        out.changes.push_back(std::move(change));
        continue;
      }
      if (next_boot == desired && observed.value("stagedBeforeReboot", nlohmann::json()) == desired) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kVerification,
                              port_text + " was set to " + json_plain_text(desired) +
                                  " before the last reboot, but the firmware still runs " + json_plain_text(current) +
                                  ": a warm reboot does not apply LINK_TYPE; power-cycle the host (cold boot, or "
                                  "`mstfwreset -d " + target->pci + " reset` where supported). rdmactl does not "
                                  "stage it again.")));
        continue;
      }
      Change change = make_change(resource, "linkType", current, desired, kLinkTypeName, true);
      change.requires_ = "reboot";
      change.via = "mstconfig " + target->param + " of " + target->pci + " (firmware, next cold boot)";
      // Already staged (by rdmactl or by hand): reported, never written again.
      if (next_boot == desired) change.status = ChangeStatus::kPendingReboot;
      out.changes.push_back(std::move(change));
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    if (change.field != "linkType") return unknown_field(change);
    auto target = target_of_resource(change.resource);
    if (!target) return target.error();
    // {"nextBoot": ...}: the revert of a change that only set the staged value back.
    const nlohmann::json& wanted = change.desired.is_object() ? change.desired.value("nextBoot", nlohmann::json())
                                                              : change.desired;
    const std::optional<std::string> value = firmware_form(wanted);
    if (!value) {
      return make_error(ErrorKind::kNotSupported,
                        "rdmactl sets LINK_TYPE to infiniband or ethernet, not " + json_text(change.desired),
                        change.resource);
    }
    if (auto set = mstconfig_set(target->pci, target->param, *value); !set) {
      Error e = set.error();
      e.where = change.resource;
      return e;
    }
    return record_staging(platform.fs(), *target, change);
  }

 private:
  // Remembers the staged value with this boot's id: the reboot-loop guard's evidence.
  static Result<void> record_staging(const HostFs& fs, const Target& target, const Change& change) {
    BootStaging staging = BootStaging::load(fs, kStagingFile);
    if (auto written = staging.record(fs, target.pci, {{target.param, change.desired}}); !written) {
      Error e = written.error();
      e.message = target.param + " is staged, but recording it for the reboot-loop guard failed: " + e.message;
      e.where = change.resource;
      return e;
    }
    return ok();
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_link_type_reconciler() { return std::make_unique<LinkTypeReconciler>(); }

}  // namespace rdmactl::reconcilers
