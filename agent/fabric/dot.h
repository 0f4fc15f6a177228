// SPDX-License-Identifier: Apache-2.0
// `rdmactl fabric --format dot`: the scanned subnet as a Graphviz graph (the DOT language,
// https://graphviz.org/doc/info/lang.html), to be laid out by `dot`:
//
//   rdmactl fabric --format dot | dot -Tsvg > fabric.svg
//
// Nodes are the switches (boxes), channel adapters (ellipses) and routers (hexagons), named by
// their GUIDs and labelled with their description and GUID; edges are the links, labelled with
// their active width and speed ("4x HDR"). A link or node with a finding is drawn red and bold
// (error) or orange and dashed (warning), its label names the check, and its tooltip (in SVG the
// xlink:title of the <a> around the edge or node) carries each finding's message and fix. Subnet
// managers have a double border and a line "SM master, priority 15". A port at LinkUp whose peer
// was not linked (DanglingPort) is an edge to a dashed placeholder: the node that does not answer,
// or the GUID that answers there and is placed elsewhere too. Findings about the subnet as a whole
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
// highest on top:
//   0  channel adapters and routers (the endpoints);
//   n  a switch n switch hops above the nearest endpoint: a switch linked to a CA is 1 (a leaf),
//      a switch linked to leaves but to no CA is 2 (a spine), then 3 (a core switch), and so on.
// Breadth first from every endpoint at once over the links, through switches only (a dual-ported
// CA joins nothing: its two leaves stay leaves). A switch no endpoint reaches (a scan always
// starts at a CA, so only a hand-built model has one) goes one level above the highest.
// In a fat tree this reads as CAs at the bottom, leaves above them and spines on top; in another
// topology it is still each switch's distance from the hosts.
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
//     escape_for_display, "\x1b"); UTF-8 passes (Graphviz reads UTF-8 by default);
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
std::string dot_quote(std::string_view text, DotText kind = DotText::kLabel);

}  // namespace rdmactl::fabric
