/**
 * Tracing off costs nothing: with no OTEL_* variable set, a process that builds the app and the
 * worker (src/compose.ts, src/temporal/worker.ts, the activities) loads neither OpenTelemetry's
 * SDK, its exporters nor Temporal's interceptors package (only the API, whose calls are no-ops).
 * Measured in a fresh Node process, as `npm start` would load them.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

it('with tracing off no OpenTelemetry SDK module is loaded', () => {
  const script = `
    require('./src/compose');
    require('./src/temporal/worker');
    require('./src/temporal/connection');
    require('./activities');
    const loaded = Object.keys(require.cache).filter((f) => f.includes('node_modules/@opentelemetry/') || f.includes('interceptors-opentelemetry'));
    process.stdout.write(JSON.stringify([...new Set(loaded.map((f) => f.split('node_modules/')[1].split('/').slice(0, 2).join('/')))]));
  `;
  const out = execFileSync(process.execPath, ['-r', './scripts/swc-register.js', '-e', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '' },
    encoding: 'utf8',
  });
  expect(JSON.parse(out)).toEqual(['@opentelemetry/api']);
});
