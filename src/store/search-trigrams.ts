/**
 * Which parts of an entitlement search `query` the trigram index is asked for. GIN reads the
 * posting list of every trigram of `q`, and a trigram found in nearly every row (`ent` in
 * "Entitlement …") has one as long as the table; so the index gets only the substrings of `q` made
 * of its rarer trigrams, and the exact condition filters the candidates. Any substring of `q` is in
 * every text that holds `q`: the results are the same, only the work differs (figures in
 * docs/operations.md#entitlement-search).
 *
 * Trigram frequencies come from ANALYZE (the statistics object `app_entitlements_search_trgm_stats`,
 * read from `pg_stats_ext_exprs`). Without them (a table never analysed, a role that does not own
 * it) the whole query goes to the index. PGlite runs no autovacuum: its statistics are the last
 * ANALYZE's.
 */
import type { Queryable } from './db';

export interface TrigramStats {
  /** Fraction of rows whose searched text holds the trigram, for the most common trigrams. */
  frequency: ReadonlyMap<string, number>;
  /** The lowest listed frequency: the estimate for a trigram that is not listed. */
  unlisted: number;
}

/** One trigram that pg_trgm extracts from the LIKE pattern `%q%`, and the characters of `q` it stands for. */
export interface QueryTrigram {
  trigram: string;
  /** `q.slice(from, to)` is the shortest substring of `q` whose pattern `%…%` yields this trigram. */
  from: number;
  to: number;
}

/**
 * Cost of rechecking one more candidate row (heap fetch and ILIKE) in units of one posting-list
 * item read by GIN (the measurement is in
 * docs/performance.md#constants).
 */
const CANDIDATE_COST = 200;

const WORD_CHAR = /[A-Za-z0-9]/;

/**
 * The trigrams pg_trgm's `generate_wildcard_trgm` takes from the pattern `%q%` (q literal), for an
 * ASCII `q`: words are runs of letters and digits, lower-cased; a word is padded with two spaces
 * on the left and one on the right except where it touches a `%`; every three consecutive
 * characters of a padded word are a trigram.
 */
export function wildcardTrigrams(query: string): QueryTrigram[] {
  const out: QueryTrigram[] = [];
  let at = 0;
  while (at < query.length) {
    if (!WORD_CHAR.test(query[at]!)) {
      at += 1;
      continue;
    }
    let end = at;
    while (end < query.length && WORD_CHAR.test(query[end]!)) end += 1;
    // Each character of the padded word, with the index in `query` it comes from (a padding
    // space comes from the non-word character next to the word).
    const chars: Array<[string, number]> = [];
    if (at > 0) chars.push([' ', at - 1], [' ', at - 1]);
    for (let i = at; i < end; i += 1) chars.push([query[i]!.toLowerCase(), i]);
    if (end < query.length) chars.push([' ', end]);
    for (let i = 0; i + 3 <= chars.length; i += 1) {
      out.push({
        trigram: chars[i]![0] + chars[i + 1]![0] + chars[i + 2]![0],
        from: chars[i]![1],
        to: chars[i + 2]![1] + 1,
      });
    }
    at = end;
  }
  return out;
}

/**
 * The substrings of `query` to give the trigram index (all of them must match), or `[query]` when
 * leaving trigrams out gains nothing. A trigram is left out when it is common enough that reading
 * its posting list costs more than the extra candidates its absence lets through:
 * with `s` the frequency of the rarest trigram (an upper bound of how many rows the others keep)
 * and `f` its own, leave it out when `s × (1 − f) × CANDIDATE_COST < f²` — in practice, trigrams
 * found in most rows. Only for ASCII queries: there, lower-casing a substring gives the same
 * characters as lower-casing the whole query, whatever the collation.
 */
export function searchPieces(query: string, stats: TrigramStats | undefined): string[] {
  // eslint-disable-next-line no-control-regex
  if (!stats || !/^[\x00-\x7f]*$/.test(query)) return [query];
  const trigrams = wildcardTrigrams(query);
  if (trigrams.length < 2) return [query];
  const frequency = (t: QueryTrigram): number => stats.frequency.get(t.trigram) ?? stats.unlisted;
  const rarest = Math.min(...trigrams.map(frequency));
  const keep = trigrams.map((t) => {
    const f = frequency(t);
    return f === rarest || !(rarest * (1 - f) * CANDIDATE_COST < f * f);
  });
  if (keep.every(Boolean)) return [query];
  // Runs of consecutive kept trigrams, each as the substring of `query` that yields them.
  const pieces: string[] = [];
  let run: { from: number; to: number } | undefined;
  trigrams.forEach((t, i) => {
    if (keep[i]) {
      run = run ? { from: Math.min(run.from, t.from), to: Math.max(run.to, t.to) } : { from: t.from, to: t.to };
    } else if (run) {
      pieces.push(query.slice(run.from, run.to));
      run = undefined;
    }
  });
  if (run) pieces.push(query.slice(run.from, run.to));
  return [...new Set(pieces)];
}

/** The statistics object the search migration creates (where pg_trgm is loaded). */
export const SEARCH_STATS_NAME = 'app_entitlements_search_trgm_stats';

/** Reads the trigram frequencies ANALYZE stored for the search text; undefined when there are none. */
export async function loadTrigramStats(db: Queryable): Promise<TrigramStats | undefined> {
  const rows = await db.query<{ elems: string[] | null; freqs: number[] | null }>(
    `SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
     FROM pg_stats_ext_exprs
     WHERE schemaname = current_schema() AND tablename = 'app_entitlements' AND statistics_name = $1`,
    [SEARCH_STATS_NAME],
  );
  const { elems, freqs } = rows[0] ?? {};
  if (!elems || !freqs || elems.length === 0) return undefined;
  // most_common_elem_freqs: one frequency per element, then their minimum, maximum and (maybe) the null frequency.
  const frequency = new Map<string, number>();
  elems.forEach((elem, i) => frequency.set(elem, Number(freqs[i])));
  return { frequency, unlisted: Number(freqs[elems.length]) };
}

const STATS_TTL_MS = 60_000;
const cache = new WeakMap<Queryable, { at: number; stats: Promise<TrigramStats | undefined> }>();

/**
 * `loadTrigramStats`, kept a minute per store (statistics change when ANALYZE runs, and they only
 * steer the plan: stale ones cost time, never results). A failed read counts as no statistics
 * and is not kept: the next search reads again.
 */
export function trigramStats(db: Queryable, now = Date.now()): Promise<TrigramStats | undefined> {
  const hit = cache.get(db);
  if (hit && now - hit.at < STATS_TTL_MS) return hit.stats;
  const entry = {
    at: now,
    stats: loadTrigramStats(db).catch(() => {
      if (cache.get(db) === entry) cache.delete(db);
      return undefined;
    }),
  };
  cache.set(db, entry);
  return entry.stats;
}
