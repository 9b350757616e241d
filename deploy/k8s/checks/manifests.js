// Reads a rendered overlay (deploy/k8s/rendered/<name>.yaml) and answers the
// questions the checks ask of it: the objects, the pod templates and their
// containers, each container's environment with ConfigMap references
// resolved. Pure functions over parsed objects; nothing here touches a cluster.
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");

const RENDERED = path.join(__dirname, "..", "rendered");

function overlayNames() {
  return fs.readdirSync(RENDERED).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -5)).sort();
}

function loadOverlay(name) {
  const text = fs.readFileSync(path.join(RENDERED, `${name}.yaml`), "utf8");
  const docs = YAML.parseAllDocuments(text);
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${name}.yaml: ${d.errors[0].message}`);
  }
  return docs.map((d) => d.toJS()).filter((o) => o != null);
}

function find(objects, kind, name) {
  return objects.find((o) => o.kind === kind && o.metadata && o.metadata.name === name);
}

// Deployments, StatefulSets and Jobs, each with its pod template and the
// number of pods it runs.
function workloads(objects) {
  const out = [];
  for (const o of objects) {
    if (!["Deployment", "StatefulSet", "Job"].includes(o.kind)) continue;
    const spec = o.spec || {};
    const replicas = o.kind === "Job" ? spec.parallelism ?? 1 : spec.replicas ?? 1;
    out.push({ object: o, kind: o.kind, name: o.metadata.name, pod: spec.template.spec,
               podMeta: spec.template.metadata || {}, replicas });
  }
  return out;
}

// The value of one env entry with a ConfigMap or Secret reference resolved;
// fieldRefs come back as {fieldRef: path} for the caller to fill in.
function envValue(objects, entry) {
  if (entry.value !== undefined) return String(entry.value);
  const from = entry.valueFrom || {};
  if (from.configMapKeyRef) {
    const cm = find(objects, "ConfigMap", from.configMapKeyRef.name);
    if (!cm) throw new Error(`${entry.name}: no ConfigMap ${from.configMapKeyRef.name}`);
    const v = (cm.data || {})[from.configMapKeyRef.key];
    if (v === undefined) {
      throw new Error(`${entry.name}: ConfigMap ${from.configMapKeyRef.name} has no key ${from.configMapKeyRef.key}`);
    }
    return String(v);
  }
  if (from.fieldRef) return { fieldRef: from.fieldRef.fieldPath };
  throw new Error(`${entry.name}: a valueFrom the checks do not know`);
}

// The names of the variables a container sets (env and envFrom ConfigMaps).
function envNames(objects, container) {
  const names = (container.env || []).map((e) => e.name);
  for (const from of container.envFrom || []) {
    if (!from.configMapRef) continue;
    const cm = find(objects, "ConfigMap", from.configMapRef.name);
    names.push(...Object.keys((cm && cm.data) || {}).map((k) => (from.prefix || "") + k));
  }
  return names;
}

// The number of a container's port named or numbered `port` (a Service's
// targetPort, a probe's port), or undefined.
function containerPort(container, port) {
  for (const p of container.ports || []) {
    if (p.name === port || String(p.containerPort) === String(port)) return p.containerPort;
  }
  return undefined;
}

module.exports = { overlayNames, loadOverlay, find, workloads, envValue, envNames, containerPort };
