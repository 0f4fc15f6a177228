#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The PromQL of rdmactl's alerting rules and Grafana dashboard against the metrics rdmactl exports.

    check_queries.py --names NAMES [--series SERIES [--values VALUES]] --rules RULES.yml
                     --dashboard DASHBOARD.json --recording OUT.yml

NAMES holds the metric names of real scrapes of rdmactl (one per line: every sample's name, so a
histogram's _bucket, _sum and _count). Every metric an expression selects must be one of them.
SERIES holds the sample lines of those scrapes (name{labels} value): every label matcher on a
metric with scraped series must name one of its labels (or a label Prometheus adds at the scrape),
and an = matcher's value must be one of the values scraped, a =~ matcher's regex match one of them
(a regex that is only words separated by |: each word)
(values that hold a Grafana variable are not checked). VALUES adds values no scrape here can show
("METRIC LABEL VALUE" a line, each checked against the source by the caller).
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
# A selector by name, {__name__=~"a|b"}: the names it alternates.
NAME_MATCHER = re.compile(r'__name__\s*(=~|=)\s*"([^"]*)"')

# PromQL words that are not metric names: the set operators and atan2, the grouping and matching
# modifiers, bool, offset, @'s start and end, and the literals Inf and NaN (Prometheus' docs,
# Querying: Basics and Operators). Functions and aggregations are told by what follows them: "(",
# or by/without. The test errs only one way: a word taken for a metric that is none fails loudly,
# and a metric name is never followed by "(" (promtool, which parses the same text, would refuse it).
# Series Prometheus writes itself for every target (Prometheus' docs, Jobs and instances:
# "Automatically generated labels and time series"): up, scrape_duration_seconds, ...
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
# Labels the scrape adds to every series: job and instance (Prometheus), the PodMonitor's
# namespace, pod, container and endpoint (prometheus-operator's PodMonitor), and the node label
# packaging/kubernetes/podmonitor.yaml sets from the pod's node. Their values are the
# deployment's: only their names are checked.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "container", "endpoint", "service", "node"}
# A series selector's label matchers: name{label op "value", ...}.
SELECTOR = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{((?:"(?:\\.|[^"\\])*"|[^}"])*)\}')
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:\\.|[^"\\])*)"\s*,?')
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
    for op, value in NAME_MATCHER.findall(expr):
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
                metric.setdefault(name, set()).add(value)
    if values_path:
        with open(values_path, encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    metric, label, value = line.split()
                    labels.setdefault(metric, {}).setdefault(label, set()).add(value)
    return labels


def matcher_problems(expr, labels):
    """The label matchers of expr (before Grafana's variables are replaced) that no scraped series
    can satisfy; the metrics whose labels could not be checked (no scraped series)."""
    problems, unchecked = [], set()
    for m in SELECTOR.finditer(expr):
        metric, body = m.group(1), m.group(2)
        if metric.lower() in KEYWORDS:
            continue
        seen = labels.get(metric)
        if seen is None:
            unchecked.add(metric)
            continue
        for name, op, value in MATCHER.findall(body):
            if name == "__name__":
                continue
            if name not in seen and name not in TARGET_LABELS:
                problems.append(f"{metric} has no label {name} (its labels: {', '.join(sorted(seen)) or 'none'})")
                continue
            if name not in seen or "$" in value or op in ("!=", "!~") or (op == "=" and value == ""):
                continue
            values = seen[name]
            if op == "=" and value not in values:
                problems.append(f'{metric}{{{name}="{value}"}}: no such value (seen: {", ".join(sorted(values))})')
            elif op == "=~" and re.fullmatch(r"[\w:. -]+(\|[\w:. -]+)*", value):
                # Alternatives of plain words: each one must be a value (a misspelt one matches nothing).
                missing = [a for a in value.split("|") if a not in values]
                if missing:
                    problems.append(f'{metric}{{{name}=~"{value}"}}: no such value {", ".join(missing)} (seen: {", ".join(sorted(values))})')
            elif op == "=~" and not any(re.fullmatch(value, v) for v in values):
                problems.append(f'{metric}{{{name}=~"{value}"}}: matches no value (seen: {", ".join(sorted(values))})')
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
    parser.add_argument("--recording", required=True)
    args = parser.parse_args()
    with open(args.names, encoding="utf-8") as f:
        known = {line.strip() for line in f if line.strip()} | PROMETHEUS_SERIES
    labels = scraped_labels(args.series, args.values) if args.series else None
    unchecked = set()

    problems = []
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
                wrong, blind = matcher_problems(expr, labels)
                unchecked |= blind
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
        print(f"# label matchers not checked (no scraped series): {' '.join(sorted(unchecked)) or 'none'}")
    for p in problems:
        print(f"FAIL - {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
