// SPDX-License-Identifier: Apache-2.0
// export: the managed fields of a HostState, as YAML the spec loader accepts.
#include "agent/export/export.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>

#include "agent/core/text.h"
#include "agent/state/firmware.h"

namespace rdmactl {
namespace {

void emit_netdev_fields(YAML::Emitter& out, const NetdevState& n) {
  out << YAML::Key << "mtu" << YAML::Value << n.mtu;
  out << YAML::Key << "state" << YAML::Value << n.state;
  out << YAML::Key << "addresses" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& a : n.addresses) out << YAML::DoubleQuoted << a;
  out << YAML::EndSeq;
}

std::string export_quoted(std::string_view text) { return "\"" + escape_for_display(text) + "\""; }

// The running firmware, pinned (policy validate: a plan only reports), on the first interface of
// each adapter. Only where this rdmactl observed it (`firmware`) and no other image waits on flash:
// a pending image would make the exported spec drift on the host it came from.
void emit_firmware(YAML::Emitter& out, const HostState& state, const DeviceState& d, std::set<std::string>& done,
                   std::vector<std::string>& skipped) {
  if (d.pci.empty() || !d.firmware) return;
  const std::string adapter = adapter_of(state, d);
  if (!done.insert(adapter).second) return;
  const std::vector<const DeviceState*> functions = adapter_devices(state, adapter);
  const FirmwareView fw = firmware_view(functions.empty() ? d : *functions.front());
  // The spec takes three dot-separated numbers (the schema's pattern).
  if (std::count(fw.running.begin(), fw.running.end(), '.') != 2 || !compare_fw_versions(fw.running, fw.running)) return;
  if (fw.pending()) {
    skipped.push_back("the firmware of adapter " + adapter + ": " + fw.running + " runs and " + fw.stored +
                      " waits on flash for activation; pin one by hand");
    return;
  }
  out << YAML::Key << "firmware" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "version"
      << YAML::Value << YAML::DoubleQuoted << fw.running << YAML::EndMap;
}

}  // namespace

std::optional<std::string> spec_text_problem(std::string_view text, bool allow_tab) {
  if (const auto at = first_invalid_utf8(text)) {
    return "has the byte " + byte_text(static_cast<unsigned char>(text[*at])) + ", which is not UTF-8";
  }
  if (const auto at = first_control_byte(text, allow_tab)) {
    return "has the control character " + byte_text(static_cast<unsigned char>(text[*at]));
  }
  // UTF-8 text, so a C2 byte here starts a character: U+0080-U+009F, which a terminal may act on
  // (U+009B is CSI) and the loader refuses.
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (is_c1_control(text, i)) return "has the control character " + escape_for_display(text.substr(i, 2));
  }
  return std::nullopt;
}

// The VFs a PF has, on the first interface of its PCI function: only a count above 0 (`numVfs: 0`
// of a function whose SR-IOV nobody uses would make a plan on a ConnectX ask mstconfig for nothing),
// and only where it was observed (reconcilers/sriov's shape).
void emit_sriov(YAML::Emitter& out, const HostState& state, const DeviceState& d, std::set<std::string>& done) {
  if (d.pci.empty() || !done.insert(d.pci).second) return;
  const PciFunctionState* function = state.find_pci_function(d.pci);
  if (!function || !function->sriov || !function->sriov->is_object()) return;
  const auto count = function->sriov->find("numVfs");
  if (count == function->sriov->end() || !count->is_number_integer() || count->get<int>() <= 0) return;
  out << YAML::Key << "sriov" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "numVfs"
      << YAML::Value << count->get<int>() << YAML::EndMap;
}

std::string export_spec(const HostState& state, std::vector<std::string>* left_out) {
  std::vector<std::string> skipped;
  YAML::Emitter body;
  body << YAML::BeginMap;
  body << YAML::Key << "apiVersion" << YAML::Value << "rdmactl/v1";
  body << YAML::Key << "kind" << YAML::Value << "FabricSpec";
  body << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
       << (state.node.empty() ? std::string("exported") : state.node) << YAML::EndMap;
  body << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  body << YAML::Key << "match" << YAML::Value << YAML::DoubleQuoted << state.node;

  body << YAML::Key << "interfaces" << YAML::Value << YAML::BeginSeq;
  std::set<std::string> exported;
  std::set<std::string> firmware_done;  // adapters whose firmware an interface already carries
  std::set<std::string> sriov_done;     // PCI functions whose VFs an interface already carries
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      const NetdevState* n = p.netdev.empty() ? nullptr : state.find_netdev(p.netdev);
      if (!n || exported.count(n->name)) continue;
      exported.insert(n->name);
      // The netdev is selected by the device's name, never its own: only the device's must fit.
      if (const auto problem = spec_text_problem(d.name)) {
        skipped.push_back("the netdev " + export_quoted(n->name) + " of RDMA device " + export_quoted(d.name) + " port " +
                          std::to_string(p.port) + ": the device's name " + *problem);
        continue;
      }
      body << YAML::BeginMap;
      body << YAML::Key << "rdmaDevice" << YAML::Value << d.name;
      body << YAML::Key << "port" << YAML::Value << p.port;
      emit_netdev_fields(body, *n);
      emit_firmware(body, state, d, firmware_done, skipped);
      emit_sriov(body, state, d, sriov_done);
      body << YAML::EndMap;
    }
  }
  if (exported.empty()) {
    for (const NetdevState& n : state.netdevs) {
      if (n.name == "lo") continue;
      if (const auto problem = spec_text_problem(n.name)) {
        skipped.push_back("the netdev " + export_quoted(n.name) + ": its name " + *problem);
        continue;
      }
      body << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name;
      emit_netdev_fields(body, n);
      body << YAML::EndMap;
    }
  }
  body << YAML::EndSeq;

  std::map<std::string, std::string> sysctl;
  for (const auto& [key, value] : state.sysctl) {
    // Tabs pass in a value: the kernel prints vectors with them (tcp_rmem), and the spec takes them.
    if (const auto problem = spec_text_problem(key)) {
      skipped.push_back("the sysctl " + export_quoted(key) + ": its key " + *problem);
    } else if (const auto value_problem = spec_text_problem(value, /*allow_tab=*/true)) {
      skipped.push_back("the sysctl " + key + ": its value " + export_quoted(value) + " " + *value_problem);
    } else {
      sysctl.emplace(key, value);
    }
  }
  if (!sysctl.empty()) {
    body << YAML::Key << "sysctl" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : sysctl) {
      body << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    }
    body << YAML::EndMap;
  }
  body << YAML::EndMap << YAML::EndSeq;
  body << YAML::EndMap;

  std::string heading = "Exported by `rdmactl export` from node " + escape_for_display(state.node) +
                        ": `rdmactl plan` of this spec on that node shows no drift.";
  if (!skipped.empty()) {
    heading += "\nLeft out, as a spec holds only UTF-8 text without control characters (rdmactl leaves them as they are):";
    for (const std::string& s : skipped) heading += "\n  " + s;
  }
  YAML::Emitter out;
  out << YAML::Comment(heading);
  if (left_out) *left_out = std::move(skipped);
  return std::string(out.c_str()) + "\n" + body.c_str() + "\n";
}

}  // namespace rdmactl
