// Turns a rendered overlay into the pods Kubernetes would run, as local
// processes would need them: each pod's name, host name, labels and
// annotations, each container's command and environment with ConfigMap
// references, fieldRefs and $(VAR) expansions resolved, and then every
// address the environment names rewritten to 127.0.0.1 and a unique local
// port (Service names and pod DNS names resolved the way cluster DNS would),
// mount paths to local directories. Anything it cannot resolve is an error
// naming the variable: that is a wiring mistake in the manifests.
"use strict";
const fs = require("fs");
const path = require("path");
const { find, workloads, envValue, containerPort } = require("./manifests");

function podsOf(objects) {
  const pods = [];
  for (const w of workloads(objects)) {
    for (let i = 0; i < w.replicas; i++) {
      const labels = { ...(w.podMeta.labels || {}) };
      const annotations = { ...(w.podMeta.annotations || {}) };
      let name;
      let hostname;
      let subdomain;
      if (w.kind === "StatefulSet") {
        name = hostname = `${w.name}-${i}`;
        subdomain = w.object.spec.serviceName;
        labels["apps.kubernetes.io/pod-index"] = String(i);
        labels["statefulset.kubernetes.io/pod-name"] = name;
      } else if (w.kind === "Job") {
        hostname = `${w.name}-${i}`;
        name = `${hostname}-smoke`;
        subdomain = w.pod.subdomain;
        annotations["batch.kubernetes.io/job-completion-index"] = String(i);
      } else {
        name = hostname = `${w.name}-smoke${i}`;
      }
      pods.push({ workload: w, index: i, name, hostname, subdomain, labels, annotations, ports: {} });
    }
  }
  return pods;
}

function fieldRef(pod, field) {
  const m = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(field);
  if (m) {
    const v = pod[m[1]][m[2]];
    if (v === undefined) throw new Error(`fieldRef ${field}: the pod has no such ${m[1].slice(0, -1)}`);
    return v;
  }
  const simple = { "metadata.name": pod.name, "metadata.namespace": "default", "status.podIP": "127.0.0.1",
                   "spec.nodeName": "smoke-node" };
  if (simple[field] === undefined) throw new Error(`fieldRef ${field} is not one the smoke test knows`);
  return simple[field];
}

// $(NAME) of a variable defined earlier; $$ escapes, unknown names stay.
function expand(value, env) {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name) =>
    all === "$$" ? "$" : env[name] !== undefined ? env[name] : all);
}

class Cluster {
  // `allocatePort()` returns a free local port; `binaries` maps command
  // names to files; `imagePaths` maps paths baked into the image to local ones.
  constructor(objects, { allocatePort, binaries, imagePaths, workDir, secrets }) {
    this.objects = objects;
    this.pods = podsOf(objects);
    this.binaries = binaries;
    this.imagePaths = imagePaths;
    for (const pod of this.pods) {
      for (const c of pod.workload.pod.containers) {
        for (const p of c.ports || []) pod.ports[p.containerPort] = allocatePort();
      }
      pod.volumes = {};
      for (const v of pod.workload.pod.volumes || []) {
        const dir = path.join(workDir, pod.name, v.name);
        fs.mkdirSync(dir, { recursive: true });
        if (v.secret) {
          const data = secrets[v.secret.secretName];
          if (!data) throw new Error(`${pod.name}: no Secret ${v.secret.secretName} to mount`);
          for (const [k, val] of Object.entries(data)) fs.writeFileSync(path.join(dir, k), val, { mode: 0o600 });
        }
        pod.volumes[v.name] = dir;
      }
      for (const t of pod.workload.object.spec.volumeClaimTemplates || []) {
        const dir = path.join(workDir, pod.name, `pvc-${t.metadata.name}`);
        fs.mkdirSync(dir, { recursive: true });
        pod.volumes[t.metadata.name] = dir;
      }
    }
  }

  // The pod that `host` names in cluster DNS and the Service it went
  // through: "svc" (any ready backend) or "hostname.subdomain".
  resolve(host) {
    const parts = host.split(".");
    if (parts.length === 2) {
      const pod = this.pods.find((p) => p.hostname === parts[0] && p.subdomain === parts[1]);
      const service = find(this.objects, "Service", parts[1]);
      if (pod && service) return { pod, service };
    } else if (parts.length === 1) {
      const service = find(this.objects, "Service", host);
      if (service) {
        const sel = service.spec.selector || {};
        const pod = this.pods.find((p) => Object.entries(sel).every(([k, v]) => p.labels[k] === v));
        if (pod) return { pod, service };
      }
    }
    return null;
  }

  servicePort(service, pod, port) {
    const sp = service.spec.ports.find((p) => String(p.port) === String(port));
    if (!sp) return undefined;
    for (const c of pod.workload.pod.containers) {
      const number = containerPort(c, sp.targetPort ?? sp.port);
      if (number !== undefined) return pod.ports[number];
    }
    return undefined;
  }

  // A variable's value as the local process needs it.
  localValue(pod, container, name, value) {
    for (const m of container.volumeMounts || []) {
      if (value === m.mountPath || value.startsWith(`${m.mountPath}/`)) {
        return pod.volumes[m.name] + value.slice(m.mountPath.length);
      }
    }
    for (const [from, to] of Object.entries(this.imagePaths)) {
      if (value === from || value.startsWith(`${from}/`)) return to + value.slice(from.length);
    }
    const hp = /^([A-Za-z0-9.-]+):(\d+)$/.exec(value);
    if (hp) {
      if (hp[1] === "0.0.0.0") {
        const local = pod.ports[Number(hp[2])];
        if (local === undefined) throw new Error(`${name}=${value}: port ${hp[2]} is not a container port`);
        return `127.0.0.1:${local}`;
      }
      const target = this.resolve(hp[1]);
      if (!target) throw new Error(`${name}=${value}: ${hp[1]} resolves to no pod`);
      const local = this.servicePort(target.service, target.pod, hp[2]);
      if (local === undefined) throw new Error(`${name}=${value}: Service ${target.service.metadata.name} has no port ${hp[2]} reaching a container`);
      return `127.0.0.1:${local}`;
    }
    if (/_PORT$/.test(name) && /^\d+$/.test(value)) {
      const local = pod.ports[Number(value)];
      if (local === undefined) throw new Error(`${name}=${value} is not a container port`);
      return String(local);
    }
    if (/_HOST$/.test(name)) {
      const target = this.resolve(value);
      if (!target || target.pod !== pod) throw new Error(`${name}=${value} does not resolve to the pod itself`);
      return "127.0.0.1";
    }
    return value;
  }

  // {file, args, env} for each container of each pod.
  processes() {
    const out = [];
    for (const pod of this.pods) {
      for (const c of pod.workload.pod.containers) {
        const raw = {};
        const env = {};
        for (const e of c.env || []) {
          let v = envValue(this.objects, e);
          if (typeof v !== "string") v = fieldRef(pod, v.fieldRef);
          raw[e.name] = expand(v, raw);
          env[e.name] = this.localValue(pod, c, e.name, raw[e.name]);
        }
        const [command, ...args] = (c.command || []).concat(c.args || []).map((a) => expand(a, raw));
        const file = this.binaries[command];
        if (!file) throw new Error(`${pod.name}: no binary for command ${command}`);
        out.push({ pod, container: c, name: `${pod.name}/${c.name}`, file, args, env });
      }
    }
    return out;
  }
}

module.exports = { Cluster, expand };
