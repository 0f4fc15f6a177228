// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric --format dot` (see dot.h). What Graphviz makes of the attributes used here was
// checked with Debian 12's graphviz 2.42.2 (whose `dot -V` says 2.43.0), `dot -Tsvg`: `style=bold`
// is stroke-width 2, `style=dashed` a stroke-dasharray, `color=red`/`orange` are written as
// stroke="red"/"orange", `tooltip` becomes the xlink:title of an <a> wrapped around the node's or
// edge's shapes (the <title> of the <g> is the node's name, the GUID), `id` and `class` become the
// <g> element's id and class ("edge link finding error"), and strings are read as dot_quote says.
#include "agent/fabric/dot.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "agent/core/text.h"
#include "agent/fabric/encoding.h"
#include "agent/fabric/format.h"

namespace rdmactl::fabric {
namespace {

// X11 colour names, which SVG knows by the same names (Graphviz passes them through).
constexpr const char* kErrorColour = "red";
constexpr const char* kWarningColour = "orange";

const char* type_word(NodeType t) {
  switch (t) {
    case NodeType::kSwitch: return "switch";
    case NodeType::kRouter: return "router";
    case NodeType::kCa: break;
  }
  return "channel adapter";
}

const char* shape_of(NodeType t) {
  switch (t) {
    case NodeType::kSwitch: return "box";
    case NodeType::kRouter: return "hexagon";
    case NodeType::kCa: break;
  }
  return "ellipse";
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// a < b with runs of digits compared as numbers ("leaf2" < "leaf10"), the rest byte by byte.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      std::string_view x(a.data() + i, ei - i), y(b.data() + j, ej - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ei, j = ej;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Lines of a label or tooltip, each quoted as dot_quote does, joined by escString's line breaks
// ("\n" centred, "\l" left-justified: attrs.html#k:escString).
std::string lines_quoted(const std::vector<std::string>& lines, DotText kind = DotText::kLabel,
                         const char* brk = "\\n") {
  std::string out = "\"";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string q = dot_quote(lines[i], kind);
    out += q.substr(1, q.size() - 2);
    if (i + 1 < lines.size() || std::string(brk) == "\\l") out += brk;
  }
  return out + "\"";
}

// Checks whose finding names a port and the far end of its link: they colour the link.
bool finding_about_link(const FabricFinding& f) {
  static const std::set<std::string> kLinkChecks = {"port-state",        "link-width",     "link-speed",
                                                    "error-counters",    "unresponsive-node", "duplicate-guid"};
  return f.port >= 0 && kLinkChecks.count(f.check) > 0;
}

// A finding as one node or link carries it. On a node, a finding that names a port says which
// (text and junit say "port N" too): a link finding whose link is not drawn (a cable down, a host
// powered off), two masters, a port GUID twice.
struct Marked {
  const FabricFinding* finding = nullptr;
  int port = -1;             // the port on the node it marks (-1: on a link, or about the node)
  std::string peer;          // the far end of that port's link ("\"leaf02\" port 7"), if known
};

// The findings on one node or link, and the worst severity among them.
struct Mark {
  std::vector<Marked> findings;
  bool error = false;

  bool empty() const { return findings.empty(); }
  void add(const FabricFinding& f, int port = -1, std::string peer = {}) {
    findings.push_back(Marked{&f, port, std::move(peer)});
    error = error || f.severity == "error";
  }
  // "link-width", or "error-counters p6" on a node.
  std::string checks() const {
    std::vector<std::string> names;
    for (const Marked& m : findings) {
      const std::string name = m.finding->check + (m.port >= 0 ? " p" + std::to_string(m.port) : "");
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  // Colour, pen and style, so that a finding reads in grey too: bold for an error, dashed for a
  // warning. `kind` is the element's class ("link", "switch", "sm ca"); a finding adds
  // "finding error" or "finding warning" to it.
  std::string attributes(const std::string& kind) const {
    if (empty()) return ", class=" + dot_quote(kind);
    const char* colour = error ? kErrorColour : kWarningColour;
    return std::string(", color=\"") + colour + "\", fontcolor=\"" + colour + "\", penwidth=" + (error ? "3" : "2") +
           ", style=\"" + (error ? "bold" : "dashed") + "\", class=" +
           dot_quote(kind + " finding " + (error ? "error" : "warning"));
  }
  void tooltip_lines(std::vector<std::string>& lines) const {
    for (const Marked& m : findings) {
      std::string where;
      if (m.port >= 0) where = " port " + std::to_string(m.port) + (m.peer.empty() ? "" : " -- " + m.peer);
      lines.push_back(m.finding->severity + " [" + m.finding->check + "]" + where + ": " + m.finding->message);
      lines.push_back("fix: " + m.finding->fix);
    }
  }
};

// One end of an edge as findings name it: a node GUID and a port.
struct End {
  uint64_t guid = 0;
  int port = -1;
  bool operator==(const End&) const = default;
};

struct Edge {
  std::size_t upper = 0;        // scan node drawn above (tail)
  int upper_port = 0;
  std::size_t lower = 0;        // scan node, or a placeholder index when `dangling`
  int lower_port = 0;
  const DanglingPort* dangling = nullptr;
  End a, b;                     // both ends, as findings name them
  std::string rate;             // "4x EDR", or what the link is when not both ends are up
  Mark mark;
};

bool finding_about_subnet(const FabricFinding& f) {
  return f.check == "node-count" || (f.check == "subnet-manager" && f.port < 0);
}

bool edge_matches(const Edge& e, const FabricFinding& f) {
  const End at{f.node_guid, f.port};
  if (!f.has_peer) return e.a == at || e.b == at;
  const End peer{f.peer_guid, f.peer_port};
  return (e.a == at && e.b == peer) || (e.b == at && e.a == peer);
}

class DotWriter {
 public:
  DotWriter(const FabricScan& scan, const std::vector<FabricFinding>& findings, const DotOptions& options)
      : scan_(scan), findings_(findings), options_(options), levels_(fabric_levels(scan)), marks_(scan.nodes.size()),
        collapsed_into_(scan.nodes.size(), kNone) {}

  std::string render() {
    name_nodes();
    build_edges();
    place_findings();
    if (options_.collapse) {
      collapse();
      common_rate_ = common_rate();
    }
    order_nodes();
    std::ostringstream out;
    out << "// rdmactl fabric --format dot: render with `dot -Tsvg > fabric.svg` (Graphviz)\n"
        << "graph \"fabric\" {\n"
        << "  graph [rankdir=TB, ordering=out, ranksep=0.8, nodesep=0.25, fontname=\"Helvetica\", fontsize=11, "
           "labelloc=b, labeljust=l, label="
        << lines_quoted(caption(), DotText::kLabel, "\\l") << "];\n"
        << "  node [fontname=\"Helvetica\", fontsize=10];\n"
        << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
    write_nodes(out);
    write_edges(out);
    out << "}\n";
    return out.str();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Node names from GUIDs (ibnetdiscover's spelling); a GUID met twice (a hand-built scan: the
  // scan merges nodes by GUID) gets the node's index after it, so that no two nodes merge here.
  void name_nodes() {
    std::set<std::string> used;
    for (std::size_t i = 0; i < scan_.nodes.size(); ++i) {
      std::string id = guid_text(scan_.nodes[i].guid);
      if (!used.insert(id).second) id += "-" + std::to_string(i);
      ids_.push_back(id);
    }
  }

  std::string rate_of(const FabricPort& a, const FabricPort& b) const {
    if (a.phys_state != kPhysLinkUp || b.phys_state != kPhysLinkUp) {
      return phys_state_name(a.phys_state) + " / " + phys_state_name(b.phys_state);
    }
    std::string rate = link_width(a, b);
    const std::string speed = link_speed(a, b);
    if (!speed.empty()) rate += (rate.empty() ? "" : " ") + speed;
    return rate;
  }

  void build_edges() {
    for (const Link& l : links_of(scan_)) {
      Edge e;
      // The end on the higher level is the tail: dot ranks an edge's tail above its head.
      const bool a_up = levels_[l.a.node] >= levels_[l.b.node];
      const PortRef& up = a_up ? l.a : l.b;
      const PortRef& down = a_up ? l.b : l.a;
      e.upper = up.node;
      e.upper_port = up.port;
      e.lower = down.node;
      e.lower_port = down.port;
      e.a = End{scan_.nodes[l.a.node].guid, l.a.port};
      e.b = End{scan_.nodes[l.b.node].guid, l.b.port};
      e.rate = rate_of(*port_at(scan_, l.a), *port_at(scan_, l.b));
      edges_.push_back(std::move(e));
    }
    for (std::size_t i = 0; i < scan_.dangling.size(); ++i) {
      const DanglingPort& d = scan_.dangling[i];
      Edge e;
      e.upper = d.at.node;
      e.upper_port = d.at.port;
      e.lower = i;
      e.lower_port = d.answered ? d.port : -1;
      e.dangling = &d;
      e.a = End{scan_.nodes[d.at.node].guid, d.at.port};
      e.b = d.answered ? End{d.node_guid, d.port} : End{0, -2};
      e.rate = d.answered ? "answers here too" : "no answer";
      edges_.push_back(std::move(e));
    }
  }

  std::optional<std::size_t> node_by_guid(uint64_t guid) const {
    for (std::size_t i = 0; i < scan_.nodes.size(); ++i) {
      if (scan_.nodes[i].guid == guid) return i;
    }
    return std::nullopt;
  }

  // Each finding goes to the link it names, else to its node (and its peer's node: two masters,
  // one port GUID on two nodes), else to the caption.
  void place_findings() {
    for (const FabricFinding& f : findings_) {
      if (finding_about_subnet(f)) {
        subnet_findings_.push_back(&f);
        continue;
      }
      if (finding_about_link(f)) {
        auto edge = std::find_if(edges_.begin(), edges_.end(), [&](const Edge& e) { return edge_matches(e, f); });
        if (edge != edges_.end()) {
          edge->mark.add(f);
          continue;
        }
      }
      const auto node = node_by_guid(f.node_guid);
      if (!node) {
        subnet_findings_.push_back(&f);
        continue;
      }
      // The far end named only for a link check: the peer of two masters or of a GUID seen twice
      // is the other place, which that node's own mark names.
      const bool link = finding_about_link(f) && f.has_peer;
      marks_[*node].add(f, f.port, link ? "\"" + f.peer_description + "\" port " + std::to_string(f.peer_port) : "");
      if (f.has_peer && f.peer_guid != f.node_guid) {
        if (const auto peer = node_by_guid(f.peer_guid)) {
          marks_[*peer].add(f, f.port >= 0 ? f.peer_port : -1,
                            link ? "\"" + f.node_description + "\" port " + std::to_string(f.port) : "");
        }
      }
    }
  }

  bool hosts_sm(std::size_t node) const {
    return std::any_of(scan_.subnet_managers.begin(), scan_.subnet_managers.end(),
                       [&](const SubnetManager& sm) { return sm.port.node == node; });
  }

  // --collapse: a CA goes into its leaf when every edge it has leads to that one leaf (level 1)
  // and nothing is wrong with it or them, and it hosts no subnet manager.
  void collapse() {
    // The edges at each node, so that a fabric of thousands of CAs is not walked once per CA.
    std::vector<std::vector<const Edge*>> at(scan_.nodes.size());
    for (const Edge& e : edges_) {
      at[e.upper].push_back(&e);
      if (!e.dangling) at[e.lower].push_back(&e);
    }
    for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
      if (scan_.nodes[n].type != NodeType::kCa || !marks_[n].empty() || hosts_sm(n) || at[n].empty()) continue;
      std::size_t leaf = kNone;
      bool keep = false;
      for (const Edge* e : at[n]) {
        const std::size_t other = e->upper == n ? e->lower : e->upper;
        if (e->dangling || !e->mark.empty() || scan_.nodes[other].type != NodeType::kSwitch || levels_[other] != 1 ||
            (leaf != kNone && leaf != other)) {
          keep = true;
          break;
        }
        leaf = other;
      }
      if (keep) continue;
      collapsed_into_[n] = leaf;
      ++collapsed_count_[leaf];
      collapsed_links_[leaf] += at[n].size();
      for (const Edge* e : at[n]) ++collapsed_rates_[leaf][e->rate];
    }
  }

  std::vector<std::string> caption() const {
    int switches = 0, cas = 0, routers = 0;
    for (const FabricNode& n : scan_.nodes) {
      switches += n.type == NodeType::kSwitch;
      cas += n.type == NodeType::kCa;
      routers += n.type == NodeType::kRouter;
    }
    std::size_t errors = 0;
    for (const FabricFinding& f : findings_) errors += f.severity == "error";
    std::string counts = "InfiniBand fabric seen from " + scan_.ca + " port " + std::to_string(scan_.ca_port) + " (" +
                         guid_text(scan_.local_guid) + "): " + plural(switches, "switch", "switches") + ", " +
                         plural(cas, "CA", "CAs");
    if (routers) counts += ", " + plural(routers, "router", "routers");
    counts += ", " + plural(links_of(scan_).size(), "link", "links");
    std::vector<std::string> lines = {counts};
    lines.push_back(findings_.empty() ? "No findings."
                                      : plural(findings_.size(), "finding", "findings") + ": " +
                                            plural(errors, "error", "errors") + ", " +
                                            plural(findings_.size() - errors, "warning", "warnings") + ".");
    for (const FabricFinding* f : subnet_findings_) lines.push_back(f->severity + " [" + f->check + "]: " + f->message);
    lines.push_back("Red and bold: an error; orange and dashed: a warning (the tooltip has the finding and its fix). "
                    "Double border: a subnet manager.");
    if (options_.collapse) {
      lines.push_back("--collapse: each leaf is drawn with its healthy CAs as one node" +
                      (common_rate_.empty() ? std::string(".") : "; a healthy link without a label runs at " + common_rate_ + "."));
    }
    return lines;
  }

  std::vector<std::string> sm_lines(std::size_t node) const {
    std::vector<std::string> lines;
    const bool many_ports = scan_.nodes[node].num_ports > 1;
    for (const SubnetManager& sm : scan_.subnet_managers) {
      if (sm.port.node != node) continue;
      std::string line = "SM";
      if (many_ports) line += " port " + std::to_string(sm.port.port);
      line += sm.answered ? " " + lower(sm_state_name(sm.state)) + ", priority " + std::to_string(sm.priority)
                          : ": SMInfo not read";
      lines.push_back(line);
    }
    return lines;
  }

  void write_node(std::ostream& out, std::size_t n) const {
    const FabricNode& node = scan_.nodes[n];
    const Mark& mark = marks_[n];
    std::vector<std::string> label = {node.description.empty() ? "(no description)" : node.description,
                                      guid_text(node.guid)};
    const std::vector<std::string> sms = sm_lines(n);
    label.insert(label.end(), sms.begin(), sms.end());
    if (auto it = collapsed_count_.find(n); it != collapsed_count_.end()) {
      // The rates are counted per link; when a CA has two links to its leaf, the label says how
      // many links there are ("+ 1 CA on 2 links (1 at 4x EDR, 1 at 4x HDR)").
      std::string rates;
      for (const auto& [rate, count] : collapsed_rates_.at(n)) {
        rates += (rates.empty() ? "" : ", ") + (collapsed_rates_.at(n).size() > 1 ? std::to_string(count) + " at " : "") + rate;
      }
      const std::size_t links = collapsed_links_.at(n);
      label.push_back("+ " + plural(it->second, "CA", "CAs") +
                      (links != it->second ? " on " + plural(links, "link", "links") : "") + " (" + rates + ")");
    }
    if (!mark.empty()) label.push_back("[" + mark.checks() + "]");
    std::vector<std::string> tip = {std::string(type_word(node.type)) + " \"" + node.description + "\" " +
                                    guid_text(node.guid) + ", LID " + std::to_string(node.lid)};
    tip.insert(tip.end(), sms.begin(), sms.end());
    if (auto it = collapsed_count_.find(n); it != collapsed_count_.end()) {
      std::string names;
      for (std::size_t c = 0; c < scan_.nodes.size(); ++c) {
        if (collapsed_into_[c] == n) names += (names.empty() ? "" : ", ") + scan_.nodes[c].description;
      }
      tip.push_back("with " + plural(it->second, "healthy CA", "healthy CAs") + ": " + names);
    }
    mark.tooltip_lines(tip);
    out << "    " << dot_quote(ids_[n]) << " [shape=" << shape_of(node.type) << ", label=" << lines_quoted(label)
        << ", tooltip=" << lines_quoted(tip, DotText::kTooltip) << ", id=" << dot_quote("node-" + ids_[n]);
    if (!sms.empty()) out << ", peripheries=2";
    out << mark.attributes(std::string(sms.empty() ? "" : "sm ") + (node.type == NodeType::kCa ? "ca" : type_word(node.type)));
    out << "];\n";
  }

  // The nodes of each level in the order of their names, digits compared as numbers (leaf2 before
  // leaf10), so that a reader finds a switch where the names say. dot keeps that order because the
  // nodes are defined in it and every edge is written in the order of its ends under
  // `ordering=out` (attrs.html#d:ordering: a node's out-edges left to right as they are defined).
  void order_nodes() {
    for (std::size_t n = 0; n < scan_.nodes.size(); ++n) {
      if (collapsed_into_[n] == kNone) by_level_[levels_[n]].push_back(n);
    }
    position_.assign(scan_.nodes.size(), 0);
    for (auto& [level, nodes] : by_level_) {
      std::stable_sort(nodes.begin(), nodes.end(), [&](std::size_t a, std::size_t b) {
        return natural_less(scan_.nodes[a].description, scan_.nodes[b].description);
      });
      for (std::size_t i = 0; i < nodes.size(); ++i) position_[nodes[i]] = i;
    }
  }

  // Each level a rank=same subgraph, the highest first.
  void write_nodes(std::ostream& out) const {
    for (const auto& [level, nodes] : by_level_) {
      out << "  subgraph \"level-" << level << "\" {\n    rank=same;\n";
      for (std::size_t n : nodes) write_node(out, n);
      out << "  }\n";
    }
    // Placeholders for the far ends of dangling ports.
    for (const Edge& e : edges_) {
      if (!e.dangling) continue;
      const DanglingPort& d = *e.dangling;
      std::vector<std::string> label;
      if (d.answered) {
        label = {d.description.empty() ? "(no description)" : d.description, guid_text(d.node_guid),
                 "answers here as well"};
      } else {
        label = {"does not answer", d.error};
      }
      std::vector<std::string> tip = {"behind \"" + scan_.nodes[d.at.node].description + "\" port " +
                                      std::to_string(d.at.port) + ": " + label.front()};
      e.mark.tooltip_lines(tip);
      out << "  " << dot_quote(dangling_id(e)) << " [shape=box, style=\"dashed\", label=" << lines_quoted(label)
          << ", tooltip=" << lines_quoted(tip, DotText::kTooltip) << ", id=" << dot_quote("node-" + dangling_id(e));
      if (!e.mark.empty()) out << ", color=\"" << (e.mark.error ? kErrorColour : kWarningColour) << "\"";
      out << ", class=\"dangling\"];\n";
    }
  }

  std::string dangling_id(const Edge& e) const {
    return ids_[e.upper] + "-port" + std::to_string(e.upper_port) + "-peer";
  }

  bool drawn(const Edge& e) const {
    return e.dangling || (collapsed_into_[e.upper] == kNone && collapsed_into_[e.lower] == kNone);
  }

  // The rate most healthy links drawn run at ("" when none is healthy).
  std::string common_rate() const {
    std::map<std::string, std::size_t> counts;
    for (const Edge& e : edges_) {
      if (drawn(e) && !e.dangling && e.mark.empty()) ++counts[e.rate];
    }
    std::string best;
    std::size_t most = 0;
    for (const auto& [rate, n] : counts) {
      if (n > most) best = rate, most = n;
    }
    return best;
  }

  bool quiet(const Edge& e) const {
    return options_.collapse && !e.dangling && e.mark.empty() && !common_rate_.empty() && e.rate == common_rate_;
  }

  void write_edges(std::ostream& out) const {
    std::vector<const Edge*> ordered;
    for (const Edge& e : edges_) {
      if (drawn(e)) ordered.push_back(&e);
    }
    // By tail, then head, in the nodes' order (order_nodes); placeholders after the nodes.
    auto key = [&](const Edge* e) {
      const std::size_t head = e->dangling ? scan_.nodes.size() + e->lower : position_[e->lower];
      return std::tuple(-levels_[e->upper], position_[e->upper], head, e->upper_port);
    };
    std::stable_sort(ordered.begin(), ordered.end(), [&](const Edge* a, const Edge* b) { return key(a) < key(b); });
    for (const Edge* edge : ordered) {
      const Edge& e = *edge;
      const std::string head = e.dangling ? dangling_id(e) : ids_[e.lower];
      // A link within one rank (two leaves cabled together, a leaf's CA-less neighbour): dot
      // 2.42 puts a `label` on a flat edge in a box above it and its spline router can miss that
      // box ("Unable to reclaim box space in spline routing ... Something is probably seriously
      // wrong", seen here on fat trees with a host on a spine; Graphviz's old tracker, GitHub
      // ellson/MOTHBALLED-graphviz issues 604 and 751: flat labelled edges). An `xlabel` is placed
      // after routing (attrs.html#d:xlabel; forcelabels defaults to true) and renders cleanly.
      const bool flat = !e.dangling && levels_[e.upper] == levels_[e.lower];
      // The node behind an endpoint's dangling port is a switch, or another endpoint: its
      // placeholder is drawn above the endpoint (dot ranks an edge's tail above its head).
      const bool above = e.dangling && levels_[e.upper] == 0;
      const std::string head_name = e.dangling ? (e.dangling->answered ? e.dangling->description : std::string("?"))
                                               : scan_.nodes[e.lower].description;
      // --collapse: a healthy link at the common rate is drawn bare (the caption gives the rate,
      // the tooltip its ends); the labels of a few hundred spine links would hide the picture.
      const bool bare = quiet(e);
      std::vector<std::string> label = {bare ? "" : e.rate};
      if (!e.mark.empty()) label.push_back("[" + e.mark.checks() + "]");
      std::vector<std::string> tip = {"\"" + scan_.nodes[e.upper].description + "\" port " + std::to_string(e.upper_port) +
                                      " -- \"" + head_name + "\"" +
                                      (e.lower_port >= 0 ? " port " + std::to_string(e.lower_port) : "") + ": " + e.rate};
      e.mark.tooltip_lines(tip);
      const std::string upper_label = bare ? "" : std::to_string(e.upper_port);
      const std::string lower_label = bare || e.lower_port < 0 ? "" : std::to_string(e.lower_port);
      out << "  " << dot_quote(above ? head : ids_[e.upper]) << " -- " << dot_quote(above ? ids_[e.upper] : head) << " ["
          << (flat ? "xlabel=" : "label=") << lines_quoted(label)
          << ", taillabel=" << dot_quote(above ? lower_label : upper_label)
          << ", headlabel=" << dot_quote(above ? upper_label : lower_label)
          << ", tooltip=" << lines_quoted(tip, DotText::kTooltip)
          << ", id=" << dot_quote("link-" + ids_[e.upper] + "-" + std::to_string(e.upper_port) + "-" + head + "-" +
                                  std::to_string(e.lower_port))
          << e.mark.attributes(e.dangling ? "link dangling" : "link") << "];\n";
    }
  }

  const FabricScan& scan_;
  const std::vector<FabricFinding>& findings_;
  const DotOptions& options_;
  std::vector<int> levels_;
  std::vector<std::string> ids_;
  std::vector<Edge> edges_;
  std::vector<Mark> marks_;
  std::vector<const FabricFinding*> subnet_findings_;
  std::vector<std::size_t> collapsed_into_;
  std::map<std::size_t, std::size_t> collapsed_count_;
  std::map<std::size_t, std::size_t> collapsed_links_;                          // their links
  std::map<std::size_t, std::map<std::string, std::size_t>> collapsed_rates_;  // links per rate
  std::string common_rate_;  // --collapse: the rate of the links drawn without a label
  std::map<int, std::vector<std::size_t>, std::greater<>> by_level_;  // nodes drawn, by level, in order
  std::vector<std::size_t> position_;                                 // a node's place in its level
};

}  // namespace

std::string dot_quote(std::string_view text, DotText kind) {
  std::string shown = escape_for_display(text);
  // U+FFFE and U+FFFF are valid UTF-8 but no XML character (XML 1.0 production [2] Char): dot
  // -Tsvg would write them as they are and make the SVG unreadable.
  for (const auto& [bytes, escape] : {std::pair{"\xEF\xBF\xBE", "\\ufffe"}, std::pair{"\xEF\xBF\xBF", "\\uffff"}}) {
    for (std::size_t at = shown.find(bytes); at != std::string::npos; at = shown.find(bytes, at)) {
      shown.replace(at, 3, escape);
      at += 6;
    }
  }
  const char* backslash = kind == DotText::kTooltip ? "\\\\\\\\" : "\\\\";
  std::string out = "\"";
  for (char c : shown) {
    switch (c) {
      case '\\': out += backslash; break;
      case '"': out += "\\\""; break;
      case '&': out += "&amp;"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string render_fabric_dot(const FabricScan& scan, const std::vector<FabricFinding>& findings,
                              const DotOptions& options) {
  return DotWriter(scan, findings, options).render();
}

std::string render_fabric_failed_dot(const std::string& error, const DiscoverOptions& options) {
  std::string from = options.ca.empty() ? "the first active InfiniBand port" : options.ca;
  if (!options.ca.empty() && options.port > 0) from += " port " + std::to_string(options.port);
  return "// rdmactl fabric --format dot: the scan failed, so the graph has no nodes\n"
         "graph \"fabric\" {\n"
         "  graph [fontname=\"Helvetica\", fontsize=11, fontcolor=\"" +
         std::string(kErrorColour) + "\", id=\"scan-failed\", label=" +
         lines_quoted({"The fabric scan from " + from + " failed:", error}) + "];\n}\n";
}

}  // namespace rdmactl::fabric
