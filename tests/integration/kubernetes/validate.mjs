// SPDX-License-Identifier: Apache-2.0
// Offline checks of the Kubernetes manifests in packaging/kubernetes/, run by run_test.sh from a
// directory holding this package's node_modules (npm ci of package.json here):
//
//   node validate.mjs MANIFEST.yaml...
//
// 1. Schema: every document against the model of its apiVersion and kind. kubernetes-models
//    carries the Kubernetes OpenAPI definitions (v1.33) compiled to ajv validators (types, formats,
//    required fields, enums); @kubernetes-models/prometheus-operator does the same from the
//    prometheus-operator CRDs' openAPIV3Schema (PodMonitor).
// 2. Unknown fields: the OpenAPI definitions do not forbid extra properties, so a misspelt field
//    (priorityClasName) would pass 1 and be dropped by the API server. The same packages' TypeScript
//    interfaces, generated from the same definitions, do: each document becomes a typed object
//    literal and tsc's excess-property check rejects any field the schema does not have.
// 3. Controls: documents broken on purpose (a misspelt field, a string for an integer, a missing
//    required field) must be rejected by 1 or 2, or those checks prove nothing.
// 4. Policy: what issue 14 asks of the DaemonSet (resources, priority class, Pod Security labels,
//    service account without a token, hostPath state, grace period, token Secret mode, PodMonitor
//    matching the pod's port).
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

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
