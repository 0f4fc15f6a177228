// SPDX-License-Identifier: Apache-2.0
// The roce reconciler: rdma_cm's default RoCE mode and ToS per RDMA port, through configfs (see
// roce.h for the observed shape and why the device directory is created by apply, not observe).
#include "reconcilers/roce/roce.h"
#include "agent/core/json_text.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <string>
#include <utility>

#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kRoceName = "roce";
constexpr const char* kConfigfsRoot = "/sys/kernel/config/rdma_cm";

std::string device_dir(const std::string& device) { return std::string(kConfigfsRoot) + "/" + device; }
std::string port_dir(const std::string& device, int port) {
  return device_dir(device) + "/ports/" + std::to_string(port);
}
std::string field_file(const std::string& device, int port, const std::string& field) {
  return port_dir(device, port) + (field == "roce.mode" ? "/default_roce_mode" : "/default_roce_tos");
}

// configfs text <-> the spec's words. Text rdma_cm may add later is kept as read, so it shows as
// drift instead of being mistaken for a known mode.
nlohmann::json mode_from_text(const std::string& text) {
  if (text == "RoCE v2") return "v2";
  if (text == "IB/RoCE v1") return "v1";
  return text;
}
std::string mode_to_text(const std::string& mode) {
  if (mode == "v2") return "RoCE v2";
  if (mode == "v1") return "IB/RoCE v1";
  return mode;
}

nlohmann::json tos_from_text(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return text;
  return value;
}

// The first RDMA port (in device order) whose netdev is `netdev`, as HostState::resolve_port finds
// it by name: observe records that port's values on the netdev, so diff must pick the same one.
PortRef first_port_of(const HostState& state, const std::string& netdev) {
  auto ref = state.resolve_port({Selector::Kind::kName, netdev, 1});
  return ref ? *ref : PortRef{};
}

// "rdma/mlx5_0/1" -> ("mlx5_0", 1).
std::optional<std::pair<std::string, int>> parse_resource(const std::string& resource) {
  const std::string prefix = "rdma/";
  const size_t slash = resource.rfind('/');
  if (resource.rfind(prefix, 0) != 0 || slash <= prefix.size()) return std::nullopt;
  const std::string port_text = resource.substr(slash + 1);
  int port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty()) return std::nullopt;
  return std::make_pair(resource.substr(prefix.size(), slash - prefix.size()), port);
}

// A device's configfs directory, made for the time it is needed when it was absent (as
// cma_roce_mode/cma_roce_tos do with their need_clean flag): close() removes only what open() made.
class DeviceDirectory {
 public:
  static Result<DeviceDirectory> open(const HostFs& fs, const std::string& device) {
    if (fs.exists(device_dir(device))) return DeviceDirectory(fs, device, false);
    // make_cma_dev: ENODEV when rdma_cm has no device of that name.
    if (auto made = fs.make_directory(device_dir(device)); !made) {
      Error e = made.error();
      if (e.err_no == ENODEV) e.message = "rdma_cm knows no device " + device + " (" + e.message + ")";
      return e;
    }
    return DeviceDirectory(fs, device, true);
  }
  DeviceDirectory(DeviceDirectory&& other) noexcept
      : fs_(other.fs_), device_(std::move(other.device_)), made_(std::exchange(other.made_, false)) {}
  DeviceDirectory(const DeviceDirectory&) = delete;
  DeviceDirectory& operator=(const DeviceDirectory&) = delete;
  DeviceDirectory& operator=(DeviceDirectory&&) = delete;
  ~DeviceDirectory() { (void)close(); }

  Result<void> close() {
    if (!made_) return ok();
    made_ = false;
    return fs_.remove_directory(device_dir(device_));
  }

 private:
  DeviceDirectory(const HostFs& fs, std::string device, bool made) : fs_(fs), device_(std::move(device)), made_(made) {}
  const HostFs& fs_;
  std::string device_;
  bool made_;
};

class RoceReconciler final : public Reconciler {
 public:
  const char* name() const override { return kRoceName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    const HostFs& fs = platform.fs();
    if (!fs.exists(kConfigfsRoot)) return ok();
    for (NetdevState& n : state.netdevs) {
      const PortRef ref = first_port_of(state, n.name);
      if (!ref.port || ref.port->link_layer != "Ethernet") continue;
      auto opened = DeviceDirectory::open(fs, ref.device->name);
      if (!opened) {
        n.roce = nlohmann::json{{"error", opened.error().to_string()}};
        continue;
      }
      nlohmann::json roce = {{"mode", nullptr}, {"tos", nullptr}};
      if (auto text = fs.read(field_file(ref.device->name, ref.port->port, "roce.mode"))) {
        roce["mode"] = mode_from_text(*text);
      }
      if (auto text = fs.read(field_file(ref.device->name, ref.port->port, "roce.tos"))) {
        roce["tos"] = tos_from_text(*text);
      }
      if (auto closed = opened->close(); !closed) roce["error"] = closed.error().to_string();
      n.roce = std::move(roce);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.roce.mode && !iface.roce.tos) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      const PortRef ref = first_port_of(state, n.name);
      if (auto problem = port_problem(state, iface, n, ref)) {
        out.errors.push_back(selector_error(iface, *problem));
        continue;
      }
      const std::string resource = "rdma/" + ref.device->name + "/" + std::to_string(ref.port->port);
      const nlohmann::json& roce = *n.roce;
      const nlohmann::json current_mode = roce.value("mode", nlohmann::json());
      const nlohmann::json current_tos = roce.value("tos", nlohmann::json());
      // ToS first: every port accepts any ToS, while rdma_cm refuses a mode the port has no GIDs
      // of (rxe has no RoCE v1 GIDs), so a refused mode is the last write and rolls back the rest.
      const std::string via = "configfs rdma_cm/" + ref.device->name + "/ports/" + std::to_string(ref.port->port) + "/";
      if (iface.roce.tos) out.compared(resource, "roce.tos", kRoceName);
      if (iface.roce.mode) out.compared(resource, "roce.mode", kRoceName);
      if (iface.roce.tos && current_tos != nlohmann::json(*iface.roce.tos)) {
        Change change = make_change(resource, "roce.tos", current_tos, *iface.roce.tos, kRoceName, false);
        change.via = via + "default_roce_tos";
        out.changes.push_back(std::move(change));
      }
      if (iface.roce.mode && current_mode != nlohmann::json(*iface.roce.mode)) {
        Change change = make_change(resource, "roce.mode", current_mode, *iface.roce.mode, kRoceName, false);
        change.via = via + "default_roce_mode";
        out.changes.push_back(std::move(change));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    auto target = parse_resource(change.resource);
    if (!target) return make_error(ErrorKind::kPlatform, "not an rdma/<dev>/<port> resource", change.resource);
    const auto& [device, port] = *target;
    if (change.field != "roce.mode" && change.field != "roce.tos") return unknown_field(change);
    std::string text;
    if (change.field == "roce.mode") {
      if (!change.desired.is_string()) {
        return make_error(ErrorKind::kPlatform, "not a RoCE mode: " + json_text(change.desired), change.resource);
      }
      text = mode_to_text(change.desired.get<std::string>());
    } else {
      if (!change.desired.is_number_integer()) {
        return make_error(ErrorKind::kPlatform, "not a ToS: " + json_text(change.desired), change.resource);
      }
      text = std::to_string(change.desired.get<int>());  // decimal: kstrtou8 reads a leading 0 as octal
    }
    const HostFs& fs = platform.fs();
    if (!fs.exists(kConfigfsRoot)) {
      return make_error(ErrorKind::kNotSupported, "configfs rdma_cm is not available", change.resource);
    }
    auto opened = DeviceDirectory::open(fs, device);
    if (!opened) {
      Error e = opened.error();
      e.where = change.resource;
      return e;
    }
    const std::string file = field_file(device, port, change.field);
    Result<void> written = fs.exists(file)
                               ? fs.write(file, text)
                               : Result<void>(make_error(ErrorKind::kNotSupported,
                                                         "no " + file + ": rdma_cm made no such port for " + device,
                                                         change.resource));
    Result<void> closed = opened->close();
    if (!written) return written;
    return closed;
  }

 private:
  // What the diff cannot act on for this interface, if anything.
  static std::optional<Error> port_problem(const HostState& state, const InterfaceSpec& iface,
                                           const NetdevState& n, const PortRef& ref) {
    if (!ref.port) {
      return make_error(ErrorKind::kNotFound, "netdev " + n.name +
                                                  " carries no RDMA port: roce sets rdma_cm's defaults of an RDMA "
                                                  "device (e.g. rdma link add rxe0 type rxe netdev " + n.name + ")");
    }
    if (iface.selector.kind == Selector::Kind::kRdmaDevice &&
        (iface.selector.value != ref.device->name || iface.selector.port != ref.port->port)) {
      return make_error(ErrorKind::kNotSupported,
                        "netdev " + n.name + " carries several RDMA ports; roce is managed for the first, " +
                            ref.device->name + " port " + std::to_string(ref.port->port) + ", only");
    }
    if (ref.port->link_layer != "Ethernet") {
      return make_error(ErrorKind::kNotSupported, "roce applies to RoCE ports; " + ref.device->name + " port " +
                                                      std::to_string(ref.port->port) + " is " +
                                                      ref.port->link_layer);
    }
    if (!n.roce) {
      if (!state.recorded_from.empty()) {
        return make_error(ErrorKind::kNotFound, "the rdma_cm defaults of " + ref.device->name +
                                                    " are not in the recorded state " + state.recorded_from);
      }
      return make_error(ErrorKind::kNotSupported,
                        std::string("configfs rdma_cm is not available (no ") + kConfigfsRoot +
                            "): mount -t configfs none /sys/kernel/config and modprobe rdma_cm");
    }
    if (n.roce->contains("error")) {
      return make_error(ErrorKind::kPlatform, "cannot read the rdma_cm defaults of " + ref.device->name + ": " +
                                                  (*n.roce)["error"].get<std::string>());
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_roce_reconciler() { return std::make_unique<RoceReconciler>(); }

}  // namespace rdmactl::reconcilers
