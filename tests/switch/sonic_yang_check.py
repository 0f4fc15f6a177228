#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Judge a SONiC CONFIG_DB JSON fragment by SONiC's own YANG models, with yanglint (libyang 2).

Usage: sonic_yang_check.py [--models DIR] [--workdir DIR] [--no-scaffolding] CONFIG_DB.json

The input is what `sonic-cfggen -j FILE --write-to-db` takes: {"TABLE": {"key": {"field": "value"}}},
keys of multi-key tables joined with "|". Every table is converted into YANG instance data the way
SONiC's own sonic-yang-mgmt does it (src/sonic-yang-mgmt/sonic_yang_ext.py, _xlateConfigDBtoYang and
the functions it calls), then `yanglint -t config` validates the data against the models in
tests/switch/sonic-yang/ (strict: unknown nodes are errors). Exit 0 only when yanglint accepts the
data without an error or warning; 1 on any error, printing yanglint's messages and the path of the
converted data; 2 on a usage error.

A row (or table) given as null is a deletion, as `sonic-cfggen --write-to-db` takes it; it carries no
data and is left out of the check (and named in the notes).

The conversion, rule by rule (sonic_yang_ext.py functions named):
  - A table is a container under its module's top-level container; the data is
    {"<module>:<module>": {"<module>:<TABLE>": {...}}} (_xlateConfigDBtoYang). A table that no loaded
    model defines is an ERROR here (sonic_yang only logs "have no YANG models" and crops it: the
    check must never pass a table it did not validate).
  - Rows go to the table's lists; a row key is split on "|" into the list's key leaves, and the first
    list whose key count matches takes the row (_extractKey, _xlateList over several lists, as for
    QUEUE_LIST and VOQ_QUEUE_LIST). A row key that matches no list is an ERROR.
  - The "type 1" maps (Type_1_list_maps_model) hold {"26": "3"} rows: each field becomes an entry of
    the inner list, {"dscp": "26", "tc": 3} (_xlateType1MapList).
  - A row key naming a container of the table (DEVICE_METADATA|localhost) fills that container.
  - Leaf-lists take a JSON list, or a string split as LEAF_LIST_WITH_STRING_VALUE_DICT says.
  - A field no model defines is passed through as a string, so that yanglint reports it.
Values are typed as libyang 2's JSON parser needs them (RFC 7951 section 6; libyang 2.1
src/plugins_types.c lyplg_type_check_hints): a JSON number for (u)int8/16/32, a string for
(u)int64 and decimal64, true/false for boolean, strings for the rest; a leafref takes its target's
type; a union takes a number when the value is a decimal integer and a member is a 8-32 bit integer.
Types are read from the models (typedefs resolved across imports), not listed per field. A value
that does not look like its type is passed as a string, so that yanglint rejects it.

Scaffolding (off with --no-scaffolding): a fragment names ports but does not define them, while
sonic-port.yang makes PORT lanes and speed mandatory. For every port the fragment names (a value of
a leaf whose type is a leafref to PORT_LIST/name, or a PORT row of its own), the PORT row gets a stub
lanes, speed and description ("test scaffolding ...") where the fragment has none; the fragment's
own PORT fields (mtu) are kept. Nothing else is added (no `when` of these tables needs
DEVICE_METADATA on a non-VOQ switch). Likewise a buffer profile a BUFFER_QUEUE or BUFFER_PG row names
and the fragment does not define (the platform's egress_lossless_profile, egress_lossy_profile) gets a
stub BUFFER_PROFILE row on a stub egress BUFFER_POOL.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODELS = os.path.join(HERE, "sonic-yang")

# sonic_yang_ext.py Type_1_list_maps_model: lists whose rows are {key: value} maps.
TYPE1_MAP_LISTS = {
    "DSCP_TO_TC_MAP_LIST", "DOT1P_TO_TC_MAP_LIST", "TC_TO_PRIORITY_GROUP_MAP_LIST",
    "TC_TO_QUEUE_MAP_LIST", "MAP_PFC_PRIORITY_TO_QUEUE_LIST",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP_LIST", "DSCP_TO_FC_MAP_LIST", "EXP_TO_FC_MAP_LIST",
    "CABLE_LENGTH_LIST", "MPLS_TC_TO_TC_MAP_LIST", "TC_TO_DSCP_MAP_LIST",
}
# sonic_yang_ext.py LEAF_LIST_WITH_STRING_VALUE_DICT: leaf-lists CONFIG_DB keeps as one string.
LEAF_LIST_STRING_SEPARATORS = {
    ("MIRROR_SESSION", "src_ip"): ",", ("NTP", "src_intf"): ";",
    ("BGP_ALLOWED_PREFIXES", "prefixes_v4"): ",", ("BGP_ALLOWED_PREFIXES", "prefixes_v6"): ",",
    ("BUFFER_PORT_EGRESS_PROFILE_LIST", "profile_list"): ",",
    ("BUFFER_PORT_INGRESS_PROFILE_LIST", "profile_list"): ",",
    ("PORT", "adv_speeds"): ",", ("PORT", "adv_interface_types"): ",",
}
# RFC 7951 section 6.1: these are JSON numbers; (u)int64 and decimal64 are JSON strings.
NUMBER_TYPES = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}
BUILTIN_TYPES = NUMBER_TYPES | {
    "int64", "uint64", "decimal64", "string", "boolean", "enumeration", "bits", "binary", "empty",
    "identityref", "instance-identifier", "leafref", "union"}

SCAFFOLD_DESCRIPTION = "test scaffolding: stub row added by sonic_yang_check.py, not in the checked file"
SCAFFOLD_SPEED = "100000"


class CheckError(Exception):
    pass


# ---------------------------------------------------------------- YANG text (RFC 7950 section 6)

def _tokens(text, where):
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise CheckError(f"{where}: unterminated comment")
            i = j + 2
        elif c in "{};":
            yield c
            i += 1
        elif c in "\"'":
            parts = []
            while True:  # "a" + "b" concatenation (section 6.1.3)
                if text[i] == "'":
                    j = text.find("'", i + 1)
                    if j < 0:
                        raise CheckError(f"{where}: unterminated string")
                    parts.append(text[i + 1:j])
                    i = j + 1
                else:
                    j, out = i + 1, []
                    while j < n and text[j] != '"':
                        if text[j] == "\\" and j + 1 < n:
                            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(text[j + 1], "\\" + text[j + 1]))
                            j += 2
                        else:
                            out.append(text[j])
                            j += 1
                    if j >= n:
                        raise CheckError(f"{where}: unterminated string")
                    parts.append("".join(out))
                    i = j + 1
                k = i
                while k < n and text[k].isspace():
                    k += 1
                if k < n and text[k] == "+":
                    k += 1
                    while k < n and text[k].isspace():
                        k += 1
                    if k < n and text[k] in "\"'":
                        i = k
                        continue
                break
            yield ("str", "".join(parts))
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "{};" and not text.startswith("//", j) \
                    and not text.startswith("/*", j):
                j += 1
            yield text[i:j]
            i = j


class Stmt:
    def __init__(self, keyword, arg):
        self.keyword, self.arg, self.subs = keyword, arg, []

    def find(self, keyword):
        return next((s for s in self.subs if s.keyword == keyword), None)

    def findall(self, keyword):
        return [s for s in self.subs if s.keyword == keyword]


def parse_yang(text, where):
    toks = list(_tokens(text, where))
    pos = 0

    def statement():
        nonlocal pos
        kw = toks[pos]
        if not isinstance(kw, str) or kw in "{};":
            raise CheckError(f"{where}: expected a keyword, found {kw!r}")
        pos += 1
        arg = None
        if toks[pos] not in ("{", ";"):
            arg = toks[pos][1] if isinstance(toks[pos], tuple) else toks[pos]
            pos += 1
        st = Stmt(kw, arg)
        if toks[pos] == ";":
            pos += 1
        elif toks[pos] == "{":
            pos += 1
            while toks[pos] != "}":
                st.subs.append(statement())
            pos += 1
        else:
            raise CheckError(f"{where}: expected ; or {{ after {kw}")
        return st

    root = statement()
    if root.keyword != "module":
        raise CheckError(f"{where}: not a YANG module")
    return root


# ---------------------------------------------------------------- schema

class Node:
    """A data node of the schema: container, list, leaf or leaf-list (choice/case flattened)."""

    def __init__(self, kind, name, module, stmt, parent):
        self.kind, self.name, self.module, self.stmt, self.parent = kind, name, module, stmt, parent
        self.children = {}
        self.keys = stmt.find("key").arg.split() if kind == "list" and stmt.find("key") else []
        self._type = None

    def type(self):
        if self._type is None:
            self._type = _type_info(self.stmt.find("type"), self.module, self)
        return self._type


class Module:
    def __init__(self, stmt, schema):
        self.stmt, self.schema, self.name = stmt, schema, stmt.arg
        self.prefix = stmt.find("prefix").arg
        self.imports = {i.find("prefix").arg: i.arg for i in stmt.findall("import")}
        self.typedefs = {}
        self._collect_typedefs(stmt)
        self.top = {}
        for s in stmt.subs:
            if s.keyword in ("container", "list", "leaf", "leaf-list", "choice"):
                self._add(s, None, self.top)

    def _collect_typedefs(self, stmt):
        for s in stmt.subs:
            if s.keyword == "typedef":
                self.typedefs[s.arg] = s
            elif s.keyword not in ("type",):
                self._collect_typedefs(s)

    def _add(self, s, parent, into):
        if s.keyword in ("choice", "case"):
            for c in s.subs:
                self._add(c, parent, into)
            return
        if s.keyword in ("uses", "augment"):
            raise CheckError(f"{self.name}: '{s.keyword}' is not handled by this converter")
        if s.keyword not in ("container", "list", "leaf", "leaf-list"):
            return
        node = Node(s.keyword, s.arg, self, s, parent)
        into[s.arg] = node
        for c in s.subs:
            self._add(c, node, node.children)

    def module_of_prefix(self, prefix):
        if prefix in (None, self.prefix):
            return self
        if prefix not in self.imports:
            raise CheckError(f"{self.name}: unknown prefix {prefix}")
        return self.schema.module(self.imports[prefix])


class TypeInfo:
    def __init__(self, base, patterns=(), members=(), target=None):
        self.base, self.patterns, self.members, self.target = base, list(patterns), list(members), target

    def effective(self):
        """The type the value is typed by: a leafref's target's (libyang 2 lyplg_type_store_leafref)."""
        return self.target.type().effective() if self.base == "leafref" else self


class Schema:
    def __init__(self, models_dir):
        self.models_dir = models_dir
        self.modules = {}
        self.files = {}
        for f in sorted(os.listdir(models_dir)):
            if f.endswith(".yang"):
                path = os.path.join(models_dir, f)
                with open(path, encoding="utf-8") as fh:
                    m = Module(parse_yang(fh.read(), path), self)
                self.modules[m.name] = m
                self.files[m.name] = path
        # table name -> (module, table container node), as _createDBTableToModuleMap builds it
        self.tables = {}
        for m in self.modules.values():
            top = m.top.get(m.name)
            if top is None or top.kind != "container":
                continue
            for t in top.children.values():
                if t.kind == "container":
                    if t.name in self.tables:
                        raise CheckError(f"table {t.name} is defined by {self.tables[t.name][0].name} and {m.name}")
                    self.tables[t.name] = (m, t)

    def module(self, name):
        if name not in self.modules:
            self.modules[name] = Module(parse_yang(builtin_module_text(name), name), self)
        return self.modules[name]

    def load_order(self):
        """Model files, every module after the modules it imports. libyang 2.1 compiles a module's
        when/must against the modules implemented so far: loaded in directory order, sonic-buffer-pool
        comes before sonic-device_metadata and yanglint warns 'check skipped because referenced
        module "sonic-device_metadata" is not implemented' (a skipped check)."""
        order, seen = [], set()

        def visit(name):
            if name in seen or name not in self.files:
                return
            seen.add(name)
            for dep in sorted(self.modules[name].imports.values()):
                visit(dep)
            order.append(self.files[name])

        for name in sorted(self.files):
            visit(name)
        return order


_builtin_cache = {}


def builtin_module_text(name):
    """ietf-inet-types and ietf-yang-types are compiled into libyang 2 (sonic-device_metadata imports
    them). Their text comes from the same yanglint that validates, through its interactive `print`."""
    if name not in _builtin_cache:
        home = tempfile.mkdtemp(prefix="sonic-yang-home.")  # yanglint keeps history under $HOME/.yanglint
        try:
            r = subprocess.run(["yanglint"], input=f"print -f yang {name}\nquit\n", capture_output=True,
                               text=True, timeout=30, env=dict(os.environ, HOME=home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
        text = r.stdout
        if f"module {name} " not in text:
            raise CheckError(f"module {name} is neither in the models directory nor built into yanglint: {r.stderr}")
        _builtin_cache[name] = text[text.index(f"module {name} "):]
    return _builtin_cache[name]


def _type_info(type_stmt, module, node):
    name = type_stmt.arg
    patterns = [p.arg for p in type_stmt.findall("pattern")]
    if name in BUILTIN_TYPES:
        if name == "union":
            return TypeInfo("union", members=[_type_info(t, module, node) for t in type_stmt.findall("type")])
        if name == "leafref":
            return TypeInfo("leafref", target=_resolve_path(type_stmt.find("path").arg, module, node))
        return TypeInfo(name, patterns)
    prefix, _, tname = name.rpartition(":")
    owner = module.module_of_prefix(prefix or None)
    typedef = owner.typedefs.get(tname)
    if typedef is None:
        raise CheckError(f"type {name} (module {module.name}) is not defined in {owner.name}")
    base = _type_info(typedef.find("type"), owner, node)
    return TypeInfo(base.base, base.patterns + patterns, base.members, base.target)


def _resolve_path(path, module, node):
    """A leafref path (RFC 7950 section 9.9.2) to the schema node it names; predicates dropped."""
    path = re.sub(r"\[[^\]]*\]", "", path.strip())
    steps = [s for s in path.split("/") if s]
    if path.startswith("/"):
        first_prefix, _, first = steps[0].rpartition(":")
        cur = module.module_of_prefix(first_prefix or None).top.get(first)
        steps = steps[1:]
    else:
        cur = node
    for step in steps:
        if cur is None:
            break
        if step == "..":
            cur = cur.parent
        else:
            cur = cur.children.get(step.rpartition(":")[2])
    if cur is None or cur.kind not in ("leaf", "leaf-list"):
        raise CheckError(f"{module.name}: leafref path {path} names no leaf")
    return cur


# ---------------------------------------------------------------- values

_INTEGER = re.compile(r"-?[0-9]+")


def typed_value(info, value):
    t = info.effective()
    if t.base == "union":
        if _INTEGER.fullmatch(value) and any(m.effective().base in NUMBER_TYPES for m in t.members):
            return int(value)
        if value in ("true", "false") and any(m.effective().base == "boolean" for m in t.members):
            return value == "true"
        return value
    if t.base in NUMBER_TYPES:
        return int(value) if _INTEGER.fullmatch(value) else value
    if t.base == "boolean":
        return {"true": True, "false": False}.get(value, value)
    if t.base == "empty":
        return [None] if value == "" else value
    return value


def _xsd_fullmatch(pattern, value):
    try:
        return re.fullmatch(pattern, value) is not None
    except re.error:
        return False


def port_reference(info, value, port_name_node):
    """True when the value of a leaf of this type names a PORT row: the type (or the union member
    the value falls to) is a leafref to PORT_LIST/name. A value a string member's pattern takes
    ("GLOBAL", "global", "CPU", "NULL") names no port."""
    if info.base == "leafref":
        return info.target is port_name_node
    if info.base == "union":
        if any(m.base == "string" and m.patterns and all(_xsd_fullmatch(p, value) for p in m.patterns)
               for m in info.members):
            return False
        return any(m.base == "leafref" and m.target is port_name_node for m in info.members)
    return False


# ---------------------------------------------------------------- CONFIG_DB -> YANG

class Converter:
    def __init__(self, schema):
        self.schema = schema
        self.errors = []
        port = schema.tables.get("PORT")
        self.port_name = port[1].children["PORT_LIST"].children["name"] if port else None
        self.ports_named = []  # in order of first mention

    def _name_port(self, name):
        if name not in self.ports_named:
            self.ports_named.append(name)

    def _value(self, table, node, field, value, where):
        if node.kind == "leaf-list":
            if isinstance(value, str):
                sep = LEAF_LIST_STRING_SEPARATORS.get((table, field))
                if sep is None:
                    self.errors.append(f"{where}: {field} is a leaf-list; CONFIG_DB JSON gives it as a list, not {value!r}")
                    return value
                value = [v.strip() for v in value.split(sep)]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                self.errors.append(f"{where}: {field}: a leaf-list takes a list of strings, not {json.dumps(value)}")
                return value
            return [self._scalar(node, v) for v in value]
        if not isinstance(value, str):
            self.errors.append(f"{where}: {field}: CONFIG_DB values are strings, not {json.dumps(value)}")
            return value
        return self._scalar(node, value)

    def _scalar(self, node, value):
        info = node.type()
        if self.port_name is not None and port_reference(info, value, self.port_name):
            self._name_port(value)
        return typed_value(info, value)

    def _fields(self, table, node, fields, into, where):
        if not isinstance(fields, dict):
            self.errors.append(f"{where}: a row is an object of fields, not {json.dumps(fields)}")
            return
        for field, value in fields.items():
            child = node.children.get(field)
            if child is None:
                into[field] = value  # unknown to the model: yanglint (strict) reports it
            elif child.kind in ("leaf", "leaf-list"):
                if field in node.keys:
                    self.errors.append(f"{where}: {field} is a key of {node.name}; it belongs in the row key")
                into[field] = self._value(table, child, field, value, where)
            else:
                self.errors.append(f"{where}: {field} is a {child.kind} of the model; this converter takes leaves only")

    def _row(self, table, lst, key, fields):
        where = f"{table}[{key!r}]"
        parts = key.split("|")
        entry = {}
        for k, part in zip(lst.keys, parts):
            entry[k] = self._scalar(lst.children[k], part.strip())
        inner = [c for c in lst.children.values() if c.kind == "list"]
        if lst.name in TYPE1_MAP_LISTS and len(inner) == 1:
            ilist = inner[0]
            ikey = ilist.keys[0]
            ivalue = next(n for n in ilist.children if n != ikey)
            if not isinstance(fields, dict):
                self.errors.append(f"{where}: a map row is an object, not {json.dumps(fields)}")
                return entry
            entry[ilist.name] = []
            for k, v in fields.items():
                if not isinstance(v, str):
                    self.errors.append(f"{where}: {k}: CONFIG_DB values are strings, not {json.dumps(v)}")
                entry[ilist.name].append({ikey: self._scalar(ilist.children[ikey], k),
                                          ivalue: self._scalar(ilist.children[ivalue], v) if isinstance(v, str) else v})
        else:
            self._fields(table, lst, fields, entry, where)
        return entry

    def table(self, table, rows):
        module, tnode = self.schema.tables[table]
        out = {}
        if not isinstance(rows, dict):
            self.errors.append(f"{table}: a table is an object of rows, not {json.dumps(rows)}")
            return module, out
        lists = [c for c in tnode.children.values() if c.kind == "list"]
        for key, fields in rows.items():
            container = tnode.children.get(key)
            if container is not None and container.kind == "container":
                body = {}
                self._fields(table, container, fields, body, f"{table}[{key!r}]")
                out[key] = body
                continue
            lst = next((l for l in lists if len(l.keys) == len(key.split("|"))), None)
            if lst is None:
                shapes = ", ".join(f"{l.name} ({'|'.join(l.keys)})" for l in lists) or "none"
                self.errors.append(f"{table}[{key!r}]: the key matches no list of the model; lists: {shapes}")
                continue
            out.setdefault(lst.name, []).append(self._row(table, lst, key, fields))
        return module, out


def convert(schema, config, scaffolding):
    """CONFIG_DB JSON -> (YANG JSON data, notes on scaffolding); raises CheckError on any error."""
    if not isinstance(config, dict):
        raise CheckError("the file is not a JSON object of tables")
    unknown = [t for t in config if t not in schema.tables]
    if unknown:
        raise CheckError("no loaded model defines table(s) " + ", ".join(unknown) + " (models: " +
                         schema.models_dir + ")")
    conv = Converter(schema)
    data, notes = {}, []
    # A null row (or table) is a deletion: `sonic-cfggen -j FILE --write-to-db` (ConfigDBPipeConnector
    # mod_config, swss-common configdb.h typed_to_raw(None) -> {} -> configdb.cpp _mod_entry: "DEL")
    # removes the key. It holds no data to validate; a null field is not a deletion (it is written as
    # the string "None") and stays, for yanglint to reject.
    tables = {}
    for table, rows in config.items():
        if rows is None:
            notes.append(f"deletion: table {table}")
            continue
        if isinstance(rows, dict):
            for key in [k for k, v in rows.items() if v is None]:
                notes.append(f"deletion: {table}|{key}")
            rows = {k: v for k, v in rows.items() if v is not None}
            if not rows:
                continue
        tables[table] = rows
    if scaffolding and "PORT" in schema.tables:
        # First pass: which ports the fragment names (PORT rows included).
        for table, rows in tables.items():
            if table != "PORT":
                conv.table(table, rows)
        for name in (tables.get("PORT") or {}) if isinstance(tables.get("PORT"), dict) else {}:
            conv._name_port(name)
        conv.errors = []
        port_rows = {k: dict(v) if isinstance(v, dict) else v for k, v in (tables.get("PORT") or {}).items()}
        for i, name in enumerate(conv.ports_named):
            row = port_rows.setdefault(name, {})
            if not isinstance(row, dict):
                continue
            added = []
            for field, value in (("lanes", str(i)), ("speed", SCAFFOLD_SPEED), ("description", SCAFFOLD_DESCRIPTION)):
                if field not in row:
                    row[field] = value
                    added.append(f"{field}={value if field != 'description' else '...'}")
            if added:
                notes.append(f"scaffolding: PORT {name}: stub {', '.join(added)} (not in the checked file)")
        if port_rows:
            tables["PORT"] = port_rows
    if scaffolding and "BUFFER_PROFILE" in schema.tables:
        # The buffer profiles a fragment's BUFFER_QUEUE or BUFFER_PG rows name are the platform's
        # (buffers_config.j2 and the SKU's buffers_defaults define egress_lossless_profile and
        # egress_lossy_profile; sonic_template_test.sh checks them against real SKUs): a stub
        # profile, on a stub egress pool, for each name the fragment does not define ("NULL" is the
        # dynamic model's, not a name).
        profiles = dict(tables.get("BUFFER_PROFILE") or {})
        pools = dict(tables.get("BUFFER_POOL") or {})
        for table in ("BUFFER_QUEUE", "BUFFER_PG"):
            for key, row in (tables.get(table) or {}).items():
                name = row.get("profile") if isinstance(row, dict) else None
                if not name or name == "NULL" or name in profiles:
                    continue
                pool = "scaffold_egress_lossless_pool" if "lossless" in name else "scaffold_egress_lossy_pool"
                pools.setdefault(pool, {"type": "egress", "mode": "dynamic", "size": "33004032"})
                profiles[name] = {"pool": pool, "size": "1518", "dynamic_th": "3"}
                notes.append(f"scaffolding: BUFFER_PROFILE {name}: stub on {pool} (the platform's, not in the checked file)")
        if profiles:
            tables["BUFFER_PROFILE"] = profiles
        if pools:
            tables["BUFFER_POOL"] = pools
    for table, rows in tables.items():
        module, body = conv.table(table, rows)
        top = f"{module.name}:{module.name}"
        data.setdefault(top, {})[f"{module.name}:{table}"] = body
    if conv.errors:
        raise CheckError("\n".join(conv.errors))
    return data, notes


# ---------------------------------------------------------------- yanglint

def yanglint(schema, data_path, validated_path):
    """yanglint 2.1: -t config (CONFIG_DB holds configuration only), strict parsing (no -n),
    -D -D (every module given explicitly; ietf-* come built in), all modules implemented."""
    cmd = ["yanglint", "-D", "-D", "-t", "config", "-f", "json", "-o", validated_path] + \
        schema.load_order() + [data_path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip() and not _DICT_LEAK.fullmatch(l)]
    return r.returncode, "\n".join(lines), cmd


# The one message that is not about the data: libyang 2.1's lydict_clean() (src/dict.c), run when
# yanglint destroys its context after validating, reports strings a must/when evaluation left in
# the dictionary (sonic-pfcwd.yang's PFC_WD_LIST[ifname='GLOBAL'] leaves "GLOBAL"). A leak report at
# exit; every other warning (a skipped when/must check) fails the check.
_DICT_LEAK = re.compile(r'libyang warn: String ".*" not freed from the dictionary, refcount [0-9]+')


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config", help="CONFIG_DB JSON (as sonic-cfggen -j takes)")
    ap.add_argument("--models", default=DEFAULT_MODELS, help="directory of the YANG models")
    ap.add_argument("--workdir", help="where the converted data goes (default: a new temporary directory)")
    ap.add_argument("--no-scaffolding", action="store_true", help="add no stub PORT fields or buffer profiles")
    args = ap.parse_args(argv)
    if shutil.which("yanglint") is None:
        print("sonic_yang_check: ERROR: yanglint not found (Debian: apt-get install libyang2-tools)", file=sys.stderr)
        return 1
    workdir = args.workdir or tempfile.mkdtemp(prefix="sonic-yang-check.")
    os.makedirs(workdir, exist_ok=True)
    data_path = os.path.join(workdir, "sonic-yang-data.json")
    try:
        with open(args.config, encoding="utf-8") as fh:
            config = json.load(fh)
        schema = Schema(args.models)
        data, notes = convert(schema, config, not args.no_scaffolding)
    except (OSError, ValueError, CheckError) as e:
        print(f"sonic_yang_check: ERROR: {args.config}: {e}", file=sys.stderr)
        return 1
    with open(data_path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    for n in notes:
        print(f"sonic_yang_check: {n}")
    rc, out, cmd = yanglint(schema, data_path, os.path.join(workdir, "validated.json"))
    if rc != 0 or out:
        print(f"sonic_yang_check: ERROR: {args.config}: SONiC's YANG models reject it (yanglint exit {rc}):",
              file=sys.stderr)
        print(out, file=sys.stderr)
        print(f"sonic_yang_check: converted data: {data_path}", file=sys.stderr)
        print(f"sonic_yang_check: command: {' '.join(cmd)}", file=sys.stderr)
        return 1
    print(f"sonic_yang_check: OK: {args.config}: {len(config)} table(s) "
          f"({', '.join(sorted(config))}) valid by SONiC's YANG models; converted data: {data_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
