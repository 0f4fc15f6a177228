#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# check-picture.py SVG full|collapse
# check-picture.py SVG ranks|ranks-collapse WARNED GROUP...
# Reads the SVG that Graphviz's `dot -Tsvg` drew from `rdmactl fabric --format dot` and checks the
# picture, not the DOT text. In every mode, each node is drawn black unless it has a finding
# (class "finding error" red, "finding warning" orange).
#
# full|collapse: the `dot` scenario (run-scenario.sh: fabric-fattree.net, a link-width error on
# leaf01 port 2, a SymbolErrorCounter warning on leaf02 port 7, SMs on node01 (master) and node02
# (standby)):
#   - the faulty links' paths are red (error) and orange and dashed (warning), their tooltips (the
#     xlink:title of the <a> dot -Tsvg wraps around an element with a tooltip) carry the finding;
#   - every other link is drawn black and names no finding;
#   - the SMs have a double border (two ellipses) and say "SM master" / "SM standby";
#   - the ranks read as a fat tree: spine01 above the leaves, the leaves above the CAs;
#   - collapse: the leaves carry their healthy CAs ("+ 1 CA", "+ 3 CAs"), the SMs' CAs stay.
# ranks|ranks-collapse: the `dot-ranks` scenario. WARNED is the description of the one node drawn
# orange (a node-description warning), "-" for none; each GROUP is the comma-separated
# descriptions of the nodes of one rank, the top rank first: each group on one rank, each below the
# one before. ranks: every link's label (its xlabel within one rank) shows "12x HDR".
# Exit 0 when all hold, 1 with the reasons on standard error.
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"

path, mode = sys.argv[1], sys.argv[2]
if mode not in ("full", "collapse", "ranks", "ranks-collapse"):
    sys.exit("check-picture.py: unknown mode %r" % mode)
root = ET.parse(path).getroot()
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def describe(g):
    classes = (g.get("class") or "").split()
    a = g.find(".//" + SVG + "a")
    texts = [t.text or "" for t in g.iter(SVG + "text")]
    shapes = [e for e in g.iter() if e.tag in (SVG + "ellipse", SVG + "polygon", SVG + "path")]
    ys = [float(t.get("y")) for t in g.iter(SVG + "text")]
    return {
        "id": g.get("id"),
        "classes": classes,
        "tooltip": a.get(XLINK + "title") if a is not None else "",
        "texts": texts,
        "shapes": shapes,
        "y": sum(ys) / len(ys) if ys else 0.0,
    }


nodes, edges = [], []
for g in root.iter(SVG + "g"):
    classes = (g.get("class") or "").split()
    if "node" in classes:
        nodes.append(describe(g))
    elif "edge" in classes:
        edges.append(describe(g))


def node_named(description):
    found = [n for n in nodes if n["texts"] and n["texts"][0] == description]
    check(len(found) == 1, "one node labelled %r, found %d" % (description, len(found)))
    return found[0] if found else None


def edge_between(a, b):
    """The edges whose tooltip's first line names "a" port x -- "b" port y."""
    out = []
    for e in edges:
        first = e["tooltip"].split("\n", 1)[0]
        if first.startswith('"%s" port %d -- "%s" port %d:' % (a[0], a[1], b[0], b[1])):
            out.append(e)
    return out


def strokes(element):
    return {s.get("stroke") for s in element["shapes"] if s.tag == SVG + "path"}


def node_strokes(n):
    return {s.get("stroke") for s in n["shapes"] if s.tag in (SVG + "ellipse", SVG + "polygon")}


# --- node colours (every mode) ---------------------------------------------------------------------
for n in nodes:
    want = "red" if "error" in n["classes"] else "orange" if "warning" in n["classes"] else "black"
    check(node_strokes(n) == {want}, "%s drawn %s, expected %s" % (n["texts"][:1], node_strokes(n), want))


def fattree_checks():
    # --- the faulty links ------------------------------------------------------------------------
    red = [e for e in edges if "red" in strokes(e)]
    orange = [e for e in edges if "orange" in strokes(e)]
    check(len(red) == 1, "one red link, found %d: %s" % (len(red), [e["tooltip"][:80] for e in red]))
    check(len(orange) == 1, "one orange link, found %d: %s" % (len(orange), [e["tooltip"][:80] for e in orange]))
    width = edge_between(("leaf01", 2), ("node02 mlx5_0", 1))
    check(len(width) == 1 and width[0] in red, "the link leaf01 port 2 -- node02 is the red one")
    if width:
        e = width[0]
        check("error [link-width]: link runs at 1x but both ends support 12x" in e["tooltip"],
              "its tooltip names the finding: %r" % e["tooltip"])
        check("\nfix: " in e["tooltip"], "its tooltip gives the fix: %r" % e["tooltip"])
        check("1x HDR" in e["texts"] and "[link-width]" in e["texts"], "its label: %r" % e["texts"])
        check(any(float(s.get("stroke-width") or 1) >= 2 for s in e["shapes"] if s.tag == SVG + "path"),
              "the error link is bold")
        check("finding" in e["classes"] and "error" in e["classes"], "its class: %r" % e["classes"])
    counters = edge_between(("spine01", 3), ("leaf02", 7))
    check(len(counters) == 1 and counters[0] in orange, "the link spine01 port 3 -- leaf02 port 7 is the orange one")
    if counters:
        e = counters[0]
        check("warning [error-counters]: " in e["tooltip"] and "SymbolErrorCounter 250 (> 0)" in e["tooltip"],
              "its tooltip names the finding: %r" % e["tooltip"])
        check(any(s.get("stroke-dasharray") for s in e["shapes"] if s.tag == SVG + "path"), "the warning link is dashed")
    for e in edges:
        if e in red or e in orange:
            continue
        check(strokes(e) <= {"black"}, "a healthy link drawn %s: %r" % (strokes(e), e["tooltip"][:80]))
        check("finding" not in e["classes"] and "[" not in "".join(e["texts"]),
              "a healthy link names a finding: %r %r" % (e["classes"], e["texts"]))
        check("\nerror [" not in e["tooltip"] and "\nwarning [" not in e["tooltip"], "a healthy link's tooltip: %r" % e["tooltip"])

    # --- the subnet managers ------------------------------------------------------------------------
    for description, line in (("node01 mlx5_0", "SM master, priority 15"), ("node02 mlx5_0", "SM standby, priority 14")):
        n = node_named(description)
        if n:
            check(line in n["texts"], "%s says %r: %r" % (description, line, n["texts"]))
            check(len([s for s in n["shapes"] if s.tag == SVG + "ellipse"]) == 2, "%s has a double border" % description)
    for n in nodes:
        if not any(t.startswith("SM ") for t in n["texts"]):
            check(len([s for s in n["shapes"] if s.tag in (SVG + "ellipse", SVG + "polygon")]) == 1,
                  "%s has a single border" % n["texts"][:1])
        check(any(t.startswith("0x") and len(t) == 18 for t in n["texts"]), "%s shows its GUID" % n["texts"][:1])

    # --- the ranks -------------------------------------------------------------------------------------
    spine, leaf1, leaf2 = node_named("spine01"), node_named("leaf01"), node_named("leaf02")
    cas = [n for n in nodes if n["texts"] and n["texts"][0].startswith("node")]
    if spine and leaf1 and leaf2:
        # SVG y grows downwards.
        check(spine["y"] < leaf1["y"] and abs(leaf1["y"] - leaf2["y"]) < 1, "spine01 above the leaves, leaves on one rank")
        check(all(leaf1["y"] < c["y"] for c in cas), "the leaves above the CAs")
        check(len({round(c["y"]) for c in cas}) == 1, "the CAs on one rank: %s" % [c["y"] for c in cas])

    # --- what is drawn ---------------------------------------------------------------------------------
    if mode == "full":
        check(len(nodes) == 9, "9 nodes, found %d" % len(nodes))
        check(len(edges) == 10, "10 links, found %d" % len(edges))
    else:
        names = sorted(n["texts"][0] for n in nodes if n["texts"])
        check(names == ["leaf01", "leaf02", "node01 mlx5_0", "node02 mlx5_0", "spine01"], "collapsed nodes: %s" % names)
        check(len(edges) == 6, "6 links (4 spine links, the two SMs' CAs), found %d" % len(edges))
        # The healthy links are bare: their rate is in the caption.
        for e in edges:
            if e not in red and e not in orange:
                check(e["texts"] == [], "a healthy link has no label with --collapse: %r" % e["texts"])
        caption = [t.text or "" for t in root.find(SVG + "g").findall(SVG + "text")]
        check(any("a healthy link without a label runs at 12x HDR." in t for t in caption), "the caption: %r" % caption)
        if leaf1:
            check("+ 1 CA (12x HDR)" in leaf1["texts"], "leaf01 carries node03: %r" % leaf1["texts"])
        if leaf2:
            check("+ 3 CAs (12x HDR)" in leaf2["texts"], "leaf02 carries node04..06: %r" % leaf2["texts"])


def ranks_checks(warned, groups):
    check([n["texts"][0] for n in nodes if "warning" in n["classes"]] == ([] if warned == "-" else [warned]),
          "the node drawn orange: %r" % [n["texts"][:1] for n in nodes if "warning" in n["classes"]])
    check(not [n for n in nodes if "error" in n["classes"]], "no node drawn red")
    ys = []
    for group in groups:
        members = [node_named(d) for d in group.split(",")]
        members = [m for m in members if m]
        if not members:
            continue
        y = [m["y"] for m in members]
        check(max(y) - min(y) < 1, "one rank: %s at %s" % (group, y))
        ys.append((group, min(y)))
    for (upper, y1), (lower, y2) in zip(ys, ys[1:]):
        check(y1 < y2, "%s above %s" % (upper, lower))
    if mode == "ranks":
        for e in edges:
            check("12x HDR" in e["texts"], "a link shows its rate: %r %r" % (e["tooltip"][:60], e["texts"]))


if mode in ("full", "collapse"):
    fattree_checks()
else:
    ranks_checks(sys.argv[3], sys.argv[4:])

if problems:
    for p in problems:
        print("picture: " + p, file=sys.stderr)
    sys.exit(1)
print("picture %s (%s): %d nodes, %d links, checked" % (path, mode, len(nodes), len(edges)))
