// Policy checks on the rendered overlays, beyond the API schema:
//  - every container has CPU and memory requests and limits, readiness and
//    liveness probes on ports it declares, runs as non-root without
//    privilege escalation;
//  - the LEEWAY_* variables a container sets are exactly ones its binary
//    accepts (the binary's --list_env), and the ones a role cannot do
//    without are there;
//  - every address a role is told to use names a Service and one of its
//    ports, and that Service reaches a container port; listen, health and
//    metrics ports are declared container ports, probes and scrape
//    annotations point at them;
//  - the job's sizes agree (ConfigMap workers/servers against the Job and
//    the StatefulSet), the Secret exists, servers keep checkpoints on their
//    volume and have time to write the last one.
// It first runs the checks on broken copies, so that they are known to fail.
//   node policy.js leeway-coordinator=PATH leeway-server=PATH leeway-worker=PATH
"use strict";
const { execFileSync } = require("child_process");
const { overlayNames, loadOverlay, find, workloads, envValue, envNames, containerPort } =
  require("./manifests");

const REQUIRED = {
  "leeway-coordinator": ["LEEWAY_LISTEN", "LEEWAY_TOKEN_FILE", "LEEWAY_WORKERS", "LEEWAY_SERVERS"],
  "leeway-server": ["LEEWAY_LISTEN", "LEEWAY_COORDINATOR", "LEEWAY_TOKEN_FILE", "LEEWAY_SHARD",
                    "LEEWAY_ADVERTISE_HOST", "LEEWAY_HEALTH_PORT", "LEEWAY_CHECKPOINT_DIR"],
  "leeway-worker": ["LEEWAY_COORDINATOR", "LEEWAY_TOKEN_FILE", "LEEWAY_RANK", "LEEWAY_HEALTH_PORT",
                    "LEEWAY_CONNECT", "LEEWAY_ADVERTISE_HOST"],
};

function acceptedVariables(binaries) {
  const out = {};
  for (const [name, file] of Object.entries(binaries)) {
    out[name] = new Set(execFileSync(file, ["--list_env"], { encoding: "utf8" }).split("\n").filter(Boolean));
  }
  return out;
}

function labelsMatch(selector, labels) {
  return Object.entries(selector || {}).every(([k, v]) => (labels || {})[k] === v);
}

// The containers behind Service `name`, with the workloads they belong to.
function serviceBackends(objects, name) {
  const service = find(objects, "Service", name);
  if (!service) return null;
  const backends = [];
  for (const w of workloads(objects)) {
    if (!labelsMatch(service.spec.selector, w.podMeta.labels)) continue;
    for (const c of w.pod.containers) backends.push({ workload: w, container: c });
  }
  return { service, backends };
}

function checkAddress(objects, problems, where, value) {
  const [host, port] = value.split(":");
  const parts = host.split(".");
  const serviceName = parts.length > 1 ? parts[1] : parts[0];
  const found = serviceBackends(objects, serviceName);
  if (!found) return problems.push(`${where}=${value}: no Service ${serviceName}`);
  const sp = found.service.spec.ports.find((p) => String(p.port) === port);
  if (!sp) return problems.push(`${where}=${value}: Service ${serviceName} has no port ${port}`);
  if (!found.backends.some((b) => containerPort(b.container, sp.targetPort ?? sp.port) !== undefined)) {
    problems.push(`${where}=${value}: no container behind Service ${serviceName} has port ${sp.targetPort}`);
  }
}

function checkContainer(objects, accepted, w, c, problems) {
  const where = `${w.kind} ${w.name} container ${c.name}`;
  for (const kind of ["requests", "limits"]) {
    for (const r of ["cpu", "memory"]) {
      if (!c.resources || !c.resources[kind] || c.resources[kind][r] === undefined) {
        problems.push(`${where}: no ${r} in resources.${kind}`);
      }
    }
  }
  const podSec = w.pod.securityContext || {};
  const sec = c.securityContext || {};
  const nonRoot = sec.runAsNonRoot ?? podSec.runAsNonRoot;
  const user = sec.runAsUser ?? podSec.runAsUser;
  if (nonRoot !== true || user === 0) problems.push(`${where}: does not run as non-root`);
  if (sec.allowPrivilegeEscalation !== false) problems.push(`${where}: allows privilege escalation`);
  for (const probe of ["readinessProbe", "livenessProbe"]) {
    const p = c[probe];
    if (!p) {
      problems.push(`${where}: no ${probe}`);
      continue;
    }
    const port = p.grpc ? p.grpc.port : p.httpGet ? p.httpGet.port : p.tcpSocket ? p.tcpSocket.port : undefined;
    if (port !== undefined && containerPort(c, port) === undefined) {
      problems.push(`${where}: ${probe} port ${port} is not a container port`);
    }
  }
  if (c.readinessProbe && c.readinessProbe.grpc && c.readinessProbe.grpc.service !== "ready") {
    problems.push(`${where}: the gRPC readiness probe must ask for the service "ready"`);
  }

  const binary = (c.command || [])[0];
  if (!accepted[binary]) return problems.push(`${where}: command ${binary} is not a Leeway binary`);
  const names = envNames(objects, c);
  const seen = new Set();
  for (const n of names) {
    if (seen.has(n)) problems.push(`${where}: ${n} set twice`);
    seen.add(n);
    if (n.startsWith("LEEWAY_") && !accepted[binary].has(n)) {
      problems.push(`${where}: ${binary} does not accept ${n}`);
    }
  }
  for (const n of REQUIRED[binary] || []) {
    if (!seen.has(n)) problems.push(`${where}: ${n} is not set`);
  }
  const env = {};
  for (const e of c.env || []) {
    try {
      env[e.name] = envValue(objects, e);
    } catch (err) {
      problems.push(`${where}: ${err.message}`);
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== "string") continue;
    if (name === "LEEWAY_COORDINATOR") checkAddress(objects, problems, `${where}: ${name}`, value);
    if (name === "LEEWAY_LISTEN" && containerPort(c, Number(value.split(":")[1])) === undefined) {
      problems.push(`${where}: ${name}=${value} is not a container port`);
    }
    if (/^LEEWAY_(HEALTH|METRICS)_PORT$/.test(name) && containerPort(c, Number(value)) === undefined) {
      problems.push(`${where}: ${name}=${value} is not a container port`);
    }
  }
  const scrape = (w.podMeta.annotations || {})["prometheus.io/port"];
  if (scrape !== undefined && env.LEEWAY_METRICS_PORT !== scrape) {
    problems.push(`${where}: scraped on ${scrape}, metrics on ${env.LEEWAY_METRICS_PORT}`);
  }
  if (binary !== "leeway-coordinator" && c.livenessProbe && c.livenessProbe.grpc &&
      String(c.livenessProbe.grpc.port) !== String(env.LEEWAY_HEALTH_PORT)) {
    problems.push(`${where}: probes port ${c.livenessProbe.grpc.port}, health service on ${env.LEEWAY_HEALTH_PORT}`);
  }
  if (binary === "leeway-server") checkServerPod(objects, w, c, env, where, problems);
  if (binary === "leeway-worker") checkWorkerPod(objects, w, env, where, problems);
}

function checkServerPod(objects, w, c, env, where, problems) {
  if (w.kind !== "StatefulSet") return problems.push(`${where}: servers must be a StatefulSet`);
  const s = w.object.spec;
  const svc = find(objects, "Service", s.serviceName);
  if (!svc || svc.spec.clusterIP !== "None") problems.push(`${where}: serviceName ${s.serviceName} is not a headless Service`);
  if (s.podManagementPolicy !== "Parallel") problems.push(`${where}: podManagementPolicy is not Parallel`);
  if (env.LEEWAY_ADVERTISE_HOST !== `$(POD_NAME).${s.serviceName}`) {
    problems.push(`${where}: LEEWAY_ADVERTISE_HOST must be $(POD_NAME).${s.serviceName}`);
  }
  const claims = (s.volumeClaimTemplates || []).map((t) => t.metadata.name);
  const mount = (c.volumeMounts || []).find((m) => claims.includes(m.name));
  if (!mount || !String(env.LEEWAY_CHECKPOINT_DIR || "").startsWith(mount.mountPath)) {
    problems.push(`${where}: LEEWAY_CHECKPOINT_DIR is not on a volumeClaimTemplate's mount`);
  }
  if ((w.pod.terminationGracePeriodSeconds ?? 30) < 30) {
    problems.push(`${where}: terminationGracePeriodSeconds under 30 leaves no time for the final checkpoint`);
  }
}

function checkWorkerPod(objects, w, env, where, problems) {
  if (w.kind !== "Job" || w.object.spec.completionMode !== "Indexed") {
    return problems.push(`${where}: workers must be an Indexed Job`);
  }
  const rank = env.LEEWAY_RANK;
  if (!rank || rank.fieldRef !== "metadata.annotations['batch.kubernetes.io/job-completion-index']") {
    problems.push(`${where}: LEEWAY_RANK must come from the job completion index`);
  }
  const sub = w.pod.subdomain;
  const svc = sub && find(objects, "Service", sub);
  if (!svc || svc.spec.clusterIP !== "None") problems.push(`${where}: subdomain ${sub} is not a headless Service`);
  if (env.LEEWAY_ADVERTISE_HOST !== `${w.name}-$(LEEWAY_RANK).${sub}`) {
    problems.push(`${where}: LEEWAY_ADVERTISE_HOST must be ${w.name}-$(LEEWAY_RANK).${sub}`);
  }
}

function checkOverlay(objects, accepted) {
  const problems = [];
  const all = workloads(objects);
  for (const w of all) for (const c of w.pod.containers) checkContainer(objects, accepted, w, c, problems);
  for (const w of all) {
    for (const v of w.pod.volumes || []) {
      if (v.secret && !find(objects, "Secret", v.secret.secretName)) {
        problems.push(`${w.kind} ${w.name}: no Secret ${v.secret.secretName}`);
      }
    }
  }
  for (const s of objects.filter((o) => o.kind === "Service")) {
    const found = serviceBackends(objects, s.metadata.name);
    if (found.backends.length === 0) problems.push(`Service ${s.metadata.name} selects no pods`);
    for (const p of s.spec.ports) {
      if (!found.backends.some((b) => containerPort(b.container, p.targetPort ?? p.port) !== undefined)) {
        problems.push(`Service ${s.metadata.name} port ${p.name}: no container port ${p.targetPort}`);
      }
    }
  }
  const job = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("leeway-job"));
  const workers = all.find((w) => w.kind === "Job");
  const servers = all.find((w) => w.kind === "StatefulSet");
  if (!job || !workers || !servers) {
    problems.push("the job ConfigMap, the worker Job or the server StatefulSet is missing");
  } else {
    const spec = workers.object.spec;
    if (String(spec.parallelism) !== job.data.workers || String(spec.completions) !== job.data.workers) {
      problems.push(`ConfigMap workers=${job.data.workers}, Job parallelism ${spec.parallelism} completions ${spec.completions}`);
    }
    if (String(servers.replicas) !== job.data.servers) {
      problems.push(`ConfigMap servers=${job.data.servers}, StatefulSet replicas ${servers.replicas}`);
    }
  }
  return problems;
}

// Broken copies the checks must reject.
function selfTest(objects, accepted) {
  const mutations = [
    ["a renamed variable", (o) => { containerOf(o, "leeway-server").env.find((e) => e.name === "LEEWAY_LISTEN").name = "LEEWAY_LISTEN_ADDRESS"; }],
    ["a wrong coordinator port", (o) => { containerOf(o, "leeway-worker").env.find((e) => e.name === "LEEWAY_COORDINATOR").value = "leeway-coordinator:7101"; }],
    ["a missing limit", (o) => { delete containerOf(o, "leeway-coordinator").resources.limits; }],
    ["a root container", (o) => { containerOf(o, "leeway-worker").securityContext.runAsUser = 0; }],
    ["one worker too many", (o) => { o.find((x) => x.kind === "Job").spec.parallelism += 1; }],
  ];
  let failed = 0;
  for (const [what, mutate] of mutations) {
    const copy = JSON.parse(JSON.stringify(objects));
    mutate(copy);
    const caught = checkOverlay(copy, accepted).length > 0;
    console.log(`${caught ? "ok  " : "FAIL"} the checks catch ${what}`);
    if (!caught) failed++;
  }
  return failed;
}

function containerOf(objects, binary) {
  for (const w of workloads(objects)) {
    for (const c of w.pod.containers) if ((c.command || [])[0] === binary) return c;
  }
  throw new Error(`no container runs ${binary}`);
}

function main() {
  const binaries = {};
  for (const arg of process.argv.slice(2)) {
    const [name, file] = arg.split("=");
    binaries[name] = file;
  }
  for (const b of Object.keys(REQUIRED)) {
    if (!binaries[b]) throw new Error(`usage: node policy.js ${Object.keys(REQUIRED).map((n) => `${n}=PATH`).join(" ")}`);
  }
  const accepted = acceptedVariables(binaries);
  let failed = selfTest(loadOverlay("cpu-demo"), accepted);
  for (const overlay of overlayNames()) {
    const problems = checkOverlay(loadOverlay(overlay), accepted);
    for (const p of problems) console.log(`FAIL ${overlay}: ${p}`);
    if (problems.length === 0) console.log(`ok   ${overlay}: every policy holds`);
    failed += problems.length;
  }
  console.log(failed === 0 ? "policy holds" : `${failed} failures`);
  process.exit(failed === 0 ? 0 : 1);
}

main();
