/**
 * Pagination: GET /api/v1/apps/{app_id}/entitlements over one app holding N entitlements
 * (bulk-inserted with generate_series), the page at row N/2 against the first page, through the
 * real app and its real store.
 *
 * The deep page's token is not reached by walking N/2 / 25 pages: it is computed with
 * `deps.pageTokens.encode` for the same listing name and filter the route uses
 * (`entitlements:app:<appId>`, `{}`), with the id of row N/2 as cursor. The shortcut is checked
 * first: the token computed for row 25 must equal the `nextPageToken` of the real first page, and
 * the deep page must start at row N/2 + 1. Were the route to name its listing differently, the
 * check fails and the benchmark walks to row N/2 instead (page_size 100).
 */
import { randomBytes } from 'node:crypto';
import { newId } from '../src/ids';
import { PAGE_SIZE_DEFAULT, PageTokens } from '../src/domain/pagination';
import { toColumns, withDefaults } from '../src/domain/entitlement-record';
import { AccessTokens } from '../src/auth/tokens';
import { createClient } from '../src/auth/clients';
import { SecretBox } from '../src/crypto/secret-box';
import type { Db } from '../src/store/db';
import { entitlementSearchQuery } from '../src/store/entitlements';
import { loadTrigramStats, searchPieces } from '../src/store/search-trigrams';
import { openStore, startApi } from './stack';
import { percentile, request } from './util';

export interface PaginationResult {
  firstMs: number;
  deepMs: number;
  ratioDeepToFirst: number;
  /** p50 of a first page filtered by `query` (substring of display name, slug or description). */
  searchMs: number;
  ratioSearchToFirst: number;
  rows: number;
  /** How the deep token was obtained. */
  tokenFrom: 'computed' | 'walked';
  seedSeconds: number;
}

/** Seeded ids sort like their row numbers: row i (1-based) has id `00000000-0000-7000-8000-<i in hex>`. */
export function seededId(row: number): string {
  return `00000000-0000-7000-8000-${row.toString(16).padStart(12, '0')}`;
}

const CHUNK = 100_000;

async function seed(db: Db, rows: number, log: (line: string) => void): Promise<string> {
  const appId = newId();
  await db.query('INSERT INTO apps (id, display_name, description) VALUES ($1, $2, $3)', [
    appId,
    'Bench pagination app',
    '',
  ]);
  // The record column as the API writes it for an entitlement with only columns set.
  const record = JSON.stringify(toColumns(withDefaults({} as Parameters<typeof withDefaults>[0])).record);
  for (let from = 1; from <= rows; from += CHUNK) {
    const to = Math.min(rows, from + CHUNK - 1);
    await db.query(
      `INSERT INTO app_entitlements (id, app_id, alias, display_name, description, slug, record)
       SELECT '00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'), $1, '', 'Entitlement ' || g,
              'Seeded for the pagination benchmark', 'entitlement-' || g, $2::jsonb
       FROM generate_series($3::int, $4::int) AS g`,
      [appId, record, from, to],
    );
    if (to % 500_000 === 0 || to === rows) log(`  ${to.toLocaleString('en')} rows`);
  }
  await db.exec('ANALYZE app_entitlements');
  return appId;
}

interface ListBody {
  list?: Array<{ appEntitlement: { id: string } }>;
  nextPageToken?: string;
}

/**
 * `target.db`: an open store to seed (the stack's PGlite), with the box its secrets are sealed
 * with; otherwise a fresh one is opened and closed.
 */
export async function runPaginationBench(
  target: { name: string; databaseUrl: string | undefined; db?: Db; secretBox?: SecretBox },
  options: { rows: number; samples: number },
  log: (line: string) => void,
): Promise<PaginationResult> {
  const stops: Array<() => Promise<void>> = [];
  try {
    const db = target.db ?? (await openStore(target.databaseUrl));
    if (!target.db) stops.push(() => db.close());
    log(`pagination on ${target.name}: inserting ${options.rows.toLocaleString('en')} entitlements`);
    const seedStart = performance.now();
    const appId = await seed(db, options.rows, log);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    const secretBox = target.secretBox ?? new SecretBox(randomBytes(32));
    const tokens = await AccessTokens.load(db, secretBox, 600);
    const pageTokenKey = randomBytes(32);
    const pageTokens = new PageTokens(pageTokenKey);
    const api = await startApi({ db, tokens, pageTokenKey, secretBox }, stops);
    const token = await tokens.issue(
      (await createClient(db, secretBox, { displayName: 'bench', roles: ['read_only'] })).client.clientId,
      ['read_only'],
    );
    const listUrl = `${api.url}/api/v1/apps/${appId}/entitlements`;
    const listing = `entitlements:app:${appId}`;
    const get = async (pageToken: string, pageSize?: number): Promise<ListBody> => {
      const query = new URLSearchParams();
      if (pageToken) query.set('page_token', pageToken);
      if (pageSize) query.set('page_size', String(pageSize));
      const search = query.toString();
      const response = await request('GET', `${listUrl}${search ? `?${search}` : ''}`, { token });
      if (response.status !== 200)
        throw new Error(`GET entitlements answered ${response.status}: ${JSON.stringify(response.body)}`);
      return response.body as ListBody;
    };

    const middle = Math.floor(options.rows / 2);
    const first = await get('');
    let deepToken: string;
    let tokenFrom: PaginationResult['tokenFrom'];
    if (first.nextPageToken === pageTokens.encode(listing, {}, seededId(PAGE_SIZE_DEFAULT))) {
      deepToken = pageTokens.encode(listing, {}, seededId(middle));
      tokenFrom = 'computed';
    } else {
      log(`  the computed token does not match the route's: walking to row ${middle.toLocaleString('en')}`);
      deepToken = '';
      for (let row = 0; row < middle; row += 100) deepToken = (await get(deepToken, 100)).nextPageToken ?? '';
      tokenFrom = 'walked';
    }
    const deep = await get(deepToken);
    const firstId = deep.list?.[0]?.appEntitlement.id;
    if (firstId !== seededId(middle + 1))
      throw new Error(`the deep page starts at ${String(firstId)}, expected ${seededId(middle + 1)}`);
    if (first.list?.[0]?.appEntitlement.id !== seededId(1)) throw new Error('the first page does not start at row 1');

    // Warm-up, then alternate first and deep pages.
    for (let i = 0; i < 20; i++) {
      await get('');
      await get(deepToken);
    }
    const firstTimes: number[] = [];
    const deepTimes: number[] = [];
    for (let i = 0; i < options.samples; i++) {
      let t0 = performance.now();
      await get('');
      firstTimes.push(performance.now() - t0);
      t0 = performance.now();
      await get(deepToken);
      deepTimes.push(performance.now() - t0);
    }
    // Search: POST /api/v1/search/entitlements with a substring `query` that matches few rows
    // (ids ending in 4242), first page, against the unfiltered first page above.
    const searchTimes: number[] = [];
    const searchUrl = `${api.url}/api/v1/search/entitlements`;
    const searchBody = { query: 'ment-4242', appIds: [appId] };
    for (let i = 0; i < 5; i++) await request('POST', searchUrl, { token, body: JSON.stringify(searchBody) });
    for (let i = 0; i < Math.max(10, Math.floor(options.samples / 4)); i++) {
      const t0 = performance.now();
      const response = await request('POST', searchUrl, { token, body: JSON.stringify(searchBody) });
      if (response.status !== 200)
        throw new Error(`GET entitlements?query answered ${response.status}: ${JSON.stringify(response.body)}`);
      searchTimes.push(performance.now() - t0);
    }
    // A search over its goal (5 × the first page) says why: the pieces the trigram statistics chose
    // and the plan PostgreSQL ran, as they are now (one full run took 1.5 s a search once; the
    // same section again took 9 ms: docs/performance.md#pagination-search-and-cel).
    if (percentile(searchTimes, 50) > 5 * percentile(firstTimes, 50)) {
      const stats = await loadTrigramStats(db);
      const { text, values } = entitlementSearchQuery(
        { query: searchBody.query, appIds: [appId], limit: PAGE_SIZE_DEFAULT + 1 },
        stats,
      );
      const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
      log(
        `pagination on ${target.name}: the search is over its goal; pieces ${JSON.stringify(searchPieces(searchBody.query, stats))}, ` +
          `${stats ? `${stats.frequency.size} trigram frequencies` : 'no trigram statistics'}, plan now:\n${plan.map((row) => row['QUERY PLAN']).join('\n')}`,
      );
    }
    const firstMs = percentile(firstTimes, 50);
    const deepMs = percentile(deepTimes, 50);
    const searchMs = percentile(searchTimes, 50);
    return {
      firstMs,
      deepMs,
      ratioDeepToFirst: deepMs / firstMs,
      searchMs,
      ratioSearchToFirst: searchMs / firstMs,
      rows: options.rows,
      tokenFrom,
      seedSeconds,
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}
