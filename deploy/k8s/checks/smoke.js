// The manifest smoke test: runs the rendered cpu-demo overlay as local
// processes, as a cluster would run its pods (pods.js resolves names, ports,
// ConfigMaps, fieldRefs and volumes), and checks that
//   - every container's readiness probe answers SERVING (gRPC health),
//   - `leeway status` through the coordinator's Service sees every server
//     and worker alive, with workers past clock 0,
//   - the worker Job completes (every worker exits 0),
//   - SIGTERM stops each server within its grace period, exit 0, with a
//     checkpoint on its volume.
// Every wait has a deadline; every process is killed on the way out.
//   node smoke.js leeway-coordinator=P leeway-server=P leeway-worker=P leeway=P
// MNIST comes from LEEWAY_MNIST_DIR (deploy/fetch-mnist.sh makes it).
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const { spawn, execFile } = require("child_process");
const { loadOverlay } = require("./manifests");
const { Cluster } = require("./pods");
const { healthCheck } = require("./grpc_health");

const OVERLAY = "cpu-demo";
const children = [];
process.on("exit", () => { for (const c of children) if (c.exitCode === null) c.kill("SIGKILL"); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Ports from the kernel, held until all are chosen so none repeats.
async function freePorts(n) {
  const servers = [];
  for (let i = 0; i < n; i++) {
    servers.push(await new Promise((res, rej) => {
      const s = net.createServer();
      s.once("error", rej);
      s.listen(0, "127.0.0.1", () => res(s));
    }));
  }
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

async function until(what, deadlineMs, probe) {
  const end = Date.now() + deadlineMs;
  let last = "";
  while (Date.now() < end) {
    try {
      const r = await probe();
      if (r === true) return;
      last = r || last;
    } catch (e) {
      last = e.message;
    }
    await sleep(200);
  }
  throw new Error(`${what}: not within ${deadlineMs / 1000} s (last: ${last})`);
}

function exited(proc, deadlineMs) {
  return new Promise((resolve) => {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      return resolve({ code: proc.child.exitCode, signal: proc.child.signalCode });
    }
    const t = setTimeout(() => resolve(null), deadlineMs);
    proc.child.once("exit", (code, signal) => { clearTimeout(t); resolve({ code, signal }); });
  });
}

function status(leeway, coordinator, tokenFile) {
  return new Promise((resolve, reject) => {
    execFile(leeway, ["-o", "json", "status"], {
      env: { PATH: process.env.PATH, LEEWAY_COORDINATOR: coordinator, LEEWAY_TOKEN_FILE: tokenFile },
      timeout: 10000,
    }, (err, stdout, stderr) => (err ? reject(new Error(stderr.trim() || err.message)) : resolve(JSON.parse(stdout))));
  });
}

function tail(file, lines = 25) {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch (e) {
    return `(no log: ${e.message})`;
  }
}

async function main() {
  const binaries = {};
  for (const arg of process.argv.slice(2)) {
    const [name, file] = arg.split("=");
    binaries[name] = file;
  }
  const mnist = process.env.LEEWAY_MNIST_DIR;
  if (!mnist || !fs.existsSync(path.join(mnist, "train-images-idx3-ubyte"))) {
    throw new Error("set LEEWAY_MNIST_DIR to the output of deploy/fetch-mnist.sh");
  }
  const objects = loadOverlay(OVERLAY);
  const workDir = fs.mkdtempSync(path.join(process.env.TEST_TMPDIR || os.tmpdir(), "leeway-smoke-"));
  const pool = await freePorts(64);
  const token = crypto.randomBytes(32).toString("base64");
  const cluster = new Cluster(objects, {
    allocatePort: () => { if (pool.length === 0) throw new Error("out of ports"); return pool.shift(); },
    binaries,
    imagePaths: { "/opt/leeway/mnist": mnist },
    workDir,
    secrets: { "leeway-token": { token } },
  });
  const procs = cluster.processes();
  for (const p of procs) {
    const log = path.join(workDir, `${p.pod.name}.${p.container.name}.log`);
    const fd = fs.openSync(log, "w");
    p.log = log;
    p.child = spawn(p.file, p.args, { env: { PATH: process.env.PATH, ...p.env }, stdio: ["ignore", fd, fd] });
    children.push(p.child);
    console.log(`started ${p.name}: ${path.basename(p.file)} ${Object.entries(p.env).map(([k, v]) => `${k}=${v}`).join(" ")}`);
  }
  const role = (binary) => procs.filter((p) => path.basename(p.file) === binary);
  const [coordinator] = role("leeway-coordinator");
  const servers = role("leeway-server");
  const workers = role("leeway-worker");
  try {
    // Readiness: each container's probe, on the port it names.
    const pending = new Set(procs);
    await until("every readiness probe SERVING", 60000, async () => {
      for (const p of [...pending]) {
        if (p.child.exitCode !== null && p.child.exitCode !== 0) throw new Error(`${p.name} exited ${p.child.exitCode}`);
        const probe = p.container.readinessProbe.grpc;
        const state = await healthCheck(p.pod.ports[probe.port], probe.service).catch((e) => e.message);
        if (state === "SERVING" || p.child.exitCode === 0) pending.delete(p);
      }
      return pending.size === 0 ? true : `waiting for ${[...pending].map((p) => p.name).join(", ")}`;
    });
    console.log("ok   every readiness probe answered SERVING");

    // As a user would, through the coordinator's Service (a port-forward).
    const grpcPort = objects.find((o) => o.kind === "Service" && o.metadata.name === "leeway-coordinator")
      .spec.ports.find((p) => p.name === "grpc").port;
    const address = cluster.localValue(coordinator.pod, coordinator.container, "LEEWAY_COORDINATOR",
                                       `leeway-coordinator:${grpcPort}`);
    const tokenFile = servers[0].env.LEEWAY_TOKEN_FILE;
    await until("leeway status sees every server and worker alive, training", 60000, async () => {
      const s = await status(binaries.leeway, address, tokenFile);
      const alive = (roleName) => (s.members || []).filter((m) => m.role === roleName && m.health === "HEALTH_ALIVE");
      const w = alive("ROLE_WORKER");
      const sv = alive("ROLE_SERVER");
      if (sv.length === servers.length && w.length === workers.length && s.max_clock > 0) {
        console.log(`ok   leeway status: ${sv.length} servers, ${w.length} workers alive, clocks ${s.min_clock}..${s.max_clock}`);
        return true;
      }
      return `${sv.length} servers, ${w.length} workers alive, max clock ${s.max_clock}`;
    });

    for (const w of workers) {
      const r = await exited(w, 300000);
      if (!r || r.code !== 0) throw new Error(`${w.name} ${r ? `exited ${r.code ?? r.signal}` : "did not finish in 300 s"}`);
    }
    console.log(`ok   the worker Job completed: ${workers.length} workers exited 0`);

    const grace = (servers[0].pod.workload.pod.terminationGracePeriodSeconds ?? 30) * 1000;
    for (const s of servers) s.child.kill("SIGTERM");
    for (const s of servers) {
      const r = await exited(s, grace);
      if (!r || r.code !== 0) throw new Error(`${s.name} ${r ? `exited ${r.code ?? r.signal}` : `ignored SIGTERM for ${grace / 1000} s`} after SIGTERM`);
      const dir = s.env.LEEWAY_CHECKPOINT_DIR;
      const files = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
      if (files.length === 0) throw new Error(`${s.name}: no checkpoint in ${dir}`);
    }
    console.log(`ok   SIGTERM: ${servers.length} servers stopped in time with a checkpoint on their volume`);
    coordinator.child.kill("SIGTERM");
    const c = await exited(coordinator, 30000);
    if (!c || c.code !== 0) throw new Error(`the coordinator did not stop cleanly on SIGTERM`);
    console.log("smoke test passed");
  } catch (e) {
    console.log(`FAIL ${e.message}`);
    for (const p of procs) console.log(`--- ${p.name} (${p.log})\n${tail(p.log)}`);
    process.exitCode = 1;
  }
}

main().catch((e) => { console.log(`FAIL ${e.message}`); process.exitCode = 1; }).finally(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});
