/**
 * Payloads as Temporal keeps them: decoded through the client's codecs (they are encrypted at rest),
 * and read as JSON values; Temporal's timestamps as RFC 3339 strings.
 */
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

/**
 * The raw history holds payloads as the codec left them (encrypted): every payload in the events
 * is decoded in place through the client's codecs before the events are read.
 */
export async function decodePayloadsInPlace(root: unknown, codecs: readonly PayloadCodec[]): Promise<void> {
  if (codecs.length === 0) return;
  const found: Payload[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object' || node instanceof Uint8Array || ArrayBuffer.isView(node)) continue;
    const metadata = (node as { metadata?: unknown }).metadata;
    if (
      metadata !== null &&
      typeof metadata === 'object' &&
      (metadata as Record<string, unknown>).encoding instanceof Uint8Array
    ) {
      found.push(node as Payload);
      continue;
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  for (const payload of found) {
    let decoded: Payload[] = [payload];
    for (const codec of [...codecs].reverse()) decoded = await codec.decode(decoded);
    payload.metadata = decoded[0]!.metadata;
    payload.data = decoded[0]!.data;
  }
}

export function decode(payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  } catch {
    return undefined;
  }
}

export function timestamp(
  ts: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined,
): string | undefined {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : ts.seconds.toNumber();
  return new Date(seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

export function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
