/**
 * Which parts of a search query the trigram index is asked for. The rows never depend on it (the
 * whole query is checked on every candidate, test/integration/governance-indexes.test.ts), but a
 * piece that is not a substring of the query would lose rows, and one that drops the rare
 * trigrams would lose the speed.
 */
import fc from 'fast-check';
import { searchPieces, wildcardTrigrams, type TrigramStats } from '../../src/store/search-trigrams';

/** Statistics of a table where every row is "Entitlement <n>" / "entitlement-<n>". */
function stats(frequency: Record<string, number>, unlisted = 0.003): TrigramStats {
  return { frequency: new Map(Object.entries(frequency)), unlisted };
}
const ENTITLEMENTS = stats({
  men: 1,
  ent: 1,
  'nt ': 1,
  nti: 1,
  tit: 1,
  itl: 1,
  tle: 1,
  lem: 1,
  eme: 1,
  '  e': 1,
  ' en': 1,
  '  4': 0.11,
  ' 42': 0.011,
  '424': 0.0042,
  '242': 0.0045,
});

describe('wildcardTrigrams (pg_trgm generate_wildcard_trgm for %q%)', () => {
  it('pads a word on the sides where the query goes on, lower-cased, with the characters each trigram stands for', () => {
    expect(wildcardTrigrams('Ment-4242').map(({ trigram, from, to }) => [trigram, from, to])).toEqual([
      ['men', 0, 3],
      ['ent', 1, 4],
      ['nt ', 2, 5],
      ['  4', 4, 6],
      [' 42', 4, 7],
      ['424', 5, 8],
      ['242', 6, 9],
    ]);
  });

  it('gives no trigram for words under three characters at the ends of the query', () => {
    expect(wildcardTrigrams('ab')).toEqual([]);
    expect(wildcardTrigrams('%_')).toEqual([]);
    expect(wildcardTrigrams('a b').map((t) => t.trigram)).toEqual(['  b']);
  });
});

describe('searchPieces', () => {
  it('leaves out the trigrams found in nearly every row when rarer ones remain', () => {
    expect(searchPieces('ment-4242', ENTITLEMENTS)).toEqual(['-4242']);
    expect(searchPieces('Entitlement 4242', ENTITLEMENTS)).toEqual([' 4242']);
    // Two rare parts around a common one: both are asked for.
    expect(searchPieces('zyx entitlement 4242', ENTITLEMENTS)).toEqual(['zyx ', ' 4242']);
  });

  it('asks for the whole query when leaving trigrams out gains nothing', () => {
    expect(searchPieces('ment-4242', undefined)).toEqual(['ment-4242']);
    expect(searchPieces('4242', ENTITLEMENTS)).toEqual(['4242']); // nothing common
    expect(searchPieces('entitlement', ENTITLEMENTS)).toEqual(['entitlement']); // nothing rare
    expect(searchPieces('ab', ENTITLEMENTS)).toEqual(['ab']); // no trigram
  });

  it('keeps a trigram that is common but not common enough to outweigh the rows it removes', () => {
    // '  4' (11% of rows) stays with ' 42', '424' and '242' (rarest 0.42%): leaving it out could
    // let ten times more candidates through for the few items it saves.
    expect(searchPieces('ment-4242', ENTITLEMENTS)[0]).toMatch(/^-/);
    // Rarest at 50%: even a trigram in 90% of rows is kept.
    expect(searchPieces('ment-4242', stats({ men: 0.9, ent: 0.9, 'nt ': 0.9 }, 0.5))).toEqual(['ment-4242']);
  });

  it('asks for the whole query when it is not ASCII (lower-casing a part could differ from the whole)', () => {
    expect(searchPieces('entitlement-ΣΑΣ', stats({ men: 1, ent: 1 }))).toEqual(['entitlement-ΣΑΣ']);
  });

  it('only ever asks for substrings of the query, and never leaves out the rarest trigram', () => {
    const words = ['ent', 'men', 'nt', 'title', '42', '4242', 'a', '-', ' ', '%', '_', '\\', 'crm', 'x'];
    const query = fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 8 }).map((parts) => parts.join(''));
    const frequencies = fc.dictionary(
      fc.constantFrom(...new Set(words.flatMap((w) => wildcardTrigrams(`${w}${w}`).map((t) => t.trigram)))),
      fc.double({ min: 0, max: 1, noNaN: true }),
    );
    fc.assert(
      fc.property(query, frequencies, fc.double({ min: 0, max: 1, noNaN: true }), (q, frequency, unlisted) => {
        const s = stats(frequency, unlisted);
        const pieces = searchPieces(q, s);
        expect(pieces.length).toBeGreaterThan(0);
        for (const piece of pieces) expect(q.toLowerCase()).toContain(piece.toLowerCase());
        if (pieces[0] === q) return;
        const all = wildcardTrigrams(q);
        const f = (t: string): number => s.frequency.get(t) ?? s.unlisted;
        const rarest = Math.min(...all.map((t) => f(t.trigram)));
        const asked = new Set(pieces.flatMap((p) => wildcardTrigrams(p).map((t) => t.trigram)));
        for (const t of all) if (f(t.trigram) === rarest) expect(asked).toContain(t.trigram);
      }),
    );
  });
});
