// SPDX-License-Identifier: Apache-2.0
// Shared reconciler helpers: change construction and selector errors.
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {

Change make_change(std::string resource, std::string field, nlohmann::json current,
                   nlohmann::json desired, const char* reconciler, bool disruptive) {
  Change change;
  change.resource = std::move(resource);
  change.field = std::move(field);
  change.current = std::move(current);
  change.desired = std::move(desired);
  change.reconciler = reconciler;
  change.disruptive = disruptive;
  return change;
}

Error selector_error(const InterfaceSpec& iface, const Error& cause) {
  Error e = cause;
  e.where = describe_origin(iface.origin) + " (" + iface.selector.describe() + ")";
  return e;
}

Result<const NetdevState*> netdev_for_change(const HostState& state, const Change& change) {
  const std::string prefix = "netdev/";
  if (change.resource.rfind(prefix, 0) != 0) {
    return make_error(ErrorKind::kPlatform, "not a netdev resource", change.resource);
  }
  const NetdevState* netdev = state.find_netdev(change.resource.substr(prefix.size()));
  if (!netdev) return make_error(ErrorKind::kNotFound, "netdev is gone", change.resource);
  return netdev;
}

Error unknown_field(const Change& change) {
  return make_error(ErrorKind::kPlatform, "no reconciler applies field " + change.field, change.resource);
}

}  // namespace rdmactl::reconcilers
