/**
 * A real Jaeger for tests: the binary `scripts/prod-binaries.js` builds (.temporal/bin/jaeger, the
 * one `npm run stack:prod` runs) with deploy/jaeger/config.yaml, on reserved loopback ports, behind
 * scripts/child-guard.js so that it never outlives the test process. Its query API answers what it
 * stored (`/api/traces/{traceId}`).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { reservedPort } from './ports';
import { REPO_ROOT, waitForHttp } from './processes';
import { fetchTrace, type JaegerTrace } from '../../scripts/trace-tree';

export { parentOf, spanTree, tagOf, type JaegerSpan, type JaegerTrace } from '../../scripts/trace-tree';

export const JAEGER_BINARY = path.join(REPO_ROOT, '.temporal/bin/jaeger');
const CHILD_GUARD = path.join(REPO_ROOT, 'scripts/child-guard.js');

export interface Jaeger {
  /** OTLP over HTTP: `http://127.0.0.1:<port>` (the SDK appends /v1/traces). */
  otlpEndpoint: string;
  /** The query API: `http://127.0.0.1:<port>`. */
  queryUrl: string;
  /** The spans of one trace as the query API returns them (none yet: an empty list). */
  trace(traceId: string): Promise<JaegerTrace | undefined>;
  close(): Promise<void>;
}

export async function startJaeger(): Promise<Jaeger> {
  if (!fs.existsSync(JAEGER_BINARY))
    throw new Error(`${JAEGER_BINARY} is missing: build it with \`node scripts/prod-binaries.js\` (CI does)`);
  const ports = {
    JAEGER_OTLP_HTTP_PORT: await reservedPort(),
    JAEGER_OTLP_GRPC_PORT: await reservedPort(),
    JAEGER_QUERY_PORT: await reservedPort(),
    JAEGER_QUERY_GRPC_PORT: await reservedPort(),
  };
  const child = spawn(
    process.execPath,
    [CHILD_GUARD, String(process.pid), JAEGER_BINARY, '--config', path.join(REPO_ROOT, 'deploy/jaeger/config.yaml')],
    {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      },
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const output: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const queryUrl = `http://127.0.0.1:${ports.JAEGER_QUERY_PORT}`;
  try {
    await waitForHttp(`${queryUrl}/api/services`, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`Jaeger did not start: ${(err as Error).message}\n${output.join('').slice(-2000)}`);
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${ports.JAEGER_OTLP_HTTP_PORT}`,
    queryUrl,
    trace: (traceId) => fetchTrace(queryUrl, traceId),
    async close() {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      await exited;
    },
  };
}
