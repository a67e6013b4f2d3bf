/**
 * One keyset page of any governance listing: decode the page token (bound to the listing and its
 * filter), fetch `pageSize + 1` rows after the cursor, and sign the cursor of the next page.
 */
import { keysetPage, type Page, type PageRequest, type PageTokens } from './pagination';
import { invalidArgument } from '../errors';

export interface Listing<Row, Item, Cursor> {
  /** Names the listing, e.g. `entitlements:app:<appId>`: a token of another listing is refused. */
  name: string;
  /** Everything else that shapes the listing (search filters); `{}` when nothing does. */
  filter: unknown;
  isCursor: (value: unknown) => value is Cursor;
  fetch: (after: Cursor | undefined, limit: number) => Promise<Row[]>;
  keyOf: (row: Row) => Cursor;
  toItem: (row: Row) => Item;
}

export async function pageOf<Row, Item, Cursor>(
  tokens: PageTokens,
  page: PageRequest,
  listing: Listing<Row, Item, Cursor>,
): Promise<Page<Item>> {
  const cursor = tokens.decode<unknown>(listing.name, listing.filter, page.pageToken);
  if (cursor !== undefined && !listing.isCursor(cursor)) {
    throw invalidArgument({ field: 'page_token', description: 'page_token is invalid' });
  }
  const rows = await listing.fetch(cursor, page.pageSize + 1);
  return keysetPage(rows, page.pageSize, listing.keyOf, listing.toItem, (key) =>
    tokens.encode(listing.name, listing.filter, key),
  );
}

export function isString(value: unknown): value is string {
  return typeof value === 'string';
}

/** A filter given at most once in the query string (at most 200 characters, no NUL); undefined when absent or empty. */
export function queryValue(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length > 1) throw invalidArgument({ field, description: 'must be given at most once' });
    value = value[0];
  }
  if (typeof value !== 'string' || value === '') return undefined;
  if (value.length > 200) throw invalidArgument({ field, description: 'must be at most 200 characters' });
  // The store cannot hold a NUL character (PostgreSQL refuses it): no id has one.
  if (value.includes('\u0000'))
    throw invalidArgument({ field, description: 'must not contain NUL characters (\\u0000)' });
  return value;
}

/** A repeatable `state` filter: the distinct states given, sorted (a 400 naming `state` for another value). */
export function queryStates<S extends string>(value: unknown, allowed: readonly S[]): S[] {
  const states = value === undefined ? [] : Array.isArray(value) ? value : [value];
  for (const state of states) {
    if (!(allowed as readonly unknown[]).includes(state)) {
      throw invalidArgument({ field: 'state', description: `must be one of ${allowed.join(', ')}` });
    }
  }
  return [...new Set(states as S[])].sort();
}
