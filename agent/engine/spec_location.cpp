// SPDX-License-Identifier: Apache-2.0
#include "agent/engine/spec_location.h"

#include <string>
#include <unordered_map>

#include "agent/engine/reconciler.h"

namespace rdmactl {

std::string describe_origin(const SourceMark& origin) {
  std::string out = origin.file.empty() ? "<spec>" : origin.file;
  if (origin.line > 0) out += ":" + std::to_string(origin.line) + ":" + std::to_string(origin.column);
  if (!origin.path.empty()) out += " " + origin.path;
  return out;
}

void locate_in_spec(const NodeSpec& spec, const HostState& state, std::vector<Change>& changes) {
  if (changes.empty()) return;
  std::unordered_map<std::string, const InterfaceSpec*> by_resource;
  for (const InterfaceSpec& iface : spec.interfaces) {
    if (auto netdev = state.resolve(iface.selector)) {
      by_resource.try_emplace("netdev/" + (*netdev)->name, &iface);
      if (!(*netdev)->pci.empty()) by_resource.try_emplace("pci/" + (*netdev)->pci, &iface);
    }
    if (auto port = state.resolve_port(iface.selector)) {
      by_resource.try_emplace("rdma/" + port->device->name + "/" + std::to_string(port->port->port), &iface);
      by_resource.try_emplace("pci/" + port->device->pci, &iface);
    }
  }
  for (Change& c : changes) {
    SourceMark mark;
    if (c.resource.rfind("sysctl/", 0) == 0) {
      if (auto it = spec.sysctl_origins.find(c.resource.substr(7)); it != spec.sysctl_origins.end()) mark = it->second;
    } else if (c.resource == "subnet-manager") {
      mark = spec.subnet_manager.origin;
    } else if (auto it = by_resource.find(c.resource); it != by_resource.end()) {
      mark = it->second->mark_of(c.field);
    }
    c.spec_file = mark.file;
    c.spec_line = mark.line;
  }
}

}  // namespace rdmactl
