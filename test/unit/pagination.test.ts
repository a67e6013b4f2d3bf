/**
 * The list/search convention without a server (src/domain/pagination.ts, docs/api.md#pagination):
 * page sizes clamped, never refused; page tokens signed and bound to one listing and its filter, so
 * that an altered, truncated or replayed token is a 400 naming `page_token`; keyset pages.
 * test/integration/pagination.test.ts walks the same rules over HTTP.
 */
import { randomBytes } from 'node:crypto';
import {
  clampPageSize,
  keysetPage,
  PageTokens,
  PAGE_SIZE_DEFAULT,
  PAGE_SIZE_MAX,
  PAGE_SIZE_MIN,
  readPageRequest,
  stableJson,
} from '../../src/domain/pagination';
import { InvalidArgumentError } from '../../src/errors';

/** The 400 a decode throws, as field and description; the decoded cursor when it does not throw. */
function decodeOutcome(tokens: PageTokens, listing: string, filter: unknown, token: string): unknown {
  try {
    return { cursor: tokens.decode(listing, filter, token) };
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    return { status400: err.violations, message: err.message };
  }
}

const INVALID = {
  status400: [{ field: 'page_token', description: 'page_token is invalid' }],
  message: 'page_token is invalid',
};
const FOREIGN = {
  status400: [{ field: 'page_token', description: 'page_token belongs to another listing or filter' }],
  message: 'page_token belongs to another listing or filter',
};

describe('page size', () => {
  it.each([
    [undefined, PAGE_SIZE_DEFAULT],
    [null, PAGE_SIZE_DEFAULT],
    ['', PAGE_SIZE_DEFAULT],
    ['   ', PAGE_SIZE_DEFAULT],
    ['ten', PAGE_SIZE_DEFAULT],
    ['NaN', PAGE_SIZE_DEFAULT],
    [Number.NaN, PAGE_SIZE_DEFAULT],
    [Number.POSITIVE_INFINITY, PAGE_SIZE_DEFAULT],
    [Number.NEGATIVE_INFINITY, PAGE_SIZE_DEFAULT],
    ['Infinity', PAGE_SIZE_DEFAULT],
    [true, PAGE_SIZE_DEFAULT],
    [{ size: 50 }, PAGE_SIZE_DEFAULT],
    [-5, PAGE_SIZE_MIN],
    [0, PAGE_SIZE_MIN],
    [9, PAGE_SIZE_MIN],
    [9.99, PAGE_SIZE_MIN],
    [10, 10],
    [11, 11],
    [42.7, 42],
    ['42.7', 42],
    [' 30 ', 30],
    ['1e1', 10],
    [99, 99],
    [100, 100],
    [100.5, 100],
    [101, PAGE_SIZE_MAX],
    ['5000', PAGE_SIZE_MAX],
  ])('%j is %d', (raw, expected) => {
    expect(clampPageSize(raw)).toBe(expected);
  });

  it('bounds are 10..100 with 25 by default', () => {
    expect([PAGE_SIZE_MIN, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX]).toEqual([10, 25, 100]);
  });
});

describe('reading the page fields of a query or body', () => {
  it('takes both spellings; snake_case wins when both are given', () => {
    expect(readPageRequest({ page_size: '40', page_token: 'abc' })).toEqual({ pageSize: 40, pageToken: 'abc' });
    expect(readPageRequest({ pageSize: 40, pageToken: 'abc' })).toEqual({ pageSize: 40, pageToken: 'abc' });
    expect(readPageRequest({ page_size: 60, pageSize: 40, page_token: 'first', pageToken: 'second' })).toEqual({
      pageSize: 60,
      pageToken: 'first',
    });
  });

  it('absent fields mean the default size and the first page', () => {
    expect(readPageRequest({})).toEqual({ pageSize: PAGE_SIZE_DEFAULT, pageToken: '' });
  });

  it('a repeated query parameter counts by its first value', () => {
    expect(readPageRequest({ page_size: ['20', '90'], page_token: ['one', 'two'] })).toEqual({
      pageSize: 20,
      pageToken: 'one',
    });
  });

  it('a token that is not a string is no token (the first page), never an error', () => {
    expect(readPageRequest({ page_token: 7 })).toEqual({ pageSize: PAGE_SIZE_DEFAULT, pageToken: '' });
    expect(readPageRequest({ pageToken: { a: 1 } })).toEqual({ pageSize: PAGE_SIZE_DEFAULT, pageToken: '' });
    expect(readPageRequest({ page_token: [7, 'two'] })).toEqual({ pageSize: PAGE_SIZE_DEFAULT, pageToken: '' });
    expect(readPageRequest({ page_token: [] })).toEqual({ pageSize: PAGE_SIZE_DEFAULT, pageToken: '' });
  });
});

describe('page tokens', () => {
  const tokens = new PageTokens(randomBytes(32));
  const filter = { query: 'admin', appIds: ['a', 'b'] };

  it('give back the cursor they were made with, for the same listing and filter', () => {
    for (const cursor of ['ent-42', 17, { id: 'x', at: '2026-11-24T00:00:00Z' }, ['k', 2], 0, false, null]) {
      const token = tokens.encode('appEntitlements', filter, cursor);
      expect(decodeOutcome(tokens, 'appEntitlements', filter, token)).toEqual({ cursor });
    }
  });

  it('an empty token is the first page', () => {
    expect(decodeOutcome(tokens, 'appEntitlements', filter, '')).toEqual({ cursor: undefined });
  });

  it('are bound to the listing and to every part of the filter', () => {
    const token = tokens.encode('appEntitlements', filter, 'ent-42');
    expect(decodeOutcome(tokens, 'users', filter, token)).toEqual(FOREIGN);
    expect(decodeOutcome(tokens, 'appEntitlements', { ...filter, query: 'admins' }, token)).toEqual(FOREIGN);
    expect(decodeOutcome(tokens, 'appEntitlements', { ...filter, appIds: ['a'] }, token)).toEqual(FOREIGN);
    expect(decodeOutcome(tokens, 'appEntitlements', { query: 'admin' }, token)).toEqual(FOREIGN);
    expect(decodeOutcome(tokens, 'appEntitlements', undefined, token)).toEqual(FOREIGN);
  });

  it('do not depend on the order of the filter keys, nor on keys left undefined', () => {
    const token = tokens.encode('search', { appIds: ['a'], query: 'q', alias: undefined }, 'c');
    expect(decodeOutcome(tokens, 'search', { query: 'q', appIds: ['a'] }, token)).toEqual({ cursor: 'c' });
  });

  it('refuse a token made with another key (another deployment, or a forged one)', () => {
    const foreign = new PageTokens(randomBytes(32)).encode('appEntitlements', filter, 'ent-42');
    expect(decodeOutcome(tokens, 'appEntitlements', filter, foreign)).toEqual(INVALID);
  });

  it('refuse any altered character, a truncated or extended signature, and a token of another shape', () => {
    const token = tokens.encode('appEntitlements', filter, 'ent-42');
    const [payload, signature] = token.split('.') as [string, string];
    const flip = (text: string, at: number) =>
      `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
    const altered = [
      `${flip(payload, 0)}.${signature}`,
      `${flip(payload, payload.length - 1)}.${signature}`,
      `${payload}.${flip(signature, 0)}`,
      `${payload}.${flip(signature, signature.length - 1)}`,
      `${payload}.${signature.slice(0, -1)}`,
      `${payload}.${signature}A`,
      `${payload}.`,
      `.${signature}`,
      payload,
      `${payload}.${signature}.`,
      `${payload}.${signature}.${signature}`,
      '.',
      'not a token',
    ];
    for (const candidate of altered)
      expect([candidate, decodeOutcome(tokens, 'appEntitlements', filter, candidate)]).toEqual([candidate, INVALID]);
  });

  it('a payload replaced by another signed token’s payload is refused (each signature covers its own payload)', () => {
    const first = tokens.encode('appEntitlements', filter, 'ent-1').split('.');
    const second = tokens.encode('appEntitlements', filter, 'ent-2').split('.');
    expect(decodeOutcome(tokens, 'appEntitlements', filter, `${second[0]}.${first[1]}`)).toEqual(INVALID);
  });

  it('a token carrying no cursor is refused, not read as the first page', () => {
    const empty = tokens.encode('appEntitlements', filter, undefined);
    expect(decodeOutcome(tokens, 'appEntitlements', filter, empty)).toEqual(FOREIGN);
  });
});

describe('stable JSON of a filter', () => {
  it('sorts object keys at every level, drops undefined fields, keeps array order', () => {
    expect(stableJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(stableJson({ a: 1, b: 2 })).toBe(stableJson({ b: 2, a: 1 }));
    expect(stableJson(['b', 'a'])).toBe('["b","a"]');
  });

  it('writes scalars as JSON and nothing as null', () => {
    expect([
      stableJson('x'),
      stableJson(3),
      stableJson(true),
      stableJson(null),
      stableJson(undefined),
      stableJson({}),
    ]).toEqual(['"x"', '3', 'true', 'null', 'null', '{}']);
  });
});

describe('keyset pages', () => {
  const rows = Array.from({ length: 6 }, (_, i) => ({ key: `k${i}` }));
  const page = (fetched: typeof rows, size: number) =>
    keysetPage(
      fetched,
      size,
      (row) => row.key,
      (row) => row.key.toUpperCase(),
      (cursor) => `after:${String(cursor)}`,
    );

  it('given one row more than the page, answers the page and a token after its last row', () => {
    expect(page(rows, 5)).toEqual({ items: ['K0', 'K1', 'K2', 'K3', 'K4'], nextPageToken: 'after:k4' });
  });

  it('a page that is full but has nothing after it is the last (no token)', () => {
    expect(page(rows, 6)).toEqual({ items: ['K0', 'K1', 'K2', 'K3', 'K4', 'K5'], nextPageToken: '' });
  });

  it('a short page and an empty one are the last', () => {
    expect(page(rows.slice(0, 2), 5)).toEqual({ items: ['K0', 'K1'], nextPageToken: '' });
    expect(page([], 5)).toEqual({ items: [], nextPageToken: '' });
  });
});
