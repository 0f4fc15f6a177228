#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PromQL of rdmactl's alerting rules and Grafana dashboard against the metrics rdmactl exports.

    check_queries.py --names NAMES [--series SERIES [--values VALUES] [--unscraped UNSCRAPED]]
                     --rules RULES.yml --dashboard DASHBOARD.json --recording OUT.yml

NAMES holds the metric names of real scrapes of rdmactl (one per line: every sample's name, so a
histogram's _bucket, _sum and _count). Every metric an expression selects must be one of them.
SERIES holds the sample lines of those scrapes (name{labels} value): every label matcher of a
selector (name{...}, or {__name__="name", ...}; values in "", '' or ``) must name one of the
metric's labels (or a label Prometheus adds at the scrape), and its value must be one scraped:
= and != a value seen; =~ and !~ a regex, anchored at both ends as Prometheus anchors it, that
matches a value seen, and so does every alternative of every | in it (link-.*|prot-state fails
on prot-state, (link-width|lnk-speed) on lnk-speed). Grafana's variables in a value ($name,
${name}, ${name:format}, [[name]]) stand for any value; a $ that is none is the regex's. VALUES
adds values no scrape here can show ("METRIC LABEL VALUE" a line, each checked against the source
by the caller). A selector with label matchers on a metric without scraped series fails, unless
UNSCRAPED names the metric with the reason no scrape here has it ("METRIC REASON..." a line).
The dashboard's queries (panel targets, and the series selectors of its label_values() variables)
are written to OUT.yml as recording rules, with Grafana's variables replaced by valid values, for
`promtool check rules` to parse: Prometheus' own parser, not this script, judges the syntax.

Prints one line per problem and exits 1 when there is any.
"""
import argparse
import json
import re
import sys

import yaml

# Grafana's variables, as a query may carry them ($name, ${name}, ${name:format}, [[name]]), and
# values that keep the PromQL valid: label values inside quotes, durations inside [...].
DURATION_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
LABEL_VARIABLES = {"node": "gpu-01", "device": "mlx5_0", "port": "1"}
# ($1 is label_replace's capture group, no variable.)
VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)|\[\[([A-Za-z_]\w*)\]\]")
# A quoted string of PromQL: "...", '...' (with Go's escapes) or `...` (raw).
STRING = r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`'
# A selector by name, {__name__=~"a|b"}: the names it alternates.
NAME_MATCHER = re.compile(r'__name__\s*(=~|=)\s*(' + STRING + ')')

# PromQL words that are not metric names: the set operators and atan2, the grouping and matching
# modifiers, bool, offset, @'s start and end, and the literals Inf and NaN (Prometheus' docs,
# Querying: Basics and Operators). Functions and aggregations are told by what follows them: "(",
# or by/without. The test errs only one way: a word taken for a metric that is none fails loudly,
# and a metric name is never followed by "(" (promtool, which parses the same text, would refuse it).
# Series Prometheus writes itself for every target (Prometheus' docs, Jobs and instances:
# "Automatically generated labels and time series"): up, scrape_duration_seconds, ...
# ALERTS{alertname, alertstate, the alert's labels}: what Prometheus writes for every pending or
# firing alert (Prometheus' docs, Alerting rules: "Inspecting alerts during runtime"); its
# alertname must be an alert of the rules checked, its alertstate pending or firing, and its other
# labels are the alerts' own (not checked).
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "ALERTS"}
# Labels the scrape adds to every series: job and instance (Prometheus), the PodMonitor's
# namespace, pod, container and endpoint (prometheus-operator's PodMonitor), and the node label
# packaging/kubernetes/podmonitor.yaml sets from the pod's node. Their values are the
# deployment's: only their names are checked.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "container", "endpoint", "service", "node"}
# A series selector's label matchers: label op "value", ... (the body between { and }).
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(' + STRING + r')\s*(?:,|$)')
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+')
LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\.|[^"\\])*)"')

KEYWORDS = {"and", "or", "unless", "atan2", "by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "start", "end", "inf", "nan"}
# Tokens in order: strings, durations (5m, 1h30m, 250ms), numbers, identifiers, anything else.
TOKEN = re.compile(r'''"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`'''
                   r"|\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*"
                   r"|0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
                   r"|[a-zA-Z_:][a-zA-Z0-9_:]*|\S")


def substitute(expr):
    """expr with Grafana's variables replaced; the names of those it does not know."""
    unknown = []

    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name in DURATION_VARIABLES:
            return DURATION_VARIABLES[name]
        if name in LABEL_VARIABLES:
            return LABEL_VARIABLES[name]
        unknown.append(name)
        return match.group(0)

    return VARIABLE.sub(value, expr), unknown


def metric_names(expr):
    """The metric names an expression selects: identifiers outside label matchers, grouping
    clauses and strings that are neither functions, aggregations nor keywords."""
    tokens = TOKEN.findall(expr)
    names = []
    for op, quoted in NAME_MATCHER.findall(expr):
        value = unquote(quoted)
        names += value.split("|") if op == "=~" else [value]
    depth_braces = 0
    depth_brackets = 0
    grouping = False  # inside by (...), without (...), on (...), ignoring (...), group_x (...)
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "{":
            depth_braces += 1
            continue
        if token == "}":
            depth_braces -= 1
            continue
        if token == "[":
            depth_brackets += 1
            continue
        if token == "]":
            depth_brackets -= 1
            continue
        if depth_braces > 0 or depth_brackets > 0:
            continue  # label names and matchers; a range or subquery's [3d6h:15m]
        if grouping:
            if token == ")":
                grouping = False
            continue
        if token.lower() in ("by", "without", "on", "ignoring", "group_left", "group_right") and following == "(":
            grouping = True
            continue
        if not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", token):
            continue
        if token.lower() in KEYWORDS:
            continue
        if following == "(" or following.lower() in ("by", "without"):
            continue  # a function, or an aggregation (sum(...), sum by (node) (...))
        names.append(token)
    return names


def unscraped_list(path):
    """{metric: reason} of the families no scrape here has; problems with the list itself."""
    listed, problems = {}, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            metric, _, reason = line.strip().partition(" ")
            if not reason.strip():
                problems.append(f"{path}:{n}: {metric} is listed as not scraped without a reason")
            listed[metric] = reason.strip()
    return listed, problems


def scraped_labels(series_path, values_path):
    """{metric: {label: {values}}} from the scrapes' sample lines and the extra values."""
    labels = {}
    with open(series_path, encoding="utf-8") as f:
        for line in f:
            m = SAMPLE.match(line)
            if not m or line.startswith("#"):
                continue
            metric = labels.setdefault(m.group(1), {})
            for name, value in LABEL_PAIR.findall(m.group(2) or ""):
                metric.setdefault(name, set()).add(unescape(value))
    if values_path:
        with open(values_path, encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    metric, label, value = line.split()
                    labels.setdefault(metric, {}).setdefault(label, set()).add(value)
    return labels


# Go's escapes in "..." and '...' (PromQL strings are Go's: Prometheus' docs, Querying basics,
# String literals); the exposition format escapes \\, \" and \n in label values.
ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
           "\\": "\\", '"': '"', "'": "'"}


def unescape(text):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), "\\" + m.group(1)), text)


def unquote(quoted):
    """A PromQL string literal's value: `raw`, or "..." and '...' with their escapes."""
    return quoted[1:-1] if quoted[0] == "`" else unescape(quoted[1:-1])


def selectors(expr):
    """(metric name or None, body) of every series selector with braces in expr: name{...} and
    {...}. Strings outside selectors are skipped (a label_replace regex may hold braces)."""
    found = []
    i, name, name_end = 0, None, -1
    while i < len(expr):
        c = expr[i]
        if c in "\"'`":
            m = re.compile(STRING).match(expr, i)
            if not m:
                raise ValueError(f"an unterminated string at {i}")
            i = m.end()
            name = None
            continue
        m = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*").match(expr, i)
        if m:
            name, name_end = m.group(0), m.end()
            i = m.end()
            continue
        if c == "{":
            j = i + 1
            while j < len(expr) and expr[j] != "}":
                if expr[j] in "\"'`":
                    m = re.compile(STRING).match(expr, j)
                    if not m:
                        raise ValueError(f"an unterminated string at {j}")
                    j = m.end()
                else:
                    j += 1
            follows_name = name is not None and expr[name_end:i].strip() == ""
            found.append((name if follows_name else None, expr[i + 1:j]))
            i, name = j + 1, None
            continue
        if not c.isspace():
            name = None
        i += 1
    return found


def parse_matchers(body):
    """[(label, op, value)] of a selector's body; None when the body is not only matchers."""
    matchers, pos = [], 0
    while body[pos:].strip():
        m = MATCHER.match(body, pos)
        if not m:
            return None
        matchers.append((m.group(1), m.group(2), unquote(m.group(3))))
        pos = m.end()
    return matchers


def as_regex(value, op):
    """The Python regex a matcher's value stands for, Grafana's variables as .* (any value)."""
    if op in ("=", "!="):
        out, last = "", 0
        for m in VARIABLE.finditer(value):
            out += re.escape(value[last:m.start()]) + ".*"
            last = m.end()
        return out + re.escape(value[last:])
    return VARIABLE.sub(".*", value)


def alternatives(regex):
    """(variant, branch) for each branch of each | in regex, at any depth: the regex with that
    group's alternation replaced by the one branch (the other groups left as they are)."""
    groups = []  # [content start, [positions of |], content end]
    stack = [[0, [], len(regex)]]
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < len(regex) and regex[j] == "^":
                j += 1
            if j < len(regex) and regex[j] == "]":
                j += 1
            while j < len(regex) and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            m = re.compile(r"\((\?(?:P?<[^>]*>|[a-zA-Z]*:))?").match(regex, i)
            stack.append([m.end(), [], None])
            i = m.end()
            continue
        if c == ")" and len(stack) > 1:
            group = stack.pop()
            group[2] = i
            groups.append(group)
        elif c == "|":
            stack[-1][1].append(i)
        i += 1
    groups.append(stack[0])
    out = []
    for start, pipes, end in groups:
        if not pipes:
            continue
        bounds = [start - 1] + pipes + [end]
        for a, b in zip(bounds, bounds[1:]):
            branch = regex[a + 1:b]
            out.append((regex[:start] + branch + regex[end:], branch))
    return out


def value_problem(op, value, values):
    """Why a matcher's value can select (=, =~) or exclude (!=, !~) none of the values seen;
    None when it can."""
    regex = as_regex(value, op)
    try:
        matches = lambda r: any(re.fullmatch(r, v, re.S) for v in values)
        if op in ("=", "!="):
            if not matches(regex):
                return "no such value"
            return None
        if not matches(regex):
            return "the regex matches no value"
        missing = [branch for variant, branch in alternatives(regex) if not matches(variant)]
    except re.error as e:
        return f"a regex this check cannot read ({e})"
    if missing:
        return "no value matches the alternative " + ", ".join(f'"{b}"' for b in missing)
    return None


def matcher_problems(expr, labels, known):
    """The label matchers of expr (before Grafana's variables are replaced) that no scraped series
    can satisfy; the metrics whose matchers could not be checked (no scraped series)."""
    problems, unchecked = [], set()
    try:
        found = selectors(expr)
    except ValueError as e:
        return [f"cannot read the selectors: {e}"], unchecked
    for name, body in found:
        matchers = parse_matchers(body)
        if matchers is None:
            problems.append(f"cannot read the label matchers {{{body}}}")
            continue
        metrics = [name] if name else []
        for label, op, value in matchers:
            if label == "__name__" and op == "=":
                metrics.append(value)
            elif label == "__name__" and op == "=~":
                metrics += [k for k in sorted(known) if re.fullmatch(value, k)]
        others = [(label, op, value) for label, op, value in matchers if label != "__name__"]
        if not others:
            continue
        where = name or "{" + body + "}"
        if not metrics:
            problems.append(f"{where}: label matchers on a selector that names no metric")
            continue
        unchecked |= {m for m in metrics if m not in labels}
        scraped = [m for m in metrics if m in labels]
        if not scraped:
            continue
        seen = {}
        for m in scraped:
            for label, values in labels[m].items():
                seen.setdefault(label, set()).update(values)
        for label, op, value in others:
            if label not in seen and label not in TARGET_LABELS and "ALERTS" not in metrics:
                problems.append(f"{where} has no label {label} (its labels: {', '.join(sorted(seen)) or 'none'})")
                continue
            if label not in seen or value == "":
                continue  # a target label's values are the deployment's; ="" is "no such label"
            why = value_problem(op, value, seen[label])
            if why:
                problems.append(f'{where}{{{label}{op}"{value}"}}: {why} (seen: {", ".join(sorted(seen[label]))})')
    return problems, unchecked


def rule_expressions(path):
    with open(path, encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"rule {rule.get('alert') or rule.get('record')}", str(rule["expr"])


def dashboard_expressions(path):
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dashboard.get("panels", [])):
        for t in p.get("targets", []):
            if "expr" in t:
                yield f"panel {p['id']} \"{p.get('title', '')}\" target {t.get('refId')}", t["expr"]
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        query = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
        # label_values(SELECTOR, LABEL) asks for a label's values on a series selector; the other
        # Grafana query functions (label_values(LABEL), metrics(), query_result()) are not used here.
        m = re.fullmatch(r"\s*label_values\((.+),\s*([a-zA-Z_]\w*)\s*\)\s*", query)
        if not m:
            yield f"variable {v['name']}: not label_values(SELECTOR, LABEL)", None
            continue
        yield f"variable {v['name']} selector", m.group(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", required=True)
    parser.add_argument("--rules", action="append", default=[])
    parser.add_argument("--dashboard", action="append", default=[])
    parser.add_argument("--series")
    parser.add_argument("--values")
    parser.add_argument("--unscraped")
    parser.add_argument("--recording", required=True)
    args = parser.parse_args()
    with open(args.names, encoding="utf-8") as f:
        known = {line.strip() for line in f if line.strip()} | PROMETHEUS_SERIES
    labels = scraped_labels(args.series, args.values) if args.series else None
    unchecked = set()

    problems = []
    unscraped = {}
    if args.unscraped:
        unscraped, problems = unscraped_list(args.unscraped)
        if labels is not None:
            problems += [f"{m} is listed as not scraped, but a scrape has it: take it off {args.unscraped}"
                         for m in sorted(unscraped) if m in labels]
    if labels is not None:
        alerts = {rule["alert"] for path in args.rules for group in yaml.safe_load(open(path, encoding="utf-8"))["groups"]
                  for rule in group["rules"] if "alert" in rule}
        labels["ALERTS"] = {"alertname": alerts, "alertstate": {"pending", "firing"}}
    used = set()
    recording = []
    sources = [(path, rule_expressions(path), False) for path in args.rules]
    sources += [(path, dashboard_expressions(path), True) for path in args.dashboard]
    for path, expressions, record in sources:
        count = 0
        for where, expr in expressions:
            if expr is None:
                problems.append(f"{path}: {where}")
                continue
            count += 1
            promql, unknown = substitute(expr)
            for name in unknown:
                problems.append(f"{path}: {where}: unknown Grafana variable ${name} in {expr}")
            if labels is not None:
                wrong, blind = matcher_problems(expr, labels, known)
                unchecked |= blind
                for name in sorted(blind - set(unscraped)):
                    problems.append(f"{path}: {where}: {name} has no scraped series, so its label matchers cannot be "
                                    f"checked: add a scrape that has it, or list it with the reason (--unscraped) "
                                    f"(expression: {expr})")
                for p in wrong:
                    problems.append(f"{path}: {where}: {p} (expression: {expr})")
            names = metric_names(promql)
            if not names:
                problems.append(f"{path}: {where}: selects no metric: {expr}")
            for name in names:
                used.add(name)
                if name not in known:
                    problems.append(f"{path}: {where}: {name} is not a metric rdmactl exports (expression: {expr})")
            if record:
                recording.append({"record": f"rdmactl_dashboard:query_{len(recording)}", "expr": promql})
        if count == 0:
            problems.append(f"{path}: no expressions found")
    with open(args.recording, "w", encoding="utf-8") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recording}]}, f, sort_keys=False, width=1000)
    print(f"# {len(used)} metric names used: {' '.join(sorted(used))}")
    if labels is not None:
        print(f"# label matchers not checked (no scraped series, listed with a reason): {' '.join(sorted(unchecked)) or 'none'}")
    for p in problems:
        print(f"FAIL - {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
