// SPDX-License-Identifier: Apache-2.0
// An interface's qos (profile, trust, DSCP keys, PFC priorities; a profile excludes the fields it
// sets), and the warning when CNPs land on a priority with PFC.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {

QosSpec SpecReader::read_qos(const Field& map) {
  QosSpec qos;
  qos.profile = string_of(member(map, "profile"));
  qos.profile_priority = int_of(member(map, "priority"), 0, kMaxPriority);
  qos.trust = string_of(member(map, "trust"));
  if (auto dscp = member(map, "dscpToPriority"); dscp && dscp->value.IsMap()) {
    qos.dscp_to_priority = read_dscp_map(*dscp);
  }
  qos.pfc = priorities_of(member(map, "pfc"));
  check_profile_excludes_explicit(map);
  return qos;
}

void SpecReader::check_profile_excludes_explicit(const Field& map) {
  const auto profile = member(map, "profile");
  if (!profile) return;
  for (const Field& field : members(map)) {
    const std::string name = key_text(field.key).value_or("");
    if (name != "trust" && name != "dscpToPriority" && name != "pfc") continue;
    const std::string profile_name = yaml_string(profile->value).value_or("roce-lossless");
    report(field.key_position(), field.path,
           "profile " + profile_name + " sets trust, dscpToPriority and pfc; remove them or the profile");
    return;
  }
}

std::map<int, int> SpecReader::read_dscp_map(const Field& map) {
  std::map<int, int> out;
  for (const Field& entry : members(map)) {
    const auto dscp = read_dscp_key(entry);
    const auto priority = int_of(entry, 0, kMaxPriority);
    if (dscp && priority) out[*dscp] = *priority;
  }
  return out;
}

// DSCP keys are plain integers, as the contract writes them ({26: 3}).
std::optional<int> SpecReader::read_dscp_key(const Field& entry) {
  const std::string text = key_text(entry.key).value_or("");
  const auto value = yaml_int(entry.key);
  if (value && *value >= 0 && *value <= kMaxDscp && std::to_string(*value) == text) {
    return static_cast<int>(*value);
  }
  std::string message;
  if (is_int64_overflow(entry.key) || (value && (*value < 0 || *value > kMaxDscp))) {
    message = "DSCP " + text + " is out of range: DSCP values are 0-63";
  } else if (value) {
    message = "write DSCP " + text + " as a plain decimal integer, e.g. " + std::to_string(*value);
  } else if (is_quoted_non_string(entry.key)) {
    message = "DSCP " + in_quotes(text) + " is quoted; write it as a plain integer: " + text;
  } else {
    message = in_quotes(text) + " is not a DSCP value: expected an integer from 0 to 63";
  }
  report(entry.key_position(), entry.path, std::move(message));
  return std::nullopt;
}

// CNPs on a priority with PFC on: DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015) sends congestion notification packets on a priority of their own,
// served ahead of data, because a CNP that waits behind the congestion it reports (or behind a
// PAUSE) slows the sender too late. NVUE's `nv set qos roce` (Cumulus Linux "RDMA over Converged
// Ethernet - RoCE": switch priority 6 to traffic class 6, CNP, strict; 3 to 3, RoCE, lossless)
// and the roce-lossless profile put CNPs (DSCP 48) on priority 6 and PFC on 3 only. The CNP's
// priority is the interface's qos.dscpToPriority entry for ecn.cnpDscp, else DSCP / 8 (the
// default DSCP map: what rdmactl writes for unlisted DSCPs on mlx5, and a switch's default).
// With trust pcp the DSCP picks no priority, and without cnpDscp or pfc there is nothing to say.
// `own`: the records of the list read (defaults, or a nodes: entry merged over `base`, defaults);
// in an entry's pass only interfaces whose QoS or ECN the entry sets are checked again.
void SpecReader::check_cnp_priorities(const NodeSpec& merged, const std::vector<InterfaceRecord>& own,
                                      const std::vector<InterfaceRecord>& base, bool entry_pass) {
  const auto find = [](const std::vector<InterfaceRecord>& records, const std::string& key) -> const InterfaceRecord* {
    for (const InterfaceRecord& r : records) {
      if (r.key == key) return &r;
    }
    return nullptr;
  };
  for (const InterfaceSpec& iface : merged.interfaces) {
    if (!iface.ecn.cnp_dscp || !iface.qos.pfc || iface.qos.trust == std::string("pcp")) continue;
    const InterfaceRecord* o = find(own, iface.selector.key());
    const InterfaceRecord* b = find(base, iface.selector.key());
    if (o == nullptr) continue;  // a defaults interface the entry does not touch: checked with defaults
    const bool touches = o->cnp_dscp || o->pfc || o->dscp_to_priority || o->profile;
    if (entry_pass && !touches) continue;
    const int dscp = *iface.ecn.cnp_dscp;
    const bool mapped = iface.qos.dscp_to_priority && iface.qos.dscp_to_priority->count(dscp) > 0;
    const int priority = mapped ? iface.qos.dscp_to_priority->at(dscp) : dscp >> 3;
    if (std::find(iface.qos.pfc->begin(), iface.qos.pfc->end(), priority) == iface.qos.pfc->end()) continue;
    std::optional<std::pair<Position, std::string>> at;
    for (const auto* field : {&o->cnp_dscp, &o->profile, &o->pfc, &o->dscp_to_priority}) {
      if (!at && *field) at = **field;
    }
    if (!at && b != nullptr) at = b->cnp_dscp ? b->cnp_dscp : b->profile;
    if (!at) at = std::pair(o->at, iface.origin.path);
    std::string pfc;
    for (const int p : *iface.qos.pfc) pfc += (pfc.empty() ? "" : ", ") + std::to_string(p);
    const bool from_profile = iface.qos.profile.has_value();
    warn("cnp-pfc", at->first, at->second,
         "CNPs (ecn.cnpDscp " + std::to_string(dscp) + (from_profile ? ", with qos.profile " + *iface.qos.profile : "") +
             ") go on priority " + std::to_string(priority) + " (" +
             (mapped ? "qos.dscpToPriority maps " + std::to_string(dscp) + " to it"
                     : "DSCP " + std::to_string(dscp) + " / 8: qos.dscpToPriority does not list it") +
             "), and qos.pfc [" + pfc + "] has PFC on that priority: a CNP held back by PAUSE frames reaches the "
             "sender late and DCQCN slows it too late. DCQCN sends CNPs on a priority of their own, usually "
             "strict, without PFC (NVUE's `nv set qos roce`: CNPs on priority 6, lossless RoCE on 3); map "
             "ecn.cnpDscp to a priority without PFC");
  }
}

}  // namespace rdmactl::semantic_detail
