// export: the managed fields of a HostState, as YAML the spec loader accepts.
#include "agent/export/export.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace rdmactl {
namespace {

void emit_netdev_fields(YAML::Emitter& out, const NetdevState& n) {
  out << YAML::Key << "mtu" << YAML::Value << n.mtu;
  out << YAML::Key << "state" << YAML::Value << n.state;
  out << YAML::Key << "addresses" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& a : n.addresses) out << YAML::DoubleQuoted << a;
  out << YAML::EndSeq;
}

}  // namespace

std::string export_spec(const HostState& state) {
  YAML::Emitter out;
  out << YAML::Comment("Exported by `rdmactl export` from node " + state.node +
                       ": `rdmactl plan` of this spec on that node shows no drift.");
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "rdmactl/v1";
  out << YAML::Key << "kind" << YAML::Value << "FabricSpec";
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << (state.node.empty() ? std::string("exported") : state.node) << YAML::EndMap;
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "match" << YAML::Value << YAML::DoubleQuoted << state.node;

  out << YAML::Key << "interfaces" << YAML::Value << YAML::BeginSeq;
  std::set<std::string> exported;
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      const NetdevState* n = p.netdev.empty() ? nullptr : state.find_netdev(p.netdev);
      if (!n || exported.count(n->name)) continue;
      exported.insert(n->name);
      out << YAML::BeginMap;
      out << YAML::Key << "rdmaDevice" << YAML::Value << d.name;
      out << YAML::Key << "port" << YAML::Value << p.port;
      emit_netdev_fields(out, *n);
      out << YAML::EndMap;
    }
  }
  if (exported.empty()) {
    for (const NetdevState& n : state.netdevs) {
      if (n.name == "lo") continue;
      out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name;
      emit_netdev_fields(out, n);
      out << YAML::EndMap;
    }
  }
  out << YAML::EndSeq;

  if (!state.sysctl.empty()) {
    out << YAML::Key << "sysctl" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : state.sysctl) {
      out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace rdmactl
