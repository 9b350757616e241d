// Validates every object of every rendered overlay against the Kubernetes
// API schema (the npm package kubernetes-models, generated from the
// Kubernetes OpenAPI spec): types, required fields, enums. First it checks
// that the validator rejects a broken object, so that a validator that
// accepts everything cannot pass this test. Exit 1 on any failure.
"use strict";
const { overlayNames, loadOverlay } = require("./manifests");

const GROUPS = {
  v1: require("kubernetes-models/v1"),
  "apps/v1": require("kubernetes-models/apps/v1"),
  "batch/v1": require("kubernetes-models/batch/v1"),
};

function validateObject(o) {
  const group = GROUPS[o.apiVersion];
  const Model = group && group[o.kind];
  if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

let failed = 0;
const broken = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" },
                 spec: { replicas: "two", selector: {}, template: { spec: { containers: [{}] } } } };
try {
  validateObject(broken);
  console.log("FAIL the validator accepted a Deployment with replicas: \"two\" and a nameless container");
  failed++;
} catch (e) {
  console.log(`ok   the validator rejects a broken Deployment (${e.message.split("\n")[0]})`);
}

for (const overlay of overlayNames()) {
  const objects = loadOverlay(overlay);
  if (objects.length === 0) {
    console.log(`FAIL ${overlay}: no objects`);
    failed++;
  }
  for (const o of objects) {
    const what = `${overlay}: ${o.apiVersion} ${o.kind} ${o.metadata && o.metadata.name}`;
    try {
      validateObject(o);
      console.log(`ok   ${what}`);
    } catch (e) {
      console.log(`FAIL ${what}: ${e.message}`);
      failed++;
    }
  }
}
console.log(failed === 0 ? "all objects valid" : `${failed} failures`);
process.exit(failed === 0 ? 0 : 1);
