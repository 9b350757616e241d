// One grpc.health.v1.Health/Check call over Node's HTTP/2, the call a
// Kubernetes gRPC probe makes. Resolves to "SERVING", "NOT_SERVING",
// "SERVICE_UNKNOWN" or "UNKNOWN"; rejects on a transport error, a non-OK
// gRPC status or the deadline.
"use strict";
const http2 = require("http2");

const STATUS = { 0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN" };

function healthCheck(port, service, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    const timer = setTimeout(() => { client.destroy(); reject(new Error("deadline")); }, timeoutMs);
    const done = (err, value) => { clearTimeout(timer); client.close(); err ? reject(err) : resolve(value); };
    client.on("error", (e) => done(e));
    const name = Buffer.from(service || "");
    const message = name.length ? Buffer.concat([Buffer.from([0x0a, name.length]), name]) : Buffer.alloc(0);
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
    const req = client.request({ ":method": "POST", ":path": "/grpc.health.v1.Health/Check",
                                 "content-type": "application/grpc", te: "trailers" });
    const chunks = [];
    let grpcStatus;
    req.on("response", (h) => { if (h["grpc-status"] !== undefined) grpcStatus = h["grpc-status"]; });
    req.on("trailers", (t) => { grpcStatus = t["grpc-status"]; });
    req.on("data", (c) => chunks.push(c));
    req.on("error", (e) => done(e));
    req.on("end", () => {
      if (grpcStatus !== "0") return done(new Error(`grpc-status ${grpcStatus}`));
      const body = Buffer.concat(chunks).subarray(5);
      done(null, body.length >= 2 && body[0] === 0x08 ? STATUS[body[1]] || "UNKNOWN" : "UNKNOWN");
    });
    req.end(frame);
  });
}

module.exports = { healthCheck };
