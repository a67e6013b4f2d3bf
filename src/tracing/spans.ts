/**
 * The service's own spans, through OpenTelemetry's API only (the SDK is loaded by src/tracing/sdk.ts
 * when the OTEL_* variables ask for it). While tracing is off every helper here runs its work
 * directly: no span, no context, no header.
 */
import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

const TRACER_NAME = 'automation-governance';

let on = false;

/** Called once by the SDK's start (src/tracing/sdk.ts) and by tests that install a provider. */
export function setTracingOn(value: boolean): void {
  on = value;
}

export function tracingOn(): boolean {
  return on;
}

function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/** The W3C trace context of an inbound request (`traceparent`, `tracestate`); an invalid one counts as absent. */
export function inboundContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(context.active(), headers, {
    get: (carrier, key) => carrier[key.toLowerCase()],
    keys: (carrier) => Object.keys(carrier),
  });
}

/**
 * Runs `work` inside a server span continuing the request's trace context; `work` gets the span
 * (undefined while tracing is off) to add the attributes it learns. The span ends when `work` settles.
 */
export async function withServerSpan<T>(
  name: string,
  headers: Record<string, string | string[] | undefined>,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!on) return work(undefined);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, inboundContext(headers));
  try {
    return await context.with(trace.setSpan(context.active(), span), () => work(span));
  } catch (err) {
    recordError(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Runs one outbound HTTP call inside a client span (method, origin only, status): `work` gets the
 * headers that carry the span's W3C context (`traceparent`, `tracestate`) and a function to tell
 * the response's status (an answer that becomes an error has one too).
 */
export async function withClientSpan<T>(
  method: string,
  url: URL,
  work: (traceHeaders: Record<string, string>, responded: (status: number) => void) => Promise<T>,
): Promise<T> {
  if (!on) return work({}, () => undefined);
  const scheme = url.protocol.replace(/:$/, '');
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  const span = tracer().startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'server.address': url.hostname,
      'server.port': port,
      'url.scheme': scheme,
    },
  });
  const traceHeaders: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), traceHeaders);
  try {
    return await work(traceHeaders, (status) => span.setAttribute('http.response.status_code', status));
  } catch (err) {
    recordError(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks the span failed with an `exception` event naming the error's type (never its message). */
export function recordError(span: Span, err: unknown): void {
  const type =
    (err as { type?: unknown })?.type ?? (err as { code?: unknown })?.code ?? (err as Error)?.name ?? 'Error';
  span.addEvent('exception', { 'exception.type': String(type) });
  span.setAttribute('error.type', String(type));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The trace id of the active span (32 lowercase hex characters), when one is being recorded. */
export function activeTraceId(): string | undefined {
  if (!on) return undefined;
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) return undefined;
  return spanContext.traceId;
}
