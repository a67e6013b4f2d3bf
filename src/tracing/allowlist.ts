/**
 * The one allowlist of what a span may carry, for the service's own spans and for any library's
 * automatic instrumentation alike: every span passes through `allowedSpan` on its way to the
 * exporter (src/tracing/sdk.ts wraps the exporter with it), so nothing reaches a trace backend that
 * is not listed here. Never a payload value, a header value (the event id and the W3C trace
 * context aside), a secret, a token, a signature, a URL's path or query.
 */

/** Attribute keys a span may carry (OpenTelemetry's semantic conventions, plus the service's own). */
export const ALLOWED_ATTRIBUTES: ReadonlySet<string> = new Set([
  'http.request.method',
  'http.response.status_code',
  'http.route',
  'server.address',
  'server.port',
  'url.scheme',
  'error.type',
  'automation.id',
  'automation.version',
  'execution.id',
  'webhook.event_id',
  'webhook.outcome',
  'step.id',
  'step.kind',
  'step.status',
  'actor.kind',
]);

/** Attribute keys an event may carry: an exception's type, never its message or stack. */
export const ALLOWED_EVENT_ATTRIBUTES: ReadonlySet<string> = new Set(['exception.type']);

/** Longest string value kept (an id, a route template, an origin's host). */
const MAX_VALUE_LENGTH = 256;

type AttributeValue = string | number | boolean | Array<null | undefined | string | number | boolean>;
export type Attributes = Record<string, AttributeValue | undefined>;

/** The attributes of `attributes` the allowlist keeps: listed keys with scalar values of bounded length. */
export function allowedAttributes(
  attributes: Attributes | undefined,
  allowed: ReadonlySet<string> = ALLOWED_ATTRIBUTES,
): Attributes {
  const kept: Attributes = {};
  if (attributes === undefined) return kept;
  for (const [key, value] of Object.entries(attributes)) {
    if (!allowed.has(key)) continue;
    if (typeof value === 'number' || typeof value === 'boolean') kept[key] = value;
    else if (typeof value === 'string' && value.length <= MAX_VALUE_LENGTH && !/[?#]/.test(value)) kept[key] = value;
  }
  return kept;
}

/**
 * A span's name as exported: names without a slash pass (`RunWorkflow:automation`, `step
 * notify-hr`); a name with a path passes only as `METHOD <http.route>` (the route's template),
 * anything else becomes its method alone, or `span`.
 */
export function allowedSpanName(name: string, attributes: Attributes): string {
  const method = typeof attributes['http.request.method'] === 'string' ? attributes['http.request.method'] : undefined;
  const route = typeof attributes['http.route'] === 'string' ? attributes['http.route'] : undefined;
  if (!/[/?#]/.test(name) && name.length <= MAX_VALUE_LENGTH) return name;
  if (method !== undefined && route !== undefined && name === `${method} ${route}`) return name;
  return method ?? 'span';
}

interface EventLike {
  name: string;
  attributes?: Attributes;
  time: unknown;
  droppedAttributesCount?: number;
}

interface LinkLike {
  attributes?: Attributes;
}

/** The fields of a finished span the allowlist rewrites (the rest are ids and times). */
export interface SpanLike {
  name: string;
  attributes: Attributes;
  events: EventLike[];
  links: LinkLike[];
}

/**
 * The span as the allowlist lets it go: a view over `span` (its prototype, so its ids, times,
 * status and resource are the span's own) with its name, attributes, events and links rewritten.
 * A status message is dropped too (it is an error's text).
 */
export function allowedSpan<T extends SpanLike>(span: T): T {
  const attributes = allowedAttributes(span.attributes);
  const view = Object.create(span) as T & { status?: { code: number; message?: string } };
  const status = (span as { status?: { code: number; message?: string } }).status;
  Object.defineProperties(view, {
    name: { value: allowedSpanName(span.name, attributes), enumerable: true },
    attributes: { value: attributes, enumerable: true },
    events: {
      value: span.events
        .filter((event) => event.name === 'exception' || !/[/?#]/.test(event.name))
        .map((event) => ({ ...event, attributes: allowedAttributes(event.attributes, ALLOWED_EVENT_ATTRIBUTES) })),
      enumerable: true,
    },
    links: {
      value: span.links.map((link) => ({ ...link, attributes: allowedAttributes(link.attributes) })),
      enumerable: true,
    },
    ...(status ? { status: { value: { code: status.code }, enumerable: true } } : {}),
  });
  return view;
}
