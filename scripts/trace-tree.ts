/**
 * Prints one trace's span tree as Jaeger's query API returns it:
 *   npm run trace-tree -- <traceId> [--jaeger http://127.0.0.1:16686]
 * (the default is JAEGER_QUERY_URL, else http://127.0.0.1:16686; `npm run stack:prod` prints its
 * Jaeger's address). Each line: the span's operation, its service, and its step id, outcome, status
 * and server where it has them; children indented under their parent.
 */

export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; traceID: string; spanID: string }>;
  tags: Array<{ key: string; type: string; value: unknown }>;
  logs: Array<{ fields: Array<{ key: string; value: unknown }> }>;
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: Array<{ key: string; value: unknown }> }>;
}

/** The trace from Jaeger's query API (`/api/traces/{traceId}`), or undefined while it has none. */
export async function fetchTrace(queryUrl: string, traceId: string): Promise<JaegerTrace | undefined> {
  const res = await fetch(`${queryUrl.replace(/\/+$/, '')}/api/traces/${traceId}`);
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`Jaeger query: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { data?: JaegerTrace[] };
  return body.data?.[0];
}

/** A span's tag by key. */
export function tagOf(span: JaegerSpan, key: string): unknown {
  return span.tags.find((tag) => tag.key === key)?.value;
}

/** The span's parent in its trace (CHILD_OF), as an id. */
export function parentOf(span: JaegerSpan): string | undefined {
  return span.references.find((ref) => ref.refType === 'CHILD_OF')?.spanID;
}

/** The trace as an indented tree of operation names (and step ids), roots first by start order. */
export function spanTree(trace: JaegerTrace): string {
  const ids = new Set(trace.spans.map((s) => s.spanID));
  const children = new Map<string | undefined, JaegerSpan[]>();
  for (const span of trace.spans) {
    const parent = parentOf(span);
    const key = parent !== undefined && ids.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number): void => {
    const start = (s: JaegerSpan) => Number((s as unknown as { startTime: number }).startTime ?? 0);
    for (const span of (children.get(parent) ?? []).sort((a, b) => start(a) - start(b))) {
      const service = trace.processes[span.processID]?.serviceName ?? '?';
      const detail = ['step.id', 'webhook.outcome', 'http.response.status_code', 'server.address']
        .map((key) => (tagOf(span, key) !== undefined ? `${key}=${String(tagOf(span, key))}` : ''))
        .filter(Boolean)
        .join(' ');
      lines.push(`${'  '.repeat(depth)}${span.operationName} [${service}]${detail ? ` ${detail}` : ''}`);
      walk(span.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf('--jaeger');
  const queryUrl = at >= 0 ? args[at + 1] : (process.env.JAEGER_QUERY_URL ?? 'http://127.0.0.1:16686');
  const traceId = args.find((arg, i) => !arg.startsWith('--') && (at < 0 || i !== at + 1));
  if (!traceId || !/^[0-9a-f]{32}$/.test(traceId) || !queryUrl) {
    console.error('usage: npm run trace-tree -- <traceId: 32 hex characters> [--jaeger <query API URL>]');
    process.exit(2);
  }
  const trace = await fetchTrace(queryUrl, traceId);
  if (!trace) {
    console.error(`no trace ${traceId} at ${queryUrl}`);
    process.exit(1);
  }
  console.log(`trace ${traceId}: ${trace.spans.length} spans`);
  console.log(spanTree(trace));
}

if (require.main === module)
  main().catch((err: unknown) => {
    console.error(
      `trace-tree: ${(err as Error).message}${(err as Error).cause ? ` (${String((err as Error).cause)})` : ''}`,
    );
    process.exit(1);
  });
