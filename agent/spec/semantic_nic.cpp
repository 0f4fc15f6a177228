// SPDX-License-Identifier: Apache-2.0
// An interface's NIC tuning: sriov, nvconfig (firmware parameters), pcie and ethtool, and the checks
// among them: an nvconfig parameter another field owns (nvconfig_owner), SR-IOV against the firmware
// parameters the same entry pins, global pause beside PFC.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include <strings.h>

#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

// NAME or NAME[index] as `mstconfig q` prints it: a capital, then capitals, digits and '_'.
bool is_param_name(std::string_view name) {
  const size_t open = name.find('[');
  const std::string_view base = name.substr(0, open);
  if (base.empty() || !std::isupper(static_cast<unsigned char>(base.front()))) return false;
  for (const char c : base) {
    if (!std::isupper(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  if (open == std::string_view::npos) return true;
  const std::string_view index = name.substr(open + 1);
  return index.size() >= 2 && index.back() == ']' &&
         std::all_of(index.begin(), index.end() - 1, [](unsigned char c) { return std::isdigit(c) != 0; });
}

// A spec value in the form the nvconfig reconciler compares and mstconfig takes: a boolean as
// True/False, an integer in decimal, a name as written.
std::optional<std::string> nvconfig_value(const Field& field) {
  switch (yaml_type(field.value)) {
    case YamlType::kBool:
      return std::string(yaml_bool(field.value).value_or(false) ? "True" : "False");
    case YamlType::kInt: {
      const auto n = yaml_int(field.value);
      if (!n || *n < 0) return std::nullopt;
      return std::to_string(*n);
    }
    case YamlType::kString:
      return yaml_string(field.value);
    default:
      return std::nullopt;
  }
}

}  // namespace

void SpecReader::read_nic_tuning(const Field& map, InterfaceSpec& spec) {
  if (auto sriov = member(map, "sriov")) spec.sriov.num_vfs = int_of(member(*sriov, "numVfs"), 0, kMaxVfs);
  if (auto nvconfig = member(map, "nvconfig")) spec.nvconfig = read_nvconfig(*nvconfig, spec);
  if (auto pcie = member(map, "pcie")) spec.pcie.max_read_request = int_of(member(*pcie, "maxReadRequest"), 128, 4096);
  spec.irq_affinity = string_of(member(map, "irqAffinity"));
  if (auto ethtool = member(map, "ethtool")) {
    if (auto rings = member(*ethtool, "rings")) {
      spec.ethtool.rings.rx = u32_of(member(*rings, "rx"));
      spec.ethtool.rings.rx_mini = u32_of(member(*rings, "rxMini"));
      spec.ethtool.rings.rx_jumbo = u32_of(member(*rings, "rxJumbo"));
      spec.ethtool.rings.tx = u32_of(member(*rings, "tx"));
    }
    if (auto channels = member(*ethtool, "channels")) {
      spec.ethtool.channels.rx = u32_of(member(*channels, "rx"));
      spec.ethtool.channels.tx = u32_of(member(*channels, "tx"));
      spec.ethtool.channels.other = u32_of(member(*channels, "other"));
      spec.ethtool.channels.combined = u32_of(member(*channels, "combined"));
    }
    if (auto pause = member(*ethtool, "pause")) {
      spec.ethtool.pause.autoneg = bool_of(member(*pause, "autoneg"));
      spec.ethtool.pause.rx = bool_of(member(*pause, "rx"));
      spec.ethtool.pause.tx = bool_of(member(*pause, "tx"));
    }
  }
  check_sriov_against_nvconfig(map, spec);
  check_pause_against_pfc(map, spec);
}

NvconfigSpec SpecReader::read_nvconfig(const Field& map, const InterfaceSpec& spec) {
  NvconfigSpec params;
  for (const Field& entry : members(map)) {
    const std::optional<std::string> name = key_text(entry.key);
    if (!name) continue;
    if (!is_param_name(*name)) {
      report(entry.key_position(), entry.path,
             in_quotes(*name) + " is not a firmware parameter name: write it as `mstconfig -d <bdf> q` prints it, "
                                "in capitals (SRIOV_EN), an array element as NAME[index]");
      continue;
    }
    if (const auto owner = nvconfig_owner(*name, spec)) {
      report(entry.key_position(), entry.path,
             *name + " is set by the interface's " + *owner + ", not by nvconfig: set " + *owner +
                 " (one field per firmware parameter, so that two never stage different values)");
      continue;
    }
    // The schema has checked the value's shape; a value it let through that is none of the three
    // forms (a negative number) has been reported there.
    if (auto value = nvconfig_value(entry)) params[*name] = *value;
  }
  return params;
}

namespace {

// A value of the spec's nvconfig as mstconfig's `set` reads a number (mlxcfg_param.cpp: strtoul with
// base 0, then an enum's names without case): "8", "0x8", True/true/TRUE as 1, False as 0.
std::optional<unsigned long> nvconfig_number(const std::string& text) {
  if (::strcasecmp(text.c_str(), "true") == 0) return 1;
  if (::strcasecmp(text.c_str(), "false") == 0) return 0;
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(text.c_str(), &end, 0);
  if (*end != '\0' || errno == ERANGE || n > 0xFFFFFFFFul) return std::nullopt;
  return n;
}

}  // namespace

// The firmware decides how many VFs the function offers (SRIOV_EN, and NUM_OF_VFS, or the
// function's own PF_NUM_OF_VF where PF_NUM_OF_VF_VALID is True: mstflint's mlxconfig_host.db): an
// entry that pins them below its own numVfs can never converge.
void SpecReader::check_sriov_against_nvconfig(const Field& map, const InterfaceSpec& spec) {
  if (!spec.sriov.num_vfs || *spec.sriov.num_vfs == 0) return;
  const auto nvconfig = member(map, "nvconfig");
  if (!nvconfig) return;
  if (auto enabled = spec.nvconfig.find("SRIOV_EN"); enabled != spec.nvconfig.end()) {
    if (nvconfig_number(enabled->second) == 0ul) {
      const auto at = member(*nvconfig, "SRIOV_EN");
      report(at->key_position(), at->path,
             "SRIOV_EN is " + (enabled->second == "False" ? std::string("false") : enabled->second) +
                 " but sriov.numVfs is " + std::to_string(*spec.sriov.num_vfs) +
                 ": the firmware offers no VFs without SR-IOV; set SRIOV_EN: true or numVfs: 0");
    }
  }
  const auto per_pf = spec.nvconfig.find("PF_NUM_OF_VF_VALID");
  const bool per_pf_on = per_pf != spec.nvconfig.end() && nvconfig_number(per_pf->second) == 1ul;
  const std::string count_param = per_pf_on ? "PF_NUM_OF_VF" : "NUM_OF_VFS";
  if (auto count = spec.nvconfig.find(count_param); count != spec.nvconfig.end()) {
    const auto at = member(*nvconfig, count_param);
    const auto n = nvconfig_number(count->second);
    if (n && *n < static_cast<unsigned long>(*spec.sriov.num_vfs)) {
      report(at->key_position(), at->path,
             count_param + " is " + count->second + " but sriov.numVfs is " + std::to_string(*spec.sriov.num_vfs) +
                 ": the firmware offers at most " + count_param + " VFs (sriov_totalvfs)" +
                 (per_pf_on ? " where PF_NUM_OF_VF_VALID is true" : "") + "; raise " + count_param +
                 " or lower numVfs");
    }
  }
}

// 802.3x pause stops the whole link, every priority: beside PFC it pauses the lossy traffic PFC
// leaves alone and hides which priority is congested. NVIDIA's RoCE setup turns it off where PFC
// is on (`ethtool -A <netdev> rx off tx off`).
void SpecReader::check_pause_against_pfc(const Field& map, const InterfaceSpec& spec) {
  const bool pause = spec.ethtool.pause.rx.value_or(false) || spec.ethtool.pause.tx.value_or(false);
  const bool pfc = (spec.qos.pfc && !spec.qos.pfc->empty()) || spec.qos.profile;
  if (!pause || !pfc) return;
  const auto at = member(*member(map, "ethtool"), "pause");
  warn("pause-pfc", at->key_position(), at->path,
       "global pause (rx or tx true) beside PFC: 802.3x pause stops every priority, lossy ones too; set "
       "pause rx: false and tx: false on a port with PFC");
}

}  // namespace rdmactl::semantic_detail
