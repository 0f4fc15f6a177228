// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric --format dot`: the scanned subnet as a Graphviz graph (the DOT language,
// https://graphviz.org/doc/info/lang.html), to be laid out by `dot`:
//
//   rdmactl fabric --format dot | dot -Tsvg > fabric.svg
//
// Nodes are the switches (boxes), channel adapters (ellipses) and routers (hexagons), named by
// their GUIDs and labelled with their description and GUID; edges are the links, labelled with
// their active width and speed ("4x HDR"; on a link within one rank an xlabel, which dot places
// after routing). A link or node with a finding is drawn red and bold (error) or orange and
// dashed (warning), its label names the check ("[error-counters p6]" on a node: the port it
// names), and its tooltip (in SVG the xlink:title of the <a> around the edge or node) carries
// each finding's message and fix. Subnet managers have a double border and a line "SM master,
// priority 15". A port at LinkUp whose peer was not linked (DanglingPort) is an edge to a dashed
// placeholder, above an endpoint and below a switch: the node that does not answer, or the GUID
// that answers there and is placed elsewhere too. Findings about the subnet as a whole
// (node-count, a subnet-manager finding with no port) are in the graph's caption.
//
// Ranks come from the topology, not from names: see fabric_levels.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/fabric/checks.h"
#include "agent/fabric/discover.h"
#include "agent/fabric/model.h"

namespace rdmactl::fabric {

struct DotOptions {
  // Draw each leaf switch (level 1) with its healthy CAs as one node ("leaf01 + 18 CAs"). A CA
  // stays its own node when a finding is about it or its link, when it hosts a subnet manager, or
  // when it is linked to anything but that one leaf.
  bool collapse = false;
};

// The level of every node of the scan (index as scan.nodes), which is its rank in the picture,
// highest on top. Told from the links, never from names; the rules read a fat tree the way it is
// drawn by hand, also when a rack is empty or a host hangs off a spine:
//   0  the endpoints: channel adapters and routers;
//   1  the leaves. A switch's "share" is the part of its links that go to endpoints; the "subset
//      test" for a switch: the switches it links are some or all of those one witness (another
//      switch) links.
//      (1) a switch linked to an endpoint, unless it has more links to switches than to
//          endpoints and each switch with endpoints that it links has a larger share than it:
//          - if it links two or more such switches it is a spine with a few hosts on it (a UFM or
//            SM server, a storage gateway), not a leaf. Two linked switches cannot both pass
//            that strict test, so the switches such a spine links stay leaves;
//          - if it links one or none, and another switch with endpoints is within two switch
//            hops, it is a leaf only when it passes the subset test, the witnesses being the
//            switches of (1), unsure ones included, that link no sure leaf of (1). A spine with a
//            host while one rack only is cabled, or a core switch with a host, fails it; a leaf
//            with fewer hosts than uplinks passes it beside another leaf on the same spines;
//      (2) a switch linked to no endpoint that passes the subset test, the witnesses being the
//          leaves of (1) that link no other leaf of (1): a leaf whose rack is empty or not
//          cabled. A core switch of a 3-tier tree links aggregation switches of several pods,
//          which no leaf links all of; a spine read as a leaf links leaves, so it witnesses none;
//   n  any other switch: n - 1 switch hops from the nearest leaf (2 a spine, 3 a core switch).
// Switches no leaf reaches (a hand-built model: a scan starts at a CA, so every switch of it is
// reached) go one level above the highest, or to level 1 in a fabric without endpoints.
// Heuristics, and these are where they read a fabric otherwise:
//   - a core switch cabled into one pod only looks like an empty leaf and is drawn as one;
//   - a switch of a torus, mesh or dragonfly with fewer hosts than each of its neighbours (a
//     host down) is lifted above them;
//   - a spine with hosts on it is a leaf when one of the leaves it links has a smaller share (a
//     leaf with one host on 18 uplinks); that leaf, unsure, then has no witness (every switch
//     near it links that spine) and is drawn with the spines, but the other spines stay above;
//   - two switches with a host each that link the same switches, none of them a leaf (two core
//     switches of a 3-tier tree with a UFM host each), witness each other and are drawn as leaves;
//   - a leaf with fewer hosts than uplinks whose spines no other leaf links all of is drawn
//     above the leaves.
std::vector<int> fabric_levels(const FabricScan& scan);

// The graph of a scan and its findings.
std::string render_fabric_dot(const FabricScan& scan, const std::vector<FabricFinding>& findings,
                              const DotOptions& options = {});

// A scan that failed: a graph with no nodes whose label is the error, so that a picture rendered
// from it says why it is empty (the command still exits 1 and prints the error on standard error).
std::string render_fabric_failed_dot(const std::string& error, const DiscoverOptions& options);

// Where a string goes: Graphviz reads a label and a tooltip through different escape passes.
enum class DotText { kLabel, kTooltip };

// A DOT quoted string ("...") that Graphviz shows as `text`, whatever bytes the fabric sent:
//   - control characters and bytes that are not UTF-8 as display escapes (agent/core/text.h
//     escape_for_display, "\x1b"); UTF-8 passes (Graphviz reads UTF-8 by default), except
//     U+FFFE and U+FFFF, written "\ufffe" and "\uffff": XML 1.0 has no such character (production
//     [2] Char) and dot -Tsvg writes them raw, which leaves an SVG no XML parser reads;
//   - '"' as \": DOT's quoted strings escape only the double quote and keep every other backslash
//     (lang.html, "IDs"), so the backslashes reach the escString passes below unchanged;
//   - '&' as "&amp;": labels and tooltips go through htmlEntityUTF8, which would turn a
//     description's "&lt;" or "&#65;" into "<" or "A";
//   - a backslash doubled in a label, where "\\" is one backslash and "\n", "\l", "\N", "\G", ...
//     are Graphviz's own sequences (attrs.html#k:escString; labels.c make_simple_label and
//     strdup_and_subst_obj), and quadrupled in a tooltip, which is read twice: emit.c
//     preprocessTooltip's interpretCRNL drops the backslash of every escape, and
//     strdup_and_subst_obj then expands \N and the like (with Debian 12's graphviz 2.42.2, a
//     tooltip "\\N" shows the node's name, "\\\\N" shows \N; labels need only "\\N").
// (dot -Tsvg writes the second space of a run as U+00A0, a no-break space, so that the SVG keeps
// it: a description with two spaces shows them, as no-break spaces.)
std::string dot_quote(std::string_view text, DotText kind = DotText::kLabel);

}  // namespace rdmactl::fabric
