// SPDX-License-Identifier: Apache-2.0
// The fabric's checks (see checks.h). Each reads the scan only; messages carry the observed values
// and name nodes by their description and GUID, as ibnetdiscover and iblinkinfo do.
#include "agent/fabric/checks.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "agent/fabric/encoding.h"

namespace rdmactl::fabric {
namespace {

std::string hex(uint64_t guid) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
  return buf;
}

std::string name_of(const FabricNode& n) { return "\"" + n.description + "\" (" + hex(n.guid) + ")"; }

std::string where(const FabricScan& scan, const PortRef& ref) {
  return name_of(scan.nodes[ref.node]) + " port " + std::to_string(ref.port);
}

std::string port_text(const FabricPort& p) {
  return port_state_name(p.state) + "/" + phys_state_name(p.phys_state);
}

bool port_up(const FabricPort& p) { return p.state == kPortActive && p.phys_state == kPhysLinkUp; }

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

class Checker {
 public:
  Checker(const FabricScan& scan, const FabricExpectation* expect) : scan_(scan), expect_(expect), links_(links_of(scan)) {}

  std::vector<FabricFinding> run() {
    for (const Link& l : links_) check_port_state(l);
    for (const Link& l : links_) check_width(l);
    for (const Link& l : links_) check_speed(l);
    check_counters();
    check_subnet_managers();
    check_duplicates();
    check_unresponsive();
    check_descriptions();
    check_counts();
    return std::move(findings_);
  }

 private:
  FabricFinding& add(const std::string& check, const std::string& severity, std::size_t node, int port,
                     std::string message, std::string fix) {
    FabricFinding f;
    f.check = check;
    f.severity = severity;
    f.node_description = scan_.nodes[node].description;
    f.node_guid = scan_.nodes[node].guid;
    f.port = port;
    f.message = std::move(message);
    f.fix = std::move(fix);
    findings_.push_back(std::move(f));
    return findings_.back();
  }

  void set_peer(FabricFinding& f, const PortRef& peer) {
    f.has_peer = true;
    f.peer_description = scan_.nodes[peer.node].description;
    f.peer_guid = scan_.nodes[peer.node].guid;
    f.peer_port = peer.port;
  }

  FabricFinding& add_link(const std::string& check, const std::string& severity, const PortRef& at,
                          const PortRef& peer, std::string message, std::string fix) {
    FabricFinding& f = add(check, severity, at.node, at.port, std::move(message), std::move(fix));
    set_peer(f, peer);
    return f;
  }

  // The node a finding about the subnet as a whole is filed under: the one the scan started from.
  std::size_t subnet_node() const { return scan_.local_node.value_or(0); }

  // --- port-state ---------------------------------------------------------------------------
  void check_port_state(const Link& l) {
    const FabricPort& a = *port_at(scan_, l.a);
    const FabricPort& b = *port_at(scan_, l.b);
    if (port_up(a) && port_up(b)) return;
    // File it under the end that is not up (the switch end when neither is).
    auto [at, peer] = !port_up(a) && !port_up(b) ? switch_first(l)
                      : !port_up(a)              ? std::pair{l.a, l.b}
                                                 : std::pair{l.b, l.a};
    const FabricPort& p = *port_at(scan_, at);
    const FabricPort& q = *port_at(scan_, peer);
    std::string message = "port is " + port_text(p) + ", its peer " + where(scan_, peer) + " is " + port_text(q);
    std::string fix;
    if (p.phys_state == kPhysDisabled) {
      fix = "the port is disabled: enable it (`ibportstate " + std::to_string(p.lid) + " " + std::to_string(p.number) +
            " enable`, or the switch's CLI)";
    } else if (p.phys_state == kPhysLinkUp) {
      message += ": the link is up but the subnet manager has not made it Active";
      fix = "check that a subnet manager is MASTER (`sminfo`) and what its log says about this port "
            "(/var/log/opensm.log); `ibportstate " + std::to_string(p.lid) + " " + std::to_string(p.number) +
            " reset` retrains the link";
    } else {
      fix = "the link does not train: reseat or replace the cable or transceiver (`mlxlink` shows the "
            "physical layer), then check the port again";
    }
    add_link("port-state", "error", at, peer, std::move(message), std::move(fix));
  }

  // --- link-width and link-speed ----------------------------------------------------------------
  // A link's finding is filed under its switch end (iblinkinfo lists links by switch, and that is
  // where a cable is reseated), under its first end between two switches or two CAs.
  std::pair<PortRef, PortRef> switch_first(const Link& l) const {
    const bool a_switch = scan_.nodes[l.a.node].type == NodeType::kSwitch;
    const bool b_switch = scan_.nodes[l.b.node].type == NodeType::kSwitch;
    if (b_switch && !a_switch) return {l.b, l.a};
    return {l.a, l.b};
  }

  static bool both_linkup(const FabricPort& a, const FabricPort& b) {
    // IBA C14-24.2.1 (cited by ibqueryerrors.c print_port_config): a port that is not up may
    // return anything in PortInfo but the states.
    return a.phys_state == kPhysLinkUp && b.phys_state == kPhysLinkUp && a.state > kPortDown && b.state > kPortDown;
  }

  void check_width(const Link& l) {
    const FabricPort& a = *port_at(scan_, l.a);
    const FabricPort& b = *port_at(scan_, l.b);
    if (!both_linkup(a, b)) return;
    const int lanes = std::min(width_lanes(a.width_active), width_lanes(b.width_active));
    const std::string active = std::to_string(lanes) + "x";
    if (expect_ && expect_->link_width) {
      if (lanes == *expect_->link_width) return;
      const bool narrower = lanes < *expect_->link_width;
      add_link("link-width", narrower ? "error" : "warning", switch_first(l).first, switch_first(l).second,
               "link runs at " + active + "; the spec says linkWidth " + std::to_string(*expect_->link_width) + "x",
               narrower ? "lanes are down: reseat or replace the cable or transceiver (`mlxlink` shows which lanes), "
                          "then check the link again"
                        : "correct the spec's linkWidth, or the width enabled on the ports");
      return;
    }
    const int best = widest(a.width_supported & b.width_supported);
    if (best == 0 || lanes >= width_lanes(best)) return;
    add_link("link-width", "error", switch_first(l).first, switch_first(l).second,
             "link runs at " + active + " but both ends support " + width_name(best) + " (supported: " +
                 width_name(widest(a.width_supported)) + " and " + width_name(widest(b.width_supported)) + ")",
             "lanes are down: reseat or replace the cable or transceiver (`mlxlink` shows which lanes); if the "
             "width was narrowed on purpose, say so with the spec's fabric.linkWidth");
  }

  void check_speed(const Link& l) {
    const FabricPort& a = *port_at(scan_, l.a);
    const FabricPort& b = *port_at(scan_, l.b);
    if (!both_linkup(a, b)) return;
    std::string active = active_speed(a);
    const std::string other = active_speed(b);
    if (speed_rank(other) < speed_rank(active)) active = other;
    if (active.empty()) return;
    if (expect_ && expect_->link_speed) {
      if (active == *expect_->link_speed) return;
      const bool slower = speed_rank(active) < speed_rank(*expect_->link_speed);
      add_link("link-speed", slower ? "error" : "warning", switch_first(l).first, switch_first(l).second,
               "link runs at " + active + "; the spec says linkSpeed " + *expect_->link_speed,
               slower ? "the link trained below its speed: check that the cable is rated for " +
                            *expect_->link_speed + " and the speeds enabled on both ports (`smpquery portinfo`); "
                            "reseat or replace the cable"
                      : "correct the spec's linkSpeed");
      return;
    }
    const std::string best = best_common_speed(a, b);
    if (best.empty() || speed_rank(active) >= speed_rank(best)) return;
    add_link("link-speed", "error", switch_first(l).first, switch_first(l).second, "link runs at " + active + " but both ends support " + best,
             "the link trained below its speed: check that the cable is rated for " + best +
                 " and the speeds enabled on both ports (`smpquery portinfo`); reseat or replace the cable");
  }

  // --- error-counters ---------------------------------------------------------------------------
  void check_counters() {
    for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
      for (const FabricPort& p : scan_.nodes[n].ports) {
        std::vector<std::string> raised;
        std::set<std::string> names;
        bool saturated_any = false;
        for (const std::string& name : error_counter_names()) {
          auto it = p.counters.find(name);
          if (it == p.counters.end()) continue;
          const uint64_t limit = counter_threshold(expect_, name);
          // A PortCounters counter at its maximum stopped there: the real count is that or more,
          // so a threshold at or above the maximum cannot be judged and is not taken as passed.
          const uint64_t max = counter_max(name);
          const bool saturated = !p.counters_extended && max > 0 && it->second >= max;
          if (it->second <= limit && !saturated) continue;
          std::string text = name + " " + std::to_string(it->second);
          if (saturated) {
            text += " (saturated: PortCounters stops at " + std::to_string(max) + "; " +
                    (limit >= max ? "the threshold " + std::to_string(limit) + " cannot be told"
                                  : "> " + std::to_string(limit)) +
                    ")";
            saturated_any = true;
          } else {
            text += " (> " + std::to_string(limit) + ")";
          }
          raised.push_back(text);
          names.insert(name);
        }
        if (raised.empty()) continue;
        std::string fix = counter_fix(names, p);
        if (saturated_any) {
          fix += "; a saturated counter counts no more: the port's PMA has no 64-bit error counters "
                 "(PortCountersExtended), so clear it (`perfquery -R`) and read it again soon after";
        }
        FabricFinding& f = add("error-counters", "warning", n, p.number,
                               "error counters above their thresholds: " + join(raised), std::move(fix));
        if (p.peer) set_peer(f, *p.peer);
      }
    }
  }

  static std::string counter_fix(const std::set<std::string>& names, const FabricPort& p) {
    std::vector<std::string> fixes;
    static const std::set<std::string> kPhysical = {"SymbolErrorCounter", "LinkErrorRecoveryCounter",
                                                    "LinkDownedCounter", "PortRcvErrors",
                                                    "LocalLinkIntegrityErrors", "PortRcvRemotePhysicalErrors"};
    if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return kPhysical.count(n) > 0; })) {
      fixes.push_back("errors on the physical link: reseat or replace the cable or transceiver (`mlxlink` shows "
                      "its BER)");
    }
    if (names.count("PortXmitDiscards")) {
      fixes.push_back("packets discarded on transmit: the peer does not drain (check its state) or the routing sends "
                      "to a dead end (check the SM's log)");
    }
    if (names.count("ExcessiveBufferOverrunErrors")) {
      fixes.push_back("receive buffer overruns: flow control between the ports is broken (check both ends' "
                      "firmware and VL settings)");
    }
    if (names.count("VL15Dropped")) {
      fixes.push_back("management packets dropped: a few during SM sweeps are normal; a growing count means "
                      "the port is flooded with SMPs");
    }
    return join(fixes, "; ") + "; clear with `perfquery -R " + std::to_string(p.lid) + " " + std::to_string(p.number) +
           "` and watch whether they grow, or raise the spec's fabric.thresholds";
  }

  // --- subnet-manager -----------------------------------------------------------------------------
  std::string sm_text(const SubnetManager& sm) const {
    std::string out = where(scan_, sm.port);
    if (sm.answered) {
      out += " (" + sm_state_name(sm.state) + ", priority " + std::to_string(sm.priority) + ")";
    } else {
      out += " (" + sm.error + ")";
    }
    return out;
  }

  void check_subnet_managers() {
    std::vector<const SubnetManager*> masters, answering;
    std::vector<std::string> all;
    for (const SubnetManager& sm : scan_.subnet_managers) {
      all.push_back(sm_text(sm));
      if (!sm.answered) continue;
      answering.push_back(&sm);
      if (sm.state == kSmMaster) masters.push_back(&sm);
    }
    if (masters.empty()) {
      const std::size_t node = scan_.subnet_managers.empty() ? subnet_node() : scan_.subnet_managers.front().port.node;
      const int port = scan_.subnet_managers.empty() ? -1 : scan_.subnet_managers.front().port.port;
      add("subnet-manager", "error", node, port,
          all.empty() ? "no subnet manager: no port in the subnet has the IsSM capability"
                      : "no master subnet manager; ports with IsSM: " + join(all),
          "start a subnet manager (`systemctl enable --now opensm` on one or two nodes, or the managed switch's "
          "SM) with priorities that elect one master (spec: subnetManager.enabled and priority); until then no "
          "port changes state and the subnet does not react to changes");
    } else if (masters.size() > 1) {
      std::vector<std::string> names;
      for (const SubnetManager* m : masters) names.push_back(sm_text(*m));
      FabricFinding& f = add("subnet-manager", "error", masters[0]->port.node, masters[0]->port.port,
                             std::to_string(masters.size()) + " master subnet managers: " + join(names),
                             "two masters fight over the subnet (LIDs, routes): stop all but one, or give them "
                             "the same SM_Key so that they elect one (opensm sm_key), and different priorities");
      set_peer(f, masters[1]->port);
    }
    if (expect_ && expect_->subnet_managers && static_cast<int>(answering.size()) != *expect_->subnet_managers) {
      const bool fewer = static_cast<int>(answering.size()) < *expect_->subnet_managers;
      std::vector<std::string> names;
      for (const SubnetManager* m : answering) names.push_back(sm_text(*m));
      add("subnet-manager", fewer ? "error" : "warning", subnet_node(), -1,
          std::to_string(answering.size()) + " subnet manager(s) answer" + (names.empty() ? "" : " (" + join(names) + ")") +
              "; the spec says subnetManagers " + std::to_string(*expect_->subnet_managers),
          fewer ? "start the missing standby SMs: without them the subnet has no failover"
                : "stop the subnet managers the spec does not list, or correct the spec's subnetManagers");
    }
  }

  // --- duplicate-guid ---------------------------------------------------------------------------
  void check_duplicates() {
    // A node GUID answering at a port that discovery left unlinked, while discovery placed a node
    // of that GUID elsewhere.
    std::set<uint64_t> reported;
    for (const DanglingPort& d : scan_.dangling) {
      if (!d.answered) continue;
      for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
        const FabricNode& node = scan_.nodes[n];
        if (node.guid != d.node_guid) continue;
        std::vector<std::string> placed;
        for (const FabricPort& p : node.ports) {
          if (p.peer) placed.push_back(where(scan_, *p.peer));
        }
        FabricFinding f;
        f.check = "duplicate-guid";
        f.severity = "error";
        f.node_description = d.description;
        f.node_guid = d.node_guid;
        f.port = d.port;
        f.message = "node GUID " + hex(d.node_guid) + " answers behind " + where(scan_, d.at) + " as \"" +
                    d.description + "\", and behind " + (placed.empty() ? std::string("another port") : join(placed)) +
                    ", where the scan recorded it as " + name_of(node) +
                    ": two nodes have one GUID, and discovery merges them into one";
        f.fix = "give each node its own GUID: burn the adapter's or switch's firmware with its own GUIDs "
                "(`flint -d <dev> -guid <guid> sg`, or restore the vendor's image); the SM cannot route to either";
        findings_.push_back(std::move(f));
        set_peer(findings_.back(), d.at);
        reported.insert(d.node_guid);
        break;
      }
    }
    // Port GUIDs: each CA port has its own; a switch's ports share port 0's.
    std::map<uint64_t, std::vector<PortRef>> by_guid;
    for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
      for (const FabricPort& p : scan_.nodes[n].ports) {
        if (scan_.nodes[n].type == NodeType::kSwitch && p.number != 0) continue;
        if (p.guid != 0) by_guid[p.guid].push_back(PortRef{n, p.number});
      }
    }
    for (const auto& [guid, refs] : by_guid) {
      std::set<std::size_t> nodes;
      for (const PortRef& r : refs) nodes.insert(r.node);
      if (nodes.size() < 2 || reported.count(scan_.nodes[refs[0].node].guid)) continue;
      std::vector<std::string> places;
      for (const PortRef& r : refs) places.push_back(where(scan_, r));
      FabricFinding& f = add("duplicate-guid", "error", refs[0].node, refs[0].port,
                             "port GUID " + hex(guid) + " is on " + join(places, " and "),
                             "give each port its own GUID (`flint -d <dev> -guid <guid> sg` burns an adapter's "
                             "GUIDs); the SM and every path record confuse the two ports");
      set_peer(f, refs[1]);
    }
  }

  // --- unresponsive-node ------------------------------------------------------------------------
  void check_unresponsive() {
    for (const DanglingPort& d : scan_.dangling) {
      if (d.answered) continue;
      add("unresponsive-node", "warning", d.at.node, d.at.port,
          "port is LinkUp but the node behind it does not answer SMPs (" + d.error + "): it is missing from the scan",
          "check the node behind this port: a hung adapter (reset it: `mlxfwreset`, or reboot the host) or a "
          "link with errors (this port's error counters)");
    }
  }

  // --- node-description -------------------------------------------------------------------------
  void check_descriptions() {
    for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
      const FabricNode& node = scan_.nodes[n];
      if (!is_default_description(node.description)) continue;
      const bool sw = node.type == NodeType::kSwitch;
      add("node-description", "warning", n, -1,
          std::string(sw ? "switch" : "channel adapter") + " " + hex(node.guid) + " has " +
              (node.description.empty() ? "an empty node description" : "its default node description \"" +
                                                                           node.description + "\"") +
              ": no report or SM log can say which " + (sw ? "switch" : "host") + " it is",
          sw ? "name it: a managed switch takes its host name (\"MF0;<host>:<model>/U1\"); for an unmanaged one, "
               "list its GUID in a node-name-map (ibnetdiscover --node-name-map, opensm node_name_map_name)"
             : "run rdma-ndd on the host (`systemctl enable --now rdma-ndd`), which names every device "
               "\"<hostname> <device>\", or write the name to /sys/class/infiniband/<device>/node_desc");
    }
  }

  // --- node-count -------------------------------------------------------------------------------
  void check_counts() {
    if (!expect_) return;
    int switches = 0, cas = 0;
    for (const FabricNode& n : scan_.nodes) {
      switches += n.type == NodeType::kSwitch ? 1 : 0;
      cas += n.type == NodeType::kCa ? 1 : 0;
    }
    auto compare = [&](const char* what, const char* key, int found, const std::optional<int>& want) {
      if (!want || found == *want) return;
      const bool fewer = found < *want;
      add("node-count", fewer ? "error" : "warning", subnet_node(), -1,
          std::string("the subnet has ") + std::to_string(found) + " " + what + "; the spec says " + key + " " +
              std::to_string(*want),
          fewer ? std::string("find the missing ") + what +
                      ": a link down (ports at Polling on the switches), a node powered off, or a node that does "
                      "not answer (unresponsive-node findings)"
                : std::string("correct the spec's ") + key + ", or find the " + what + " that should not be here");
    };
    compare("switches", "switches", switches, expect_->switches);
    compare("channel adapters", "cas", cas, expect_->cas);
  }

  const FabricScan& scan_;
  const FabricExpectation* expect_;
  std::vector<Link> links_;
  std::vector<FabricFinding> findings_;
};

}  // namespace

const std::vector<std::string>& fabric_check_names() {
  static const std::vector<std::string> kNames = {"port-state",     "link-width",        "link-speed",
                                                  "error-counters", "subnet-manager",    "duplicate-guid",
                                                  "unresponsive-node", "node-description", "node-count"};
  return kNames;
}

const std::vector<std::string>& fabric_check_severities(const std::string& check) {
  static const std::vector<std::string> kError = {"error"};
  static const std::vector<std::string> kWarning = {"warning"};
  static const std::vector<std::string> kBoth = {"error", "warning"};
  static const std::vector<std::string> kNone;
  static const std::map<std::string, const std::vector<std::string>*> kBySeverity = {
      {"port-state", &kError},         {"link-width", &kBoth},          {"link-speed", &kBoth},
      {"error-counters", &kWarning},   {"subnet-manager", &kBoth},      {"duplicate-guid", &kError},
      {"unresponsive-node", &kWarning}, {"node-description", &kWarning}, {"node-count", &kBoth}};
  auto it = kBySeverity.find(check);
  return it == kBySeverity.end() ? kNone : *it->second;
}

uint64_t counter_threshold(const FabricExpectation* expect, const std::string& counter) {
  if (expect) {
    auto it = expect->thresholds.find(counter);
    if (it != expect->thresholds.end()) return it->second;
  }
  return 0;
}

bool is_default_description(const std::string& description) {
  const auto first = description.find_first_not_of(" \t");
  if (first == std::string::npos) return true;
  static const std::string kVendor = "Mellanox Technologies";
  const auto last = description.find_last_not_of(" \t");
  const std::string trimmed = description.substr(first, last - first + 1);
  return trimmed.size() >= kVendor.size() && trimmed.compare(trimmed.size() - kVendor.size(), kVendor.size(), kVendor) == 0;
}

std::string active_speed(const FabricPort& port) {
  // rdma-core HEAD ibnetdisc.c ibnd_get_agg_linkspeedext_field: with IsExtendedSpeedsSupported,
  // LinkSpeedExtActive2 (XDR) when set, else LinkSpeedExtActive; 0 there means the port runs at a
  // LinkSpeed (SDR..QDR), or at FDR10, which only the Mellanox ExtendedPortInfo tells from QDR
  // (ibqueryerrors.c print_port_config: espeed, else fdr10, else speed). port_of() fills the
  // LinkSpeedExt2 fields only where the CapabilityMask(2) say they are valid.
  if (port.cap_mask & kCapHasExtSpeeds) {
    if (port.ext2_speed_active) return ext_speed_name(port.ext2_speed_active << 5);
    if (port.ext_speed_active) return ext_speed_name(port.ext_speed_active);
  }
  if (port.mlnx_speed_active & kMlnxFdr10) return "FDR10";
  return speed_name(port.speed_active);
}

std::string best_common_speed(const FabricPort& a, const FabricPort& b) {
  auto highest_bit = [](int mask) {
    int bit = 0;
    for (int b = 1; b <= mask && b > 0; b <<= 1) {
      if (mask & b) bit = b;
    }
    return bit;
  };
  // infiniband-diags ibdiag_common.c get_max_msg: the extended speeds when both ends have the
  // capability and support some (rdma-core HEAD: LinkSpeedExtSupported | LinkSpeedExtSupported2
  // << 5, ibnd_get_agg_linkspeedextsup), else FDR10 when both ends' ExtendedPortInfo supports it
  // (check_fdr10_supp), else LinkSpeedSupported.
  auto ext_supported = [](const FabricPort& p) {
    return (p.cap_mask & kCapHasExtSpeeds) ? (p.ext_speed_supported | (p.ext2_speed_supported << 5)) : 0;
  };
  if (ext_supported(a) && ext_supported(b)) {
    const int ext = highest_bit(ext_supported(a) & ext_supported(b));
    if (ext) return ext_speed_name(ext);
  }
  if ((a.mlnx_speed_supported & kMlnxFdr10) && (b.mlnx_speed_supported & kMlnxFdr10)) return "FDR10";
  return speed_name(highest_bit(a.speed_supported & b.speed_supported));
}

std::vector<FabricFinding> check_fabric(const FabricScan& scan, const FabricExpectation* expect) {
  return Checker(scan, expect).run();
}

std::optional<FabricExpectation> expectation_of(const FabricSpec& spec) {
  std::optional<FabricExpectation> out = spec.fabric;
  if (out && out->subnet_managers) return out;
  if (spec.defaults.subnet_manager.enabled == true) return out;  // every node: not countable
  std::set<std::string> sm_nodes;
  for (const NodeEntry& entry : spec.nodes) {
    for (const std::string& glob : entry.match) {
      if (glob.find_first_of("*?[") != std::string::npos) continue;  // fnmatch's special characters
      if (merge_for_node(spec, glob).subnet_manager.enabled == true) sm_nodes.insert(glob);
    }
  }
  if (sm_nodes.empty()) return out;
  if (!out) out.emplace();
  out->subnet_managers = static_cast<int>(sm_nodes.size());
  return out;
}

}  // namespace rdmactl::fabric
