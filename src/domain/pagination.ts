/**
 * The list/search convention (docs/api.md#pagination): `page_size` clamped to 10..100 (default 25) and opaque,
 * signed page tokens bound to one listing and its filter. Listings are keyset-paginated: a token
 * carries the last key returned, so a walk never repeats or skips a row that exists throughout it.
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { InvalidArgumentError } from '../errors';

export const PAGE_SIZE_DEFAULT = 25;
export const PAGE_SIZE_MIN = 10;
export const PAGE_SIZE_MAX = 100;

export interface PageRequest {
  pageSize: number;
  pageToken: string;
}

/** Clamps any page size to 10..100; absent or unparseable means the default. Never an error. */
export function clampPageSize(raw: unknown): number {
  const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value)) return PAGE_SIZE_DEFAULT;
  return Math.min(PAGE_SIZE_MAX, Math.max(PAGE_SIZE_MIN, Math.trunc(value)));
}

/** Reads `page_size`/`pageSize` and `page_token`/`pageToken` from a query string or a JSON body. */
export function readPageRequest(source: Record<string, unknown>): PageRequest {
  const size = source.page_size ?? source.pageSize;
  const token = source.page_token ?? source.pageToken;
  return {
    pageSize: clampPageSize(Array.isArray(size) ? size[0] : size),
    pageToken: typeof token === 'string' ? token : Array.isArray(token) && typeof token[0] === 'string' ? token[0] : '',
  };
}

export interface Page<T> {
  items: T[];
  nextPageToken: string;
}

/** Signs and checks page tokens. `listing` names the listing; `filter` is everything that shapes it. */
export class PageTokens {
  /** A KeyObject, made once: on Node 24 a Buffer key costs `createHmac` several µs of key-type checks per call. */
  private readonly key: KeyObject;

  constructor(key: Buffer) {
    this.key = createSecretKey(key);
  }

  encode(listing: string, filter: unknown, cursor: unknown): string {
    const payload = Buffer.from(JSON.stringify({ c: cursor, f: this.fingerprint(listing, filter) })).toString(
      'base64url',
    );
    return `${payload}.${this.sign(payload)}`;
  }

  /** The cursor of a token, or undefined for an empty token; 400 for anything altered or foreign. */
  decode<C>(listing: string, filter: unknown, token: string): C | undefined {
    if (token === '') return undefined;
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined || !this.verify(payload, signature)) {
      throw invalidToken();
    }
    let parsed: { c?: C; f?: string };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { c?: C; f?: string };
    } catch {
      throw invalidToken();
    }
    if (parsed.f !== this.fingerprint(listing, filter) || parsed.c === undefined) {
      throw invalidToken('page_token belongs to another listing or filter');
    }
    return parsed.c;
  }

  private fingerprint(listing: string, filter: unknown): string {
    return createHmac('sha256', this.key)
      .update(`${listing}\n${stableJson(filter)}`)
      .digest('base64url')
      .slice(0, 16);
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  private verify(payload: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

function invalidToken(message = 'page_token is invalid'): InvalidArgumentError {
  return new InvalidArgumentError([{ field: 'page_token', description: message }], message);
}

/** JSON with object keys sorted, so equal filters give equal fingerprints. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Keyset page helper: give it `pageSize + 1` rows fetched after the cursor, ordered by key; it
 * returns the page and a token for the next one ("" when this page is the last).
 */
export function keysetPage<R, T>(
  rows: R[],
  pageSize: number,
  keyOf: (row: R) => unknown,
  toItem: (row: R) => T,
  tokenFor: (cursor: unknown) => string,
): Page<T> {
  const hasMore = rows.length > pageSize;
  const pageRows = hasMore ? rows.slice(0, pageSize) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(toItem),
    nextPageToken: hasMore && last !== undefined ? tokenFor(keyOf(last)) : '',
  };
}
