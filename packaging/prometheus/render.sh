#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# render.sh - rdmactl-alerts.yml as Prometheus loads it, or as the Prometheus Operator's
# PrometheusRule, with the runbook links pointing where your copy of docs/alerts.md is served.
#
#   render.sh [--runbook-base URL] > /etc/prometheus/rules/rdmactl-alerts.yml
#   render.sh --prometheusrule [--namespace NS] [--label KEY=VALUE]... [--runbook-base URL] > prometheusrule.yaml
#
# The rules' runbook_url is "docs/alerts.md#<alert in lower case>", a path in rdmactl's source
# tree: no site hosts the docs. --runbook-base URL replaces "docs/alerts.md" with URL (the page
# of docs/alerts.md on your Git forge or wiki), keeping the anchor. Without --prometheusrule the
# rules file is written as it is apart from that; with it, its groups become the spec of a
# PrometheusRule (monitoring.coreos.com/v1) named rdmactl in namespace NS (default rdmactl, the
# PodMonitor's). --label KEY=VALUE adds a label to the PrometheusRule's metadata, for a
# Prometheus whose ruleSelector asks for one: kube-prometheus-stack's default selects its Helm
# release (--label release=kube-prometheus-stack, your release's name). Repeat it for more.
# packaging/kubernetes/prometheusrule.yaml is `render.sh --prometheusrule`; tests/integration/
# prometheus checks that it still is.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
rules=$here/rdmactl-alerts.yml
base=
namespace=rdmactl
operator=
labels=
usage() {
  sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0" >&2
  exit 64
}
while [ $# -gt 0 ]; do
  case $1 in
    --runbook-base) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
    --namespace) [ $# -ge 2 ] || usage; namespace=$2; shift 2 ;;
    --prometheusrule) operator=yes; shift ;;
    --label)
      [ $# -ge 2 ] || usage
      # A Kubernetes label: an optional DNS-1123 subdomain prefix and '/', a name of at most 63
      # characters ([A-Za-z0-9], with - _ . inside), and a value of the same form or empty.
      if ! printf '%s\n' "$2" | grep -Eqx '([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?'; then
        echo "render.sh: --label must be KEY=VALUE with a Kubernetes label name and value: $2" >&2
        exit 64
      fi
      if [ "${2%%=*}" = app.kubernetes.io/name ]; then
        echo "render.sh: --label app.kubernetes.io/name: the PrometheusRule has that label (rdmactl) already" >&2
        exit 64
      fi
      labels="$labels    ${2%%=*}: \"${2#*=}\"
"
      shift 2
      ;;
    -h | --help) usage ;;
    *) echo "render.sh: unknown argument: $1" >&2; usage ;;
  esac
done
if [ -n "$labels" ] && [ -z "$operator" ]; then
  echo "render.sh: --label labels the PrometheusRule: it needs --prometheusrule" >&2
  exit 64
fi
# The base goes into a double-quoted YAML string and before "#anchor": no quote, backslash, '#'
# or blank, and an absolute URL or path (a relative one would resolve against the Alertmanager's).
case $base in
  *[\"\\#\ \	]*) echo "render.sh: --runbook-base must not contain quotes, backslashes, '#' or blanks: $base" >&2; exit 64 ;;
esac
case $base in
  '' | http://?* | https://?* | /?*) ;;
  *) echo "render.sh: --runbook-base must be an http(s) URL or an absolute path: $base" >&2; exit 64 ;;
esac
# Kubernetes names: a DNS-1123 label.
if ! printf '%s\n' "$namespace" | grep -Eqx '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'; then
  echo "render.sh: --namespace is not a Kubernetes namespace name: $namespace" >&2
  exit 64
fi

# The rules with their links rebased (sed's replacement escapes & and the | delimiter).
rebased() {
  if [ -z "$base" ]; then
    cat "$rules"
  else
    escaped=$(printf '%s\n' "$base" | sed 's/[&|]/\\&/g')
    sed "s|^\\(  *runbook_url: \"\\)docs/alerts\\.md#|\\1$escaped#|" "$rules"
  fi
}

if [ -z "$operator" ]; then
  rebased
  exit 0
fi

cat <<EOF
# SPDX-License-Identifier: Apache-2.0
# Written by packaging/prometheus/render.sh --prometheusrule from packaging/prometheus/rdmactl-alerts.yml:
# edit that file and run render.sh again (tests/integration/prometheus fails when they differ).
#
# The Prometheus Operator loads these alerting rules into every Prometheus whose ruleSelector
# matches the labels below and whose ruleNamespaceSelector takes namespace $namespace
# (kube-prometheus-stack's default ruleSelector is its Helm release label: render.sh --label
# release=NAME, or ruleSelector: {}). Needs the PrometheusRule CRD (monitoring.coreos.com/v1);
# docs/alerts.md.
#
#   kubectl apply -f packaging/kubernetes/prometheusrule.yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: rdmactl
  namespace: $namespace
  labels:
    app.kubernetes.io/name: rdmactl
EOF
printf '%s' "$labels"
echo "spec:"
# From "groups:" on, indented under spec (the file's header comment stays in the rules file).
rebased | sed -n '/^groups:/,$p' | sed 's/^\(.\)/  \1/'
