#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs sonic_yang_check.py on SONiC's own test data, to prove the harness accepts what SONiC
accepts and rejects what SONiC rejects (tests/switch/sonic_yang_test.sh, part a).

  sample: tests/files/sample_config_db.json's SAMPLE_CONFIG_DB_JSON, a CONFIG_DB file that
          sonic-yang-models' own tests load through sonic_yang: every table of it that the models
          here define is checked as it is (no scaffolding). It must pass.
  cases:  tests/yang_model_tests/tests_config/<file>.json holds YANG instance data per case, and
          tests/yang_model_tests/tests/<file>.json says which cases must fail (eStr, eStrKey).
          Each case is turned back into CONFIG_DB JSON (the reverse of sonic_yang_ext.py's
          conversion, as its _revXlateConfigDB does) and checked: a case without eStr/eStrKey must
          pass, one with them must fail; where eStr is a list of the models' own error-message
          texts (test_yang_model.py checks each element is in the message), each must appear in
          yanglint's message.
A case whose data uses a table outside the models here fails the run (none does today).

Usage: sonic_yang_upstream.py WORKDIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sonic_yang_check as check  # noqa: E402

UPSTREAM = os.path.join(HERE, "sonic-yang", "tests")
CASE_FILES = ["qosmaps", "qos", "pfc", "buffer_pool", "buffer_profile", "buffer_pg", "buffer_queue"]


def to_config_db(schema, data):
    """YANG JSON (a tests_config case) -> CONFIG_DB JSON, or raise KeyError naming a table no model
    here defines."""
    out = {}
    for top, tables in data.items():
        module = top.split(":")[0]
        for qualified, body in tables.items():
            table = qualified.split(":")[-1]
            if table not in schema.tables:
                raise KeyError(table)
            tnode = schema.tables[table][1]
            rows = out.setdefault(table, {})
            for child, value in body.items():
                child = child.split(":")[-1]
                node = tnode.children.get(child)
                if node is None:
                    raise KeyError(f"{module}:{table}/{child}")
                if node.kind == "container":
                    rows[child] = {k: _text(v) for k, v in value.items()}
                    continue
                inner = [c for c in node.children.values() if c.kind == "list"]
                for entry in value:
                    key = "|".join(str(entry[k]) for k in node.keys)
                    if node.name in check.TYPE1_MAP_LISTS and inner:
                        ilist = inner[0]
                        ivalue = next(n for n in ilist.children if n != ilist.keys[0])
                        rows[key] = {str(e[ilist.keys[0]]): _text(e[ivalue]) for e in entry.get(ilist.name, [])}
                    else:
                        rows[key] = {k: _text(v) for k, v in entry.items() if k not in node.keys}
    return out


def _text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return [_text(x) for x in v]
    return str(v)


def run_check(path, workdir, *extra):
    r = subprocess.run([sys.executable, os.path.join(HERE, "sonic_yang_check.py"), "--workdir", workdir,
                        *extra, path], capture_output=True, text=True, timeout=180)
    return r.returncode, r.stdout + r.stderr


def main(workdir):
    os.makedirs(workdir, exist_ok=True)
    schema = check.Schema(check.DEFAULT_MODELS)
    failures, ran = [], 0

    with open(os.path.join(UPSTREAM, "files", "sample_config_db.json")) as f:
        sample = json.load(f)["SAMPLE_CONFIG_DB_JSON"]
    sample = {t: rows for t, rows in sample.items() if t in schema.tables}
    path = os.path.join(workdir, "sample_config_db.json")
    with open(path, "w") as f:
        json.dump(sample, f, indent=2)
    rc, out = run_check(path, os.path.join(workdir, "sample"), "--no-scaffolding")
    print(f"sample_config_db.json ({len(sample)} tables: {', '.join(sorted(sample))}): "
          f"{'accepted' if rc == 0 else 'REJECTED'}")
    if rc != 0:
        failures.append(f"sample_config_db.json must pass:\n{out}")

    for name in CASE_FILES:
        with open(os.path.join(UPSTREAM, "yang_model_tests", "tests", name + ".json")) as f:
            expectations = json.load(f)
        with open(os.path.join(UPSTREAM, "yang_model_tests", "tests_config", name + ".json")) as f:
            datas = json.load(f)
        for case, expect in expectations.items():
            try:
                config = to_config_db(schema, datas[case])
            except KeyError as e:
                failures.append(f"{name}/{case}: table {e.args[0]} is outside tests/switch/sonic-yang")
                continue
            ran += 1
            path = os.path.join(workdir, f"{name}.{case}.json")
            with open(path, "w") as f:
                json.dump(config, f, indent=2)
            rc, out = run_check(path, os.path.join(workdir, f"{name}.{case}"), "--no-scaffolding")
            must_fail = "eStr" in expect or "eStrKey" in expect
            texts = expect.get("eStr") if isinstance(expect.get("eStr"), list) else []
            if must_fail and rc == 0:
                failures.append(f"{name}/{case}: SONiC rejects it ({expect}), the harness accepted it")
            elif not must_fail and rc != 0:
                failures.append(f"{name}/{case}: SONiC accepts it, the harness rejected it:\n{out}")
            elif must_fail and any(t not in out for t in texts):
                failures.append(f"{name}/{case}: rejected, but without {texts}:\n{out}")
            print(f"{name}/{case}: {'rejected' if rc else 'accepted'}"
                  f"{' (as SONiC)' if (rc != 0) == must_fail else ' (NOT as SONiC)'}")
    print(f"{ran} SONiC cases run")
    if failures:
        print("\nFAILURES:\n" + "\n\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
