#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documentation's examples are the binary's real output.

In README.md and docs/*.md, a fenced block line `$ rdmactl ARGS` (continued by a trailing `\\`)
followed by its output is run from the source tree with the built rdmactl and its standard output
compared with the documented lines, byte for byte. A following `$ echo $?` with its number, or a
`# exit N` comment on the command line, is the exit code it must have. Only commands that read
nothing of the host are run: `plan`, `doctor` and `show` with `--state`/`--states`, `validate` and
`switch-config`, and only when every file they name is in the tree. An example whose output is
shortened (a line `...` or `…`, or one such as `(the same lines as Ethernet1-32)`) is not compared: it is counted, and so is every command not run,
so a change that silently stops checking shows in the counts.

Usage: check_examples.py RDMACTL [SOURCE_DIR]. Exit 1 with a diff per example that differs.
"""
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys

OFFLINE = {'validate', 'switch-config'}
WITH_STATE = {'plan', 'doctor', 'show'}
# An editorial line standing for lines left out: "   (the same lines as Ethernet1-32)".
SHORTENED = re.compile(r'^\s*\(the same .*\)\s*$')


def examples(path):
    """(line, argv, documented output lines, exit code or None) per `$ rdmactl` in fenced blocks."""
    lines = open(path, encoding='utf-8').read().split('\n')
    fence, i = False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('```'):
            fence = not fence
            i += 1
            continue
        if not (fence and line.startswith('$ rdmactl ')):
            i += 1
            continue
        start, command = i + 1, line[2:]
        while command.endswith('\\') and i + 1 < len(lines):
            i += 1
            command = command[:-1] + ' ' + lines[i].strip()
        code = None
        m = re.search(r'#\s*exit (\d+)\s*$', command)
        if m:
            code = int(m.group(1))
        argv = shlex.split(command, comments=True)
        output, i = [], i + 1
        while i < len(lines) and not lines[i].startswith('```') and not lines[i].startswith('$ '):
            output.append(lines[i])
            i += 1
        if i + 1 < len(lines) and lines[i] == '$ echo $?' and lines[i + 1].strip().isdigit():
            code = int(lines[i + 1])
        yield start, argv, output, code


def runnable(argv, root):
    if len(argv) < 2:
        return 'no command'
    command = argv[1]
    if command in WITH_STATE and not ({'--state', '--states'} & set(argv)):
        return 'reads the host'
    if command not in OFFLINE | WITH_STATE:
        return 'reads the host'
    for flag, value in zip(argv, argv[1:]):
        if flag in ('-f', '--file', '--state', '--states') and not os.path.exists(os.path.join(root, value)):
            return f'names {value}, not in the tree'
    return None


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    binary = os.path.abspath(sys.argv[1])
    root = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    pages = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
    compared, shortened, skipped, failures = 0, 0, [], []
    for page in pages:
        rel = os.path.relpath(page, root)
        for line, argv, documented, code in examples(page):
            why = runnable(argv, root)
            if why:
                skipped.append(f'{rel}:{line}: {why}')
                continue
            if any(l.strip() in ('...', '…') or SHORTENED.match(l) for l in documented):
                shortened += 1
                continue
            # The node is the recorded state's (or the example's --node), never this machine's.
            env = {k: v for k, v in os.environ.items() if not k.startswith('RDMACTL_')}
            run = subprocess.run([binary] + argv[1:], cwd=root, capture_output=True, text=True, env=env, timeout=60)
            got = run.stdout.rstrip('\n').split('\n') if run.stdout else []
            want = documented[:]
            while want and want[-1] == '':
                want.pop()
            compared += 1
            if got != want:
                diff = '\n'.join(difflib.unified_diff(want, got, f'{rel}:{line} (documented)', 'rdmactl', lineterm=''))
                failures.append(f'{rel}:{line}: `{" ".join(argv)}` prints other output:\n{diff}')
            if code is not None and run.returncode != code:
                failures.append(f'{rel}:{line}: `{" ".join(argv)}` exits {run.returncode}, documented {code}')
    for f in failures:
        print(f)
    for s in skipped:
        print(f'not run: {s}')
    print(f'check_examples: {compared} compared, {shortened} shortened (not compared), {len(skipped)} not run, '
          f'{len(failures)} failure(s)')
    if compared == 0:
        print('check_examples: no example was compared', file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
