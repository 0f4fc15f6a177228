#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the project's Markdown: every relative link resolves, and the README stays a front door.

For each tracked *.md file (git ls-files; without git, every *.md under the source tree outside
build directories): every inline link or image `[text](target)` (also wrapped across lines, with a
title, or `<target>`), every reference definition `[label]: target` and every HTML `<a href>` and
`<img src>` whose target is not a URL (a scheme such as https:, mailto:) must name a file or
directory that exists inside the source tree, relative to the linking file (an absolute path is
refused); a `#fragment` must be a heading of the target
Markdown file (or of the linking file for `#fragment` alone), slugged as GitHub does (lower case,
punctuation other than '-' and '_' dropped, spaces to '-', a repeated heading gets -1, -2, ...),
or an explicit `<a id|name="...">` in it. Links inside code blocks and code spans are not links.
Also: README.md has at most 500 lines, and docs/index.md links every page in docs/.

Usage: check_links.py [SOURCE_DIR]   (default: the repository this file is in). Exit 1 with one line
per problem, as FILE:LINE: message.
"""
import os
import re
import subprocess
import sys
import urllib.parse

README_MAX_LINES = 500

FENCE = re.compile(r'^ {0,3}(```+|~~~+)')
# [text](target), [text](target "title"), [text](target 'title'), [text](target (title)),
# [text](<target with spaces>); ![alt](...) the same. The text may hold one level of [brackets].
INLINE = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))'
                    r'(?:\s+(?:"[^"]*"|\'[^\']*\'|\([^)]*\)))?\s*\)')
REFDEF = re.compile(r'^ {0,3}\[(?!\^)[^\]]+\]:\s*(?:<([^>]+)>|(\S+))(?:\s+.*)?$')
HTML_LINK = re.compile(r'<(?:a|img)\b[^>]*?\s(?:href|src)\s*=\s*["\']([^"\']+)["\']', re.I)
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
ANCHOR = re.compile(r'<a\s+(?:id|name)=["\']([^"\']+)["\']')
SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')


def markdown_files(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--cached', '--others',
                              '--exclude-standard', '*.md'],
                             check=True, capture_output=True).stdout
        return sorted(p for p in out.decode().split('\0') if p and os.path.exists(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(('build', '.'))]
            found += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith('.md')]
        return sorted(found)


def strip_code_spans(line):
    # A code span is a run of N backticks up to the next run of exactly N (CommonMark 6.1).
    return re.sub(r'(`+)(.+?)(?<!`)\1(?!`)', lambda m: ' ' * len(m.group(0)), line)


def lines_outside_code(text, spans=False):
    """(line number, text) of each line outside fenced code blocks, code spans blanked unless spans."""
    fence = None
    for number, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            continue
        if fence is not None:
            if m and m.group(1).startswith(fence):
                fence = None
            continue
        yield number, line if spans else strip_code_spans(line)


def github_slug(heading):
    # HTML tags go, except inside code spans, which keep their text: `LINK_TYPE_P<n>` is link_type_pn
    pieces = re.split(r'(`[^`]*`)', heading)
    text = ''.join(p[1:-1] if p.startswith('`') else re.sub(r'<[^>]+>', '', p) for p in pieces)
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)       # links keep their text
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)                          # \w: letters, digits, _ (Unicode)
    return text.replace(' ', '-')


_anchors = {}


def anchors_of(path):
    if path not in _anchors:
        seen, found = {}, set()
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for _, line in lines_outside_code(text, spans=True):
            m = HEADING.match(line)
            if m:
                slug = github_slug(m.group(2))
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                found.add(slug if n == 0 else f'{slug}-{n}')
        # explicit anchors may sit anywhere, also beside code
        found.update(ANCHOR.findall(text))
        _anchors[path] = found
    return _anchors[path]


def paragraphs(text):
    """(first line number, lines joined by a space) of each run of non-blank lines outside code:
    a link wrapped across two lines is one link."""
    block, first, last = [], None, None
    for number, line in lines_outside_code(text):
        if line.strip() and (last is None or number == last + 1):
            block.append(line)
            first = first or number
        else:
            if block:
                yield first, block
            block, first = ([line], number) if line.strip() else ([], None)
        last = number
    if block:
        yield first, block


def targets_of(block):
    joined = ' '.join(l.strip() for l in block)
    found = [m.group(1) or m.group(2) for m in INLINE.finditer(joined)]
    found += HTML_LINK.findall(joined)
    for line in block:
        m = REFDEF.match(line)
        if m:
            found.append(m.group(1) or m.group(2))
    return found


def check_file(root, rel, problems):
    path = os.path.join(root, rel)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    for first, block in paragraphs(text):
        for target in targets_of(block):
            # the line that holds the target (a wrapped link's second line), else the paragraph's first
            number = next((first + i for i, l in enumerate(block) if target in l), first)
            if SCHEME.match(target) or target.startswith('//'):
                continue
            if target.startswith('/'):
                problems.append(f'{rel}:{number}: link to {target}: an absolute path, which no reader of the '
                                'repository or of the installed documentation can follow')
                continue
            where, _, fragment = target.partition('#')
            where = urllib.parse.unquote(where)
            fragment = urllib.parse.unquote(fragment)
            dest = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            if os.path.relpath(dest, root).startswith('..'):
                problems.append(f'{rel}:{number}: link to {target}: outside the source tree')
                continue
            if not os.path.exists(dest):
                problems.append(f'{rel}:{number}: link to {target}: {where} does not exist')
                continue
            if fragment and dest.endswith('.md'):
                if fragment not in anchors_of(dest):
                    problems.append(f'{rel}:{number}: link to {target}: no heading "#{fragment}" in '
                                    f'{os.path.relpath(dest, root)}')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    problems = []
    files = markdown_files(root)
    for rel in files:
        check_file(root, rel, problems)
    readme = os.path.join(root, 'README.md')
    with open(readme, encoding='utf-8') as f:
        count = f.read().count('\n')
    if count > README_MAX_LINES:
        problems.append(f'README.md:{count}: {count} lines, above {README_MAX_LINES}: move detail to docs/')
    index = os.path.join(root, 'docs', 'index.md')
    if os.path.exists(index):
        with open(index, encoding='utf-8') as f:
            linked = {os.path.normpath(t.partition('#')[0]) for _, block in paragraphs(f.read())
                      for t in targets_of(block)}
        for page in sorted(os.listdir(os.path.join(root, 'docs'))):
            if page.endswith('.md') and page != 'index.md' and page not in linked:
                problems.append(f'docs/index.md:1: docs/{page} is not linked from the index')
    for p in problems:
        print(p)
    print(f'check_links: {len(files)} Markdown files, {len(problems)} problem(s)', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
