'use strict';
/**
 * The Node flags every process of the service runs with: `npm start`, `npm run api|worker`, the
 * Docker image's ENTRYPOINT, `npm run stack:prod`, and `npm run bench`/`bench:soak`, which measure
 * the service as it runs. package.json and the Dockerfile spell them out (they cannot read this
 * file); test/unit/deployment.test.ts holds them to this list.
 *
 * `--max-semi-space-size=8`: on Node 24 (V8 13, no pointer compression) a young generation grows to
 * 64 MB per semi-space, and every isolate of the service (the main one and the workflow thread's)
 * kept that much committed under load. `npm run bench:soak` peaked at 883–943 MB RSS on Node 24
 * against 413–417 MB on Node 20; with 8 MB, 549 and 629 MB in two runs (docs/performance.md#constants).
 */
const SERVICE_NODE_FLAGS = Object.freeze(['--max-semi-space-size=8']);

module.exports = { SERVICE_NODE_FLAGS };
