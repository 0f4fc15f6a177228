// SPDX-License-Identifier: Apache-2.0
// Offline checks of the Kubernetes manifests in packaging/kubernetes/, run by run_test.sh from a
// directory holding this package's node_modules (npm ci of package.json here):
//
//   node validate.mjs MANIFEST.yaml...
//
// 1. Schema: every document against the model of its apiVersion and kind. kubernetes-models
//    carries the Kubernetes OpenAPI definitions (v1.33) compiled to ajv validators (types, formats,
//    required fields, enums); @kubernetes-models/prometheus-operator does the same from the
//    prometheus-operator CRDs' openAPIV3Schema (PodMonitor, PrometheusRule).
// 2. Unknown fields: the OpenAPI definitions do not forbid extra properties, so a misspelt field
//    (priorityClasName) would pass 1 and be dropped by the API server. The same packages' TypeScript
//    interfaces, generated from the same definitions, do: each document becomes a typed object
//    literal and tsc's excess-property check rejects any field the schema does not have.
// 3. Controls: documents broken on purpose (a misspelt field, a string for an integer, a missing
//    required field) must be rejected by 1 or 2, or those checks prove nothing.
// 4. Policy: what issue 14 asks of the DaemonSet (resources, priority class, Pod Security labels,
//    service account without a token, hostPath state, grace period, token Secret mode, PodMonitor
//    matching the pod's port).
// 5. Issue 28: the PodMonitor's labels, scraped as Prometheus would (honor_labels, relabelling),
//    keep the agent's `node` with no exported_node, also under overrideHonorLabels; tolerations
//    tolerate NoSchedule taints and no NoExecute one (Kubernetes' ToleratesTaint); the image is
//    referenced by digest, pinned through kustomization.yaml (RDMACTL_K8S_KUSTOMIZATION).
//    RDMACTL_METRIC_LABELS: the label names the agent's metrics carry (run_test.sh takes them from
//    the binary's output).
//
//   node validate.mjs --render-image RDMACTL_YAML KUSTOMIZATION_YAML
// prints the DaemonSet's image after kustomize's `images:` (run_test.sh checks pin-image.sh with it).
//
// Prints one line per check and "N passed, N failed"; exits 1 on any failure.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import yaml from "js-yaml";

const require = createRequire(import.meta.url);
let passed = 0;
let failed = 0;
const ok = (what) => { passed++; console.log(`ok   - ${what}`); };
const fail = (what, detail) => {
  failed++;
  console.log(`FAIL - ${what}`);
  if (detail) console.log(String(detail).replace(/^/gm, "    "));
};
const check = (what, cond, detail) => (cond ? ok(what) : fail(what, detail));

// apiVersion -> module path prefix and the TypeScript import path of its models.
function modelPath(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}`;
  if (apiVersion === "v1") return `kubernetes-models/v1/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

function schemaErrors(doc) {
  let mod;
  try {
    mod = require(modelPath(doc.apiVersion, doc.kind));
  } catch (e) {
    return `no model for ${doc.apiVersion} ${doc.kind}: ${e.message}`;
  }
  const Model = mod[doc.kind];
  if (!Model) return `no model for ${doc.apiVersion} ${doc.kind}`;
  try {
    new Model(doc).validate();
    return null;
  } catch (e) {
    return e.message + (e.errors ? "\n" + JSON.stringify(e.errors, null, 1) : "");
  }
}

// One tsc run over many documents: returns, per document, tsc's errors (empty when it compiles).
function typeErrors(docs) {
  const dir = fs.mkdtempSync(path.join(process.cwd(), ".tscheck-"));
  try {
    const files = docs.map((doc, i) => {
      const file = path.join(dir, `doc${i}.ts`);
      const type = `I${doc.kind}`;
      fs.writeFileSync(file,
        `import type { ${type} } from "${modelPath(doc.apiVersion, doc.kind)}";\n` +
        `export const doc: ${type} = ${JSON.stringify(doc, null, 2)};\n`);
      return path.relative(process.cwd(), file);  // as tsc names it in its messages
    });
    let out = "";
    let status = 0;
    try {
      execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "--noEmit", "--strict",
        "--target", "es2020", "--module", "commonjs", "--moduleResolution", "node", ...files], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
      out = (e.stdout || "") + (e.stderr || "");
      status = e.status ?? 1;
    }
    // tsc prints "FILE(line,col): error TS...: message", continued by indented lines.
    const perFile = new Map(files.map((f) => [f, []]));
    let current = null;
    for (const line of out.split("\n")) {
      const owner = files.find((f) => line.startsWith(f + "("));
      if (owner) current = owner;
      else if (!line.startsWith(" ")) current = null;
      if (current) perFile.get(current).push(line.replace(path.dirname(current) + path.sep, ""));
    }
    // tsc failed without naming a document (a bad option, a missing module): every document fails.
    if (status !== 0 && [...perFile.values()].every((lines) => lines.length === 0)) {
      return files.map(() => `tsc exited ${status}:\n${out}`);
    }
    return files.map((f) => perFile.get(f).join("\n"));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// --- kustomize's images transformer ----------------------------------------------------------
// kubernetes-sigs/kustomize api/internal/image/image.go (IsImageMatched, Split) and
// api/filters/imagetag/updater.go (SetImageValue): an entry applies to a reference whose name is
// exactly its `name`; newName replaces the name, a digest replaces both tag and digest.
const escapeRegex = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
function imageMatches(ref, name) {
  return new RegExp(`^${escapeRegex(name)}(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z][a-zA-Z0-9]*:[a-zA-Z0-9_.{}-]*)?$`).test(ref);
}
function splitImage(ref) {
  const slash = Math.max(ref.indexOf("/"), 0);
  const rest = ref.slice(slash);
  let at = rest.indexOf("@");
  let colon = rest.indexOf(":");
  if (at < 0 && colon < 0) return { name: ref, tag: "", digest: "" };
  if (at >= 0 && (at < colon || colon < 0)) return { name: ref.slice(0, at + slash), tag: "", digest: ref.slice(at + slash + 1) };
  if (at >= 0) return { name: ref.slice(0, colon + slash), tag: ref.slice(colon + slash + 1, at + slash), digest: ref.slice(at + slash + 1) };
  return { name: ref.slice(0, colon + slash), tag: ref.slice(colon + slash + 1), digest: "" };
}
function kustomizeImage(ref, images) {
  for (const entry of images || []) {
    if (!imageMatches(ref, entry.name)) continue;
    let { name, tag, digest } = splitImage(ref);
    if (entry.newName) name = entry.newName;
    if (entry.newTag && entry.digest) [tag, digest] = [String(entry.newTag), entry.digest];
    else if (entry.newTag) [tag, digest] = [String(entry.newTag), ""];
    else if (entry.digest) [tag, digest] = ["", entry.digest];
    return name + (tag ? `:${tag}` : "") + (digest ? `@${digest}` : "");
  }
  return ref;
}
const daemonSetImage = (manifest) => yaml.loadAll(fs.readFileSync(manifest, "utf8"))
  .find((d) => d?.kind === "DaemonSet")?.spec.template.spec.containers[0].image;
if (process.argv[2] === "--render-image") {
  const kustomization = yaml.load(fs.readFileSync(process.argv[4], "utf8"));
  console.log(kustomizeImage(daemonSetImage(process.argv[3]), kustomization.images));
  process.exit(0);
}

// --- load ---------------------------------------------------------------------------------------
const docs = [];
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (doc) docs.push({ file: path.basename(file), doc });
  }
}
const label = ({ file, doc }) => `${file}: ${doc.kind}/${doc.metadata?.name}`;
check(`${docs.length} documents in ${process.argv.length - 2} files`, docs.length > 0);

// --- 1 and 2: every document -------------------------------------------------------------------
for (const d of docs) {
  const err = schemaErrors(d.doc);
  check(`schema (${d.doc.apiVersion}): ${label(d)}`, !err, err);
}
const tsErrs = typeErrors(docs.map((d) => d.doc));
docs.forEach((d, i) => check(`no unknown fields or wrong types (TypeScript): ${label(d)}`, !tsErrs[i], tsErrs[i]));

// --- 3: controls --------------------------------------------------------------------------------
const find = (kind) => docs.find((d) => d.doc.kind === kind)?.doc;
const ds = find("DaemonSet");
const pm = find("PodMonitor");
const clone = (x) => JSON.parse(JSON.stringify(x));
const controls = [];
if (ds) {
  const misspelt = clone(ds);
  misspelt.spec.template.spec.priorityClasName = misspelt.spec.template.spec.priorityClassName;
  delete misspelt.spec.template.spec.priorityClassName;
  controls.push(["DaemonSet with priorityClasName (misspelt)", misspelt]);
  const wrongType = clone(ds);
  wrongType.spec.template.spec.terminationGracePeriodSeconds = "90";
  controls.push(["DaemonSet with terminationGracePeriodSeconds: \"90\"", wrongType]);
  const noName = clone(ds);
  delete noName.spec.template.spec.containers[0].name;
  controls.push(["DaemonSet with a container without a name", noName]);
}
if (pm) {
  const misspelt = clone(pm);
  misspelt.spec.podMetricsEndpoints[0].prot = misspelt.spec.podMetricsEndpoints[0].port;
  delete misspelt.spec.podMetricsEndpoints[0].port;
  controls.push(["PodMonitor with prot (misspelt)", misspelt]);
  const missing = clone(pm);
  delete missing.spec.selector;
  controls.push(["PodMonitor without its required selector", missing]);
}
const pr = find("PrometheusRule");
if (pr) {
  const misspelt = clone(pr);
  const rule = misspelt.spec.groups[0].rules[0];
  rule.exrp = rule.expr;
  delete rule.expr;
  controls.push(["PrometheusRule with a rule's exrp (misspelt)", misspelt]);
  const wrongType = clone(pr);
  wrongType.spec.groups[0].rules[0].labels = ["severity=warning"];
  controls.push(["PrometheusRule with a rule's labels as a list", wrongType]);
}
const controlTs = typeErrors(controls.map(([, doc]) => doc));
controls.forEach(([what, doc], i) => {
  const by = [schemaErrors(doc) && "schema", controlTs[i] && "TypeScript"].filter(Boolean).join(" and ");
  check(`control: ${what} is rejected${by ? ` (by ${by})` : ""}`, by, "both the schema and TypeScript accepted it: the checks are blind");
});

// --- 4: policy ----------------------------------------------------------------------------------
const ns = find("Namespace");
const sa = find("ServiceAccount");
check("a Namespace, a ServiceAccount, a DaemonSet and a PodMonitor", ns && sa && ds && pm);
if (ns && sa && ds && pm) {
  const nsName = ns.metadata.name;
  for (const d of docs) {
    if (d.doc.kind !== "Namespace") check(`${label(d)} is in namespace ${nsName}`, d.doc.metadata.namespace === nsName);
  }
  const labels = ns.metadata.labels || {};
  check("Pod Security: enforce=privileged (host network, privileged container)",
    labels["pod-security.kubernetes.io/enforce"] === "privileged", JSON.stringify(labels));
  for (const mode of ["audit", "warn"]) {
    check(`Pod Security: ${mode}=privileged (no warning on every rollout)`, labels[`pod-security.kubernetes.io/${mode}`] === "privileged");
  }
  const pod = ds.spec.template.spec;
  check("its own ServiceAccount, without an API token", pod.serviceAccountName === sa.metadata.name && sa.automountServiceAccountToken === false);
  check("the pod does not mount an API token either", pod.automountServiceAccountToken === false);
  check("priorityClassName: system-node-critical", pod.priorityClassName === "system-node-critical");
  check("hostNetwork", pod.hostNetwork === true);
  check("terminationGracePeriodSeconds >= 60 (serve finishes a reconcile in progress on SIGTERM)",
    pod.terminationGracePeriodSeconds >= 60, pod.terminationGracePeriodSeconds);
  const c = pod.containers.find((x) => x.name === "rdmactl") || pod.containers[0];
  for (const kind of ["requests", "limits"]) {
    for (const r of ["cpu", "memory"]) check(`resources.${kind}.${r}`, c.resources?.[kind]?.[r] !== undefined);
  }
  check("privileged (CAP_NET_ADMIN, sysfs, configfs, /dev/infiniband)", c.securityContext?.privileged === true);
  const env = Object.fromEntries((c.env || []).map((e) => [e.name, e]));
  check("RDMACTL_NODE is the node's name", env.RDMACTL_NODE?.valueFrom?.fieldRef?.fieldPath === "spec.nodeName");
  const volumes = Object.fromEntries(pod.volumes.map((v) => [v.name, v]));
  const mountOf = (p) => (c.volumeMounts || []).find((m) => m.mountPath === p);
  const stateMount = mountOf("/var/lib/rdmactl");
  check("/var/lib/rdmactl on a hostPath (journals, link-type boot record)",
    stateMount && volumes[stateMount.name]?.hostPath?.path === "/var/lib/rdmactl");
  const runMount = mountOf("/run/rdmactl");
  check("/run/rdmactl on a hostPath (the host lock, shared with rdmactl on the node)",
    runMount && volumes[runMount.name]?.hostPath?.path === "/run/rdmactl");
  const cmd = c.command || [];
  const arg = (flag) => cmd[cmd.indexOf(flag) + 1];
  check("serve runs the agent", cmd.includes("serve") && cmd.includes("-f"));
  const tokenFile = arg("--token-file");
  const tokenMount = (c.volumeMounts || []).find((m) => tokenFile && tokenFile.startsWith(m.mountPath + "/"));
  const tokenVolume = tokenMount && volumes[tokenMount.name];
  check(`--token-file ${tokenFile} is in a Secret's mount`, tokenVolume?.secret?.secretName, JSON.stringify(tokenMount));
  check("the token Secret's defaultMode is 0400 (serve refuses a token others can read)",
    tokenVolume?.secret?.defaultMode === 0o400, tokenVolume?.secret?.defaultMode);
  const specFile = arg("-f");
  const specMount = (c.volumeMounts || []).find((m) => specFile && specFile.startsWith(m.mountPath + "/"));
  const cm = docs.find((d) => d.doc.kind === "ConfigMap" && d.doc.metadata.name === volumes[specMount?.name]?.configMap?.name)?.doc;
  check(`-f ${specFile} is the ConfigMap's ${path.basename(specFile || "")} (a directory mount: updates reach it)`,
    cm && !specMount.subPath && cm.data?.[path.basename(specFile)] !== undefined);
  const listen = arg("--listen") || "";
  const listenPort = Number(listen.split(":").pop());
  const port = (c.ports || []).find((p) => p.name === pm.spec.podMetricsEndpoints[0].port);
  check(`the PodMonitor's port "${pm.spec.podMetricsEndpoints[0].port}" is the container's, and serve listens on it (${listen})`,
    port && port.containerPort === listenPort);
  check("--listen on the pod's IP, with --insecure (serve refuses non-loopback otherwise)",
    listen.startsWith("$(POD_IP):") && cmd.includes("--insecure") && env.POD_IP?.valueFrom?.fieldRef?.fieldPath === "status.podIP");
  const podLabels = ds.spec.template.metadata.labels;
  check("the PodMonitor selects the DaemonSet's pods",
    Object.entries(pm.spec.selector.matchLabels || {}).every(([k, v]) => podLabels[k] === v));
  for (const probe of ["livenessProbe", "readinessProbe"]) {
    const p = c[probe]?.httpGet;
    check(`${probe} on ${p?.path} at the API's port`, p && (p.port === port?.name || p.port === listenPort) && !p.host);
  }
  check("livenessProbe /healthz, readinessProbe /readyz",
    c.livenessProbe?.httpGet?.path === "/healthz" && c.readinessProbe?.httpGet?.path === "/readyz");
  // For run_test.sh: the spec in the ConfigMap and serve's options, checked against the binary.
  if (process.env.RDMACTL_K8S_EXPORT) {
    fs.writeFileSync(process.env.RDMACTL_K8S_EXPORT, JSON.stringify({
      spec: cm?.data?.[path.basename(specFile || "")] ?? "",
      command: cmd,
      image: c.image,
    }));
  }
}

// --- 5: issue 28 --------------------------------------------------------------------------------
// Prometheus' relabelling (prometheus/prometheus model/relabel/relabel.go, Process): the actions
// these manifests use. Anything else fails, rather than be simulated wrongly.
function relabel(labels, rules) {
  const out = { ...labels };
  for (const r of rules || []) {
    const action = (r.action || "replace").toLowerCase();
    const regex = new RegExp(`^(?:${r.regex ?? "(.*)"})$`);
    if (action === "replace") {
      const value = (r.sourceLabels || []).map((l) => out[l] ?? "").join(r.separator ?? ";");
      const m = regex.exec(value);
      if (!m) continue;
      const result = (r.replacement ?? "$1").replace(/\$\{?(\d+)\}?/g, (_, i) => m[Number(i)] ?? "");
      if (result === "") delete out[r.targetLabel];
      else out[r.targetLabel] = result;
    } else if (action === "labeldrop") {
      for (const name of Object.keys(out)) if (regex.test(name)) delete out[name];
    } else {
      throw new Error(`relabel action ${r.action} is not simulated here`);
    }
  }
  return out;
}
// One scrape of the agent's series through a PodMonitor endpoint: the target's labels (what
// prometheus-operator's generated config gives a PodMonitor target, then the endpoint's
// relabelings), merged with each series' as Prometheus does (scrape/scrape.go, mutateSampleLabels:
// honor_labels keeps the series' label, otherwise the series' goes to exported_<name>), then the
// metricRelabelings. overrideHonorLabels (a Prometheus resource's field) forces honor_labels off.
function scrapeThrough(endpoint, series, overrideHonorLabels) {
  const meta = { __meta_kubernetes_pod_node_name: "gpu-01", __address__: "10.0.0.7:9473" };
  const target = Object.fromEntries(Object.entries({
    job: "rdmactl/rdmactl", instance: "10.0.0.7:9473", namespace: "rdmactl", pod: "rdmactl-x7k2p",
    container: "rdmactl", endpoint: endpoint.port, ...relabel(meta, endpoint.relabelings),
  }).filter(([k]) => !k.startsWith("__")));
  const honor = endpoint.honorLabels === true && !overrideHonorLabels;
  return series.map((own) => {
    const merged = { ...own };
    for (const [k, v] of Object.entries(target)) {
      if (honor) { if (!(k in merged)) merged[k] = v; continue; }
      if (k in merged) {
        let exported = `exported_${k}`;
        while (exported in merged) exported = `exported_${exported}`;
        merged[exported] = merged[k];
      }
      merged[k] = v;
    }
    return relabel(merged, endpoint.metricRelabelings);
  });
}
// The agent's series as it writes them: one with its own node (the agent's name for its node; a
// different spelling than the target's, so that the check sees which one won), one without.
const agentSeries = [{ node: "gpu-01.agent", device: "mlx5_0", port: "1" }, { version: "0.1.0" }];
function collisionProblems(monitor) {
  const problems = [];
  for (const [i, endpoint] of (monitor.spec.podMetricsEndpoints || []).entries()) {
    for (const override of [false, true]) {
      let scraped;
      try { scraped = scrapeThrough(endpoint, agentSeries, override); } catch (e) { problems.push(e.message); continue; }
      const where = `endpoint ${i}${override ? " under overrideHonorLabels" : ""}`;
      scraped.forEach((labels, j) => {
        const exported = Object.keys(labels).filter((k) => k.startsWith("exported_"));
        if (exported.length) problems.push(`${where}: ${exported.join(", ")} in ${JSON.stringify(labels)}`);
        const want = agentSeries[j].node ?? "gpu-01";
        if (labels.node !== want) problems.push(`${where}: node="${labels.node}", expected "${want}" in ${JSON.stringify(labels)}`);
        for (const [k, v] of Object.entries(agentSeries[j])) {
          if (labels[k] !== v) problems.push(`${where}: the agent's ${k}="${v}" became "${labels[k]}"`);
        }
      });
    }
  }
  return problems;
}
if (pm) {
  const problems = collisionProblems(pm);
  check("PodMonitor: every series keeps the agent's node label, none gets exported_node (with and without overrideHonorLabels)",
    problems.length === 0, problems.join("\n"));
  // Controls: the manifest of before issue 28, and one without the overrideHonorLabels fallback.
  const before = clone(pm);
  for (const e of before.spec.podMetricsEndpoints) { delete e.honorLabels; delete e.metricRelabelings; }
  check("control: the PodMonitor of before (relabelling into node, no honorLabels) gives exported_node",
    collisionProblems(before).some((p) => p.includes("exported_node")));
  const noFallback = clone(pm);
  for (const e of noFallback.spec.podMetricsEndpoints) delete e.metricRelabelings;
  check("control: honorLabels alone gives exported_node under overrideHonorLabels",
    collisionProblems(noFallback).some((p) => p.includes("overrideHonorLabels") && p.includes("exported_node")));
  // With honor_labels the series' labels win over the target's: the agent must write none of them.
  const metricLabels = (process.env.RDMACTL_METRIC_LABELS || "").split(",").filter(Boolean);
  const reserved = ["job", "instance", "namespace", "pod", "container", "endpoint", "service"];
  check(`the agent's metrics carry none of the target's labels (${reserved.join(", ")}): honorLabels hides none`,
    metricLabels.includes("node") && !metricLabels.some((l) => reserved.includes(l)),
    `RDMACTL_METRIC_LABELS=${metricLabels.join(",") || "(unset: run through run_test.sh)"}`);
}

// Kubernetes' matching (k8s.io/api core/v1 toleration.go, ToleratesTaint): an empty effect matches
// every effect, an empty key with Exists every key.
function tolerates(t, taint) {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === "Exists") return true;
  return (t.operator === "Equal" || !t.operator) && (t.value ?? "") === (taint.value ?? "");
}
const tolerationProblems = (tolerations) => {
  const problems = [];
  const noSchedule = [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" },
    { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }];
  const noExecute = [{ key: "example.com/maintenance", effect: "NoExecute" },
    { key: "node.kubernetes.io/out-of-service", value: "nodeshutdown", effect: "NoExecute" }];
  for (const taint of noSchedule) if (!tolerations.some((t) => tolerates(t, taint))) problems.push(`does not tolerate ${JSON.stringify(taint)}`);
  for (const taint of noExecute) if (tolerations.some((t) => tolerates(t, taint))) problems.push(`tolerates ${JSON.stringify(taint)}`);
  for (const t of tolerations) {
    if (!t.effect) problems.push(`${JSON.stringify(t)} has no effect: it matches NoExecute too`);
    else if (t.effect === "NoExecute") problems.push(`${JSON.stringify(t)} tolerates NoExecute (by default none does)`);
  }
  return problems;
};
if (ds) {
  const tolerations = ds.spec.template.spec.tolerations || [];
  const problems = tolerationProblems(tolerations);
  check("tolerations: NoSchedule taints yes, NoExecute no, each with an effect", problems.length === 0, problems.join("\n"));
  check("control: `- operator: Exists` (before issue 28) fails the toleration check",
    tolerationProblems([{ operator: "Exists" }]).some((p) => p.includes("NoExecute")));

  // The image by digest: the manifest's placeholder (no digest, so nothing pulls it) or a pinned
  // sha256; never a tag alone, which a push can move.
  const image = ds.spec.template.spec.containers[0].image;
  const byDigest = (ref) => /^[a-z0-9][a-z0-9._\/:-]*@sha256:([0-9a-f]{64}|UNPINNED)$/.test(ref) && !splitImage(ref).tag;
  check(`the DaemonSet's image is referenced by digest (${image})`, byDigest(image));
  check("control: registry.example.com/rdmactl:0.1.0 (a tag) is not by digest", !byDigest("registry.example.com/rdmactl:0.1.0"));
  check("control: a tag with a digest is refused too (the tag says nothing true)",
    !byDigest(`registry.example.com/rdmactl:0.1.0@sha256:${"0".repeat(64)}`));
  if (process.env.RDMACTL_K8S_KUSTOMIZATION) {
    const k = yaml.load(fs.readFileSync(process.env.RDMACTL_K8S_KUSTOMIZATION, "utf8"));
    check("kustomization.yaml's resources are rdmactl.yaml", JSON.stringify(k.resources) === JSON.stringify(["rdmactl.yaml"]), JSON.stringify(k.resources));
    const entries = k.images || [];
    const entryProblems = entries.map((e) => (
      !imageMatches(image, e.name) ? `${e.name} names no image of rdmactl.yaml (kustomize would change nothing)`
        : e.newTag ? `${e.name}: newTag ${e.newTag} (a tag, not a digest)`
          : !/^sha256:[0-9a-f]{64}$/.test(e.digest || "") ? `${e.name}: digest ${e.digest} is not sha256 and 64 hex digits` : null)).filter(Boolean);
    check("kustomization.yaml's images: none, or a sha256 digest for rdmactl.yaml's image", entryProblems.length === 0, entryProblems.join("\n"));
    const rendered = kustomizeImage(image, entries);
    check(`apply -k runs ${rendered}: pinned, or the placeholder no runtime pulls`,
      byDigest(rendered) && (entries.length === 0 ? rendered.endsWith("@sha256:UNPINNED") : /@sha256:[0-9a-f]{64}$/.test(rendered)));
  }
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
