#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rdmactl's SONiC CONFIG_DB fragment judged by the platform's own templates (issue 42).

Renders a SKU's buffers template (buffers.json.j2, or buffers_dynamic.json.j2 for the dynamic
buffer model) and qos.json.j2 as `config qos reload` does (sonic-utilities config/main.py
reload(): `sonic-cfggen -d -t <buffers>,<file> -t qos.json.j2,<file> -y /etc/sonic/sonic_version.yml`,
then `sonic-cfggen -j <buffers> -j <qos> --write-to-db`), writes both into a CONFIG_DB that holds
the SKU's PORT rows and DEVICE_METADATA, then loads the fragment over it as `config load -y FILE`
does (`sonic-cfggen -j FILE --write-to-db`), and checks the merged CONFIG_DB:
  a) PORT_QOS_MAP of the fragment's ports: every referenced map exists; pfc_to_pg_map (and the
     PFC_PRIORITY_TO_PRIORITY_GROUP_MAP table) only on an asic_type in qos_config.j2's
     pfc_to_pg_map_supported_asics; only field names the rendered template writes;
  b) each pfc_enable priority has a lossless ingress PG (traditional: buffermgrd's, from
     (speed, cable length) in pg_profile_lookup.ini; dynamic: a BUFFER_PG key of the port) and its
     egress queue a BUFFER_QUEUE key with a lossless egress profile; no overlapping keys per port;
  c) CABLE_LENGTH|AZURE holds the fragment's lengths for its ports and the template's for the rest;
  d) pfcwd_sw_enable equals pfc_enable (watchdog left alone or on) or "" (watchdog off).
Exit 0 when all hold, 1 with one line per failure otherwise. Sources are named where followed;
the template files are tests/switch/sonic-templates (README.md there names their upstream paths).
"""
import argparse
import copy
import json
import os
import re
import sys

import jinja2

HERE = os.path.dirname(os.path.abspath(__file__))


# --- sonic-cfggen (sonic-buildimage src/sonic-config-engine/sonic-cfggen) ---------------------

def sort_by_port_index(value):
    """sonic-cfggen sort_by_port_index: sorts the list in place by the number after "Ethernet"
    (k[8:]), backend ports ("Ethernet-BPxy": k[11:]) after all others (+1024); returns None."""
    if not value:
        return
    if isinstance(value, list):
        value.sort(key=lambda k: int(k[8:]) if "BP" not in k else int(k[11:]) + 1024)


def jinja2_env(paths):
    """sonic-cfggen _get_jinja2_env: FileSystemLoader(paths), trim_blocks=True, the filters the
    QoS and buffer templates use (sort_by_port_index) and the template_exists global."""
    loader = jinja2.FileSystemLoader(paths)
    env = jinja2.Environment(loader=loader, trim_blocks=True)
    env.filters["sort_by_port_index"] = sort_by_port_index

    def template_exists(name):
        try:
            loader.get_source(env, name)
            return True
        except jinja2.exceptions.TemplateNotFound:
            return False

    env.globals["template_exists"] = template_exists
    return env


def deep_update(dst, src):
    """sonic-cfggen deep_update: how -j/-y files are combined before --write-to-db."""
    pending = [(dst, src)]
    while pending:
        d, s = pending.pop(0)
        for key, value in s.items():
            if isinstance(value, dict):
                node = d.setdefault(key, type(value)())
                pending.append((node, value))
            else:
                d[key] = value
    return dst


def mod_config(db, data):
    """sonic-swss-common ConfigDBConnector.mod_config (common/configdb.h) over
    ConfigDBPipeConnector_Native::mod_config (configdb.cpp): a table of {} is left alone, a null
    table is deleted; per key, typed_to_raw(None) = {} is DEL, {} becomes {"NULL": "NULL"}, any
    other dict is HSET of its fields (fields not given are kept)."""
    for table, rows in data.items():
        if rows == {}:
            continue
        if rows is None:
            db.pop(table, None)
            continue
        dest = db.setdefault(table, {})
        for key, fields in rows.items():
            if fields is None:
                dest.pop(key, None)
                continue
            raw = {"NULL": "NULL"} if len(fields) == 0 else {
                (f + "@" if isinstance(v, list) else f): (",".join(v) if isinstance(v, list) else str(v))
                for f, v in fields.items()}
            dest.setdefault(key, {}).update(raw)
        if not dest:
            db.pop(table, None)


def parse_port_config(path):
    """sonic-config-engine portconfig.py parse_port_config_file: columns from the "# name ..."
    header (default name lanes alias index), alias defaults to the name."""
    ports = {}
    titles = ["name", "lanes", "alias", "index"]
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if "name" in line:
                    titles = line.strip("#").split()
                continue
            tokens = line.split()
            if len(tokens) < 2:
                continue
            name_index = titles.index("name")
            data = {titles[i]: item for i, item in enumerate(tokens) if i != name_index}
            data.setdefault("alias", tokens[name_index])
            ports[tokens[name_index]] = data
    return ports


def pg_profile_lookup(path):
    """sonic-swss cfgmgr/buffermgr.cpp readPgProfileLookupFile: lines that are empty or start
    with '#' are skipped; the first two words are the speed and the cable length."""
    pairs = set()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            words = line.split()
            if len(words) >= 2:
                pairs.add((words[0], words[1]))
    return pairs


def id_list_from_map(ids):
    """sonic-swss orchagent/orch.cpp Orch::generateIdListFromMap: runs of consecutive ids become
    "a-b", single ids "a" (what buffermgrd names BUFFER_PG keys after)."""
    out, run = [], []
    for i in range(0, 33):
        if i in ids:
            run.append(i)
        elif run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
    return out


def id_range(text):
    """orch.cpp parseIndexRange: "a" or "a-b" (a < b); None when malformed."""
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
    if not m:
        return None
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) else low
    return (low, high) if low <= high else None


def priorities(text):
    """pfc_enable / pfcwd_sw_enable: comma-separated priorities (buffermgr.cpp tokenize on ',')."""
    return sorted({int(p) for p in text.split(",") if p.strip().isdigit()}) if text else []


# --- the checks -----------------------------------------------------------------------------

def yang_map_fields(yang_path):
    """PORT_QOS_MAP field -> referenced table, from the leafrefs of sonic-port-qos-map.yang
    (leaf X { type leafref { path ".../p:TABLE/p:TABLE_LIST/p:name" } })."""
    text = open(yang_path).read()
    refs = {}
    for m in re.finditer(r'leaf\s+(\w+)\s*\{\s*type\s+leafref\s*\{\s*path\s+"[^"]*/\w+:(\w+)/\w+:(\w+)_LIST/\w+:name"',
                         text):
        if m.group(2) == m.group(3):
            refs[m.group(1)] = m.group(2)
    return refs


def pfc_to_pg_supported(qos_config_path):
    """qos_config.j2: {%- set pfc_to_pg_map_supported_asics = ['mellanox', 'barefoot'] -%}"""
    text = open(qos_config_path).read()
    m = re.search(r"set\s+pfc_to_pg_map_supported_asics\s*=\s*\[([^\]]*)\]", text)
    if not m:
        raise SystemExit(f"{qos_config_path}: no pfc_to_pg_map_supported_asics list (has the template changed?)")
    return re.findall(r"['\"]([^'\"]+)['\"]", m.group(1))


def port_keys(table, port):
    """The keys "<port>|<ids>" of a BUFFER_PG / BUFFER_QUEUE table, with their id ranges."""
    out = []
    for key, fields in (table or {}).items():
        name, _, ids = key.partition("|")
        if name == port:
            out.append((key, id_range(ids), fields))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--templates", default=os.path.join(HERE, "sonic-templates"))
    ap.add_argument("--sku", required=True, help="a SKU directory under --templates (e.g. ACS-MSN2700)")
    ap.add_argument("--asic-type", required=True, help="sonic_version.yml asic_type (broadcom, mellanox, ...)")
    ap.add_argument("--buffer-model", choices=["traditional", "dynamic"], default="traditional")
    ap.add_argument("--type", default="ToRRouter", help="DEVICE_METADATA|localhost type (ToRRouter: t0, LeafRouter: t1)")
    ap.add_argument("--speed", default="100000", help="PORT speed where port_config.ini gives none")
    ap.add_argument("--yang", default=os.path.join(HERE, "sonic-yang", "sonic-port-qos-map.yang"))
    ap.add_argument("--cable", action="append", default=[], metavar="PORT=LEN",
                    help="the cable length rdmactl was given for PORT (check c)")
    ap.add_argument("--watchdog", choices=["default", "on", "off"], help="what rdmactl was told (check d)")
    ap.add_argument("--previous", help="an earlier rdmactl fragment the switch was loaded with, saved and reloaded "
                    "before this one (its buffermgrd PGs made from its pfc_enable)")
    ap.add_argument("--dump", help="write the merged CONFIG_DB here")
    ap.add_argument("--emit-running", metavar="FILE",
                    help="write the running CONFIG_DB the fragment would be loaded on (for rdmactl's "
                    "--running-config) and stop")
    ap.add_argument("fragment", nargs="?")
    args = ap.parse_args()
    if not args.emit_running and not args.fragment:
        ap.error("a fragment is needed (or --emit-running)")

    common = os.path.join(args.templates, "common")
    sku = os.path.join(args.templates, args.sku)
    ports = parse_port_config(os.path.join(sku, "port_config.ini"))
    for row in ports.values():
        row.setdefault("speed", args.speed)
        row.setdefault("admin_status", "up")  # buffermgr.cpp removes lossless PGs of admin-down ports
    metadata = {"hwsku": args.sku, "type": args.type}
    if args.asic_type in ("mellanox", "barefoot") or args.buffer_model == "dynamic":
        # sonic-utilities config qos reload (_update_buffer_calculation_model) sets buffer_model on these
        metadata["buffer_model"] = args.buffer_model
    base = {"PORT": ports, "DEVICE_METADATA": {"localhost": metadata}}
    data = copy.deepcopy(base)
    data["asic_type"] = args.asic_type  # -y /etc/sonic/sonic_version.yml: asic_type at the top level

    # sonic-cfggen main(): paths '/', '/usr/share/sonic/templates' (qos_config.j2, buffers_config.j2),
    # ..., then the template's own directory (the SKU's); get_template(basename).
    env = jinja2_env(["/", common, sku])
    buffers_name = "buffers_dynamic.json.j2" if args.buffer_model == "dynamic" else "buffers.json.j2"
    rendered = {}
    for name in (buffers_name, "qos.json.j2"):
        text = env.get_template(name).render(data)
        try:
            rendered[name] = json.loads(text)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{args.sku}/{name}: the rendering is not JSON ({e})")
    template = deep_update(deep_update({}, rendered[buffers_name]), rendered["qos.json.j2"])
    db = copy.deepcopy(base)
    mod_config(db, template)
    # The running switch the fragment is loaded on: in the traditional model buffermgrd has already
    # made its lossless PGs from the template's pfc_enable and cable lengths (buffermgr.cpp
    # doSpeedUpdateTask, BUFFER_PG <port>|<generateIdListFromMap ids>, "3-4" from "3,4"), and it
    # never deletes one when pfc_enable changes: a key the fragment does not delete stays.
    lookup = pg_profile_lookup(os.path.join(sku, "pg_profile_lookup.ini"))
    booted = {}
    booted_from = template
    if args.previous:
        # An earlier run, loaded, saved and reloaded: the switch booted from the template merged
        # with it, and buffermgrd made its PGs from that pfc_enable.
        mod_config(db, deep_update({}, json.load(open(args.previous))))
        booted_from = db
    if args.buffer_model == "traditional":
        tmpl_cables = booted_from.get("CABLE_LENGTH", {}).get("AZURE", {})
        for port, row in copy.deepcopy(booted_from.get("PORT_QOS_MAP", {})).items():
            speed = db.get("PORT", {}).get(port, {}).get("speed")
            cable = tmpl_cables.get(port)
            lossless = priorities(row.get("pfc_enable", "")) if isinstance(row, dict) else []
            if port == "global" or not lossless or cable in (None, "0m") or (speed, cable) not in lookup:
                continue
            for ids in id_list_from_map(set(lossless)):
                key = f"{port}|{ids}"
                booted[key] = {"profile": f"pg_lossless_{speed}_{cable}_profile"}
                db.setdefault("BUFFER_PG", {}).setdefault(key, dict(booted[key]))
                # doSpeedUpdateTask writes the profile too: pool ingress_lossless_pool.
                db.setdefault("BUFFER_PROFILE", {}).setdefault(booted[key]["profile"], {
                    "pool": "ingress_lossless_pool", "xon": "0", "xoff": "0", "size": "0", "dynamic_th": "0"})
    running = copy.deepcopy(db)  # the switch as `sonic-cfggen -d --print-data` shows it before the load
    if args.emit_running:
        with open(args.emit_running, "w") as f:
            json.dump(running, f, indent=2, sort_keys=True)
        return 0
    fragment = json.load(open(args.fragment))
    mod_config(db, deep_update({}, fragment))
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump(db, f, indent=2, sort_keys=True)

    errors = []
    notes = []
    err = errors.append
    asic = args.asic_type
    supported = pfc_to_pg_supported(os.path.join(common, "qos_config.j2"))
    refs = yang_map_fields(args.yang)
    qos_map = db.get("PORT_QOS_MAP", {})
    frag_rows = {p: r for p, r in (fragment.get("PORT_QOS_MAP") or {}).items() if p != "global" and r is not None}
    tmpl_rows = template.get("PORT_QOS_MAP", {})
    tmpl_fields = {f for p, r in tmpl_rows.items() if p != "global" for f in r}
    if not tmpl_fields:
        err(f"{args.sku}/qos.json.j2 ({asic}): the rendering has no PORT_QOS_MAP port rows to compare with")

    # a) map references, pfc_to_pg_map, field names
    if asic not in supported and "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP" in fragment:
        err(f"PFC_PRIORITY_TO_PRIORITY_GROUP_MAP: written for asic_type {asic}, but qos_config.j2 writes it only for "
            f"pfc_to_pg_map_supported_asics {supported}")
    for port, frow in frag_rows.items():
        if port not in db.get("PORT", {}):
            err(f"PORT_QOS_MAP|{port}: no such port in {args.sku}'s PORT table (port_config.ini)")
        for field in frow:
            if field not in tmpl_fields:
                err(f"PORT_QOS_MAP|{port}: field {field}: {args.sku}/qos.json.j2 rendered for {asic} writes no such "
                    f"field on its port rows (it writes {sorted(tmpl_fields)})")
        row = qos_map.get(port, {})
        for field, value in row.items():
            table = refs.get(field)
            if table is not None and value not in db.get(table, {}):
                err(f"PORT_QOS_MAP|{port}: field {field} = {value!r}: no {table}|{value} in the merged CONFIG_DB")
        if "pfc_to_pg_map" in row and asic not in supported:
            err(f"PORT_QOS_MAP|{port}: field pfc_to_pg_map = {row['pfc_to_pg_map']!r} on asic_type {asic}: qos_config.j2 "
                f"binds it only on pfc_to_pg_map_supported_asics {supported}")

    # b) lossless PG and queue for each pfc_enable priority; no overlapping keys
    cables = db.get("CABLE_LENGTH", {}).get("AZURE", {})
    egress_lossless = db.get("BUFFER_PROFILE", {}).get("egress_lossless_profile", {}).get("pool")
    if egress_lossless is None:
        err(f"BUFFER_PROFILE|egress_lossless_profile: missing after the merge (the {args.sku} template writes it)")
    profiles = db.get("BUFFER_PROFILE", {})
    buffer_pg = copy.deepcopy(db.get("BUFFER_PG", {}))
    made_pgs = {}  # port -> [(key, range, fields)] buffermgrd writes (traditional model)
    for port in frag_rows:
        row = qos_map.get(port, {})
        lossless = priorities(row.get("pfc_enable", ""))
        if args.buffer_model == "traditional" and lossless:
            # buffermgr.cpp doSpeedUpdateTask: "0m" makes no PG; a (speed, cable) pair the ini lacks is
            # "No PG profile configured for speed ... and cable length ..."; otherwise BUFFER_PG
            # <port>|<ids from generateIdListFromMap(pfc_enable)> = pg_lossless_<speed>_<cable>_profile.
            speed = db.get("PORT", {}).get(port, {}).get("speed")
            cable = cables.get(port)
            if cable is None:
                err(f"CABLE_LENGTH|AZURE: no length for {port}: buffermgrd makes no lossless PG for pfc_enable "
                    f"{row.get('pfc_enable')!r}")
            elif cable == "0m":
                err(f"CABLE_LENGTH|AZURE|{port} = 0m: buffermgrd makes no lossless PG (pfc_enable {row.get('pfc_enable')!r})")
            elif (speed, cable) not in lookup:
                err(f"CABLE_LENGTH|AZURE|{port} = {cable} at PORT|{port} speed {speed}: {args.sku}/pg_profile_lookup.ini "
                    f"has no such (speed, cable) row, so buffermgrd makes no lossless PG for pfc_enable "
                    f"{row.get('pfc_enable')!r} (\"No PG profile configured\"); it lists "
                    f"{sorted({c for s, c in lookup if s == speed}, key=lambda c: int(c.rstrip('m')))} at {speed}")
            else:
                made = id_list_from_map(set(lossless))
                made_pgs[port] = [(f"{port}|{ids}", id_range(ids), {"profile": f"pg_lossless_{speed}_{cable}_profile",
                                                                    "buffermgrd": "1"}) for ids in made
                                  if f"{port}|{ids}" not in booted]  # its own boot-time key: updated in place
                # The keys buffermgrd made at boot that the new pfc_enable no longer names: they stay
                # (doSpeedUpdateTask deletes none) unless the fragment deletes them, and then overlap
                # the new ones (found below).
                for key in booted:
                    if key.startswith(port + "|") and key in buffer_pg and key.split("|", 1)[1] not in made:
                        notes.append(f"BUFFER_PG|{key} (buffermgrd's at boot, from the "
                                     f"{'earlier run' if args.previous else 'template'}'s pfc_enable) is still there "
                                     f"after the load")
        keys = port_keys(buffer_pg, port)
        for p in lossless:
            if args.buffer_model == "dynamic":
                # buffermgrdyn.cpp handleSingleBufferPgEntry: profile NULL is a dynamically sized lossless
                # PG; a named profile is lossless when it has xoff (or headroom_type dynamic).
                covering = [(k, f) for k, r, f in keys if r and r[0] <= p <= r[1]]
                good = [k for k, f in covering if f.get("profile") == "NULL" or "xoff" in profiles.get(f.get("profile"), {})
                        or profiles.get(f.get("profile"), {}).get("headroom_type") == "dynamic"]
                if not good:
                    err(f"PORT_QOS_MAP|{port}: pfc_enable priority {p} has no lossless BUFFER_PG key "
                        f"(dynamic model: {[k for k, _ in covering] or 'none'} cover it)")
            queue_map = db.get("MAP_PFC_PRIORITY_TO_QUEUE", {}).get(row.get("pfc_to_queue_map"), {})
            q = int(queue_map.get(str(p), p))
            covering = [(k, f.get("profile")) for k, r, f in port_keys(db.get("BUFFER_QUEUE"), port) if r and r[0] <= q <= r[1]]
            if not any(profiles.get(prof, {}).get("pool") == egress_lossless and egress_lossless for _, prof in covering):
                err(f"PORT_QOS_MAP|{port}: pfc_enable priority {p} (queue {q}): no BUFFER_QUEUE key of {port} gives queue "
                    f"{q} a lossless egress profile (one in pool {egress_lossless}); it has "
                    f"{', '.join(f'{k} = {prof}' for k, prof in covering) or 'no key'}")
    for table_name, table in (("BUFFER_PG", buffer_pg), ("BUFFER_QUEUE", db.get("BUFFER_QUEUE", {}))):
        for port in frag_rows:
            # buffermgrd's keys beside the table's: one of the same name overwrites the table's profile
            # (doSpeedUpdateTask sets "profile"), which is an overlap all the same.
            keys = sorted(port_keys(table, port) + (made_pgs.get(port, []) if table_name == "BUFFER_PG" else []),
                          key=lambda k: (k[0], "buffermgrd" in k[2]))
            for key, r, _ in keys:
                if r is None:
                    err(f"{table_name}|{key}: malformed id range")
            for i, (k1, r1, f1) in enumerate(keys):
                for k2, r2, f2 in keys[i + 1:]:
                    if r1 and r2 and r1[0] <= r2[1] and r2[0] <= r1[1]:
                        who = [k + (" (buffermgrd's, from pfc_enable)" if f.get("buffermgrd") else "")
                               for k, f in ((k1, f1), (k2, f2))]
                        err(f"{table_name}: {who[0]} and {who[1]} overlap")

    # b') every profile a port's buffer key names exists, and the queues that are not lossless keep
    # the profile the switch gave them (the SKU's: q_lossy_profile on Mellanox's templates,
    # egress_lossy_profile on others', per-queue ones on some), or, for a queue that was lossless,
    # take a lossy one of the port's.
    for port in frag_rows:
        for table_name in ("BUFFER_PG", "BUFFER_QUEUE"):
            for key, r, f in port_keys(db.get(table_name), port):
                prof = f.get("profile")
                if prof and prof != "NULL" and prof not in profiles:
                    err(f"{table_name}|{key} = {prof}: no BUFFER_PROFILE|{prof} on the switch")
        row = qos_map.get(port, {})
        lossless = set(priorities(row.get("pfc_enable", "")))
        lossless_queues = {3, 4} if lossless <= {3, 4} else lossless
        before = {}
        for key, r, f in port_keys(running.get("BUFFER_QUEUE"), port):
            for q in range(r[0], r[1] + 1) if r else []:
                before[q] = f.get("profile")
        after = {}
        for key, r, f in port_keys(db.get("BUFFER_QUEUE"), port):
            for q in range(r[0], r[1] + 1) if r else []:
                after[q] = f.get("profile")
        for q, prof in before.items():
            if q in lossless_queues:
                continue
            was_lossless = profiles.get(prof, {}).get("pool") == egress_lossless
            if not was_lossless and after.get(q) != prof:
                err(f"BUFFER_QUEUE of {port}: queue {q} had {prof!r} (the SKU's) and has {after.get(q)!r} after the load")
            if was_lossless and profiles.get(after.get(q), {}).get("pool") == egress_lossless:
                err(f"BUFFER_QUEUE of {port}: queue {q} is not lossless any more and keeps {after.get(q)!r}")

    # c) CABLE_LENGTH
    tmpl_cables = template.get("CABLE_LENGTH", {}).get("AZURE", {})
    frag_cables = ((fragment.get("CABLE_LENGTH") or {}).get("AZURE") or {})
    for port, length in tmpl_cables.items():
        want = frag_cables.get(port, length)
        if cables.get(port) != want:
            err(f"CABLE_LENGTH|AZURE|{port}: {cables.get(port)!r} after the merge, not "
                f"{'the fragment' if port in frag_cables else 'the template'}'s {want!r}")
    for spec in args.cable:
        port, _, length = spec.partition("=")
        if cables.get(port) != length:
            err(f"CABLE_LENGTH|AZURE|{port}: {cables.get(port)!r} after the merge, not {length!r} (the length rdmactl was given)")

    # d) watchdog
    for port in frag_rows:
        row = qos_map.get(port, {})
        wd, pfc = row.get("pfcwd_sw_enable"), row.get("pfc_enable", "")
        ok = {"off": [""], "on": [pfc], "default": [pfc], None: [pfc, ""]}[args.watchdog]
        if wd is None or not any(priorities(wd) == priorities(o) for o in ok):
            err(f"PORT_QOS_MAP|{port}: pfcwd_sw_enable = {wd!r} after the merge, pfc_enable = {pfc!r}: the watchdog "
                f"({args.watchdog or 'any'}) must watch {' or '.join(repr(o) for o in ok)}")

    errors.extend(notes)  # a stale buffermgrd key is an error: it overlaps (or outlives) the new PGs
    for e in errors:
        print(f"{os.path.basename(args.fragment)} on {args.sku} ({asic}, {args.buffer_model}): {e}")
    if errors:
        return 1
    print(f"{os.path.basename(args.fragment)} on {args.sku} ({asic}, {args.buffer_model}, {args.type}): all template checks hold "
          f"({len(frag_rows)} ports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
