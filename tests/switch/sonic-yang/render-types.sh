#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Renders sonic-types.yang and sonic-extension.yang from SONiC's templates exactly as
# sonic-buildimage src/sonic-yang-models/setup.py does (its build_py step): Jinja2 with
# trim_blocks=True and yang_model_type="py", written without a trailing newline (Jinja's default,
# keep_trailing_newline=False). Needs python3-jinja2. Run from anywhere; the rendered files are kept
# in this directory, so the tests need no Jinja.
set -eu
cd "$(dirname "$0")"
python3 - <<'PY'
import jinja2
env = jinja2.Environment(loader=jinja2.FileSystemLoader("yang-templates/"), trim_blocks=True)
for name in ("sonic-types.yang.j2", "sonic-extension.yang.j2"):
    with open(name[:-len(".j2")], "w") as f:
        f.write(env.get_template(name).render(yang_model_type="py"))
PY
