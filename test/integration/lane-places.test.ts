/**
 * The store side of a concurrency key's queue bound (src/store/lane-places.ts), on both stores:
 * `lane_take` admits up to its cap and refuses beyond, admits a run that holds its place already
 * without taking another, gives places back once each; concurrent takes never pass the cap; the
 * reconcile claim is one per interval; the prune drops only empty lanes' count rows.
 */
import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import type { Db } from '../../src/store/db';
import {
  claimLaneCheck,
  freeLanePlaces,
  lanePlacesTaken,
  oldestLanePlaces,
  takeLanePlace,
} from '../../src/store/lane-places';
import { pruneFlowControl } from '../../src/store/flow-control';

for (const target of DATABASES) {
  describeOn(target)(`lane places (${target.label})`, () => {
    let db: Db;
    beforeAll(async () => {
      db = await openTestDb(target);
    });
    afterAll(async () => {
      await db?.close();
    });

    it('admits up to the cap, refuses beyond; a run holding its place is admitted again without a second one', async () => {
      const lane = 'lane:a:cap';
      expect(await takeLanePlace(db, lane, 'r1', 2)).toEqual({ admitted: true, inserted: true });
      expect(await takeLanePlace(db, lane, 'r2', 2)).toEqual({ admitted: true, inserted: true });
      expect(await takeLanePlace(db, lane, 'r3', 2)).toEqual({ admitted: false, inserted: false });
      expect(await takeLanePlace(db, lane, 'r1', 2)).toEqual({ admitted: true, inserted: false });
      expect(await lanePlacesTaken(db, lane)).toBe(2);
      // Another lane is not affected.
      expect(await takeLanePlace(db, 'lane:a:other', 'r3', 2)).toEqual({ admitted: true, inserted: true });
    });

    it('gives a place back once: a second release of the same run, or of a run without a place, frees nothing', async () => {
      const lane = 'lane:a:free';
      await takeLanePlace(db, lane, 'r1', 2);
      await takeLanePlace(db, lane, 'r2', 2);
      expect(await freeLanePlaces(db, lane, ['r1'])).toBe(1);
      expect(await freeLanePlaces(db, lane, ['r1', 'never'])).toBe(0);
      expect(await lanePlacesTaken(db, lane)).toBe(1);
      expect((await oldestLanePlaces(db, lane, 10)).map((place) => place.runId)).toEqual(['r2']);
      expect(await takeLanePlace(db, lane, 'r3', 2)).toEqual({ admitted: true, inserted: true });
    });

    it('50 concurrent takes of one lane with a cap of 7 admit exactly 7', async () => {
      const lane = 'lane:a:race';
      const takes = await Promise.all(Array.from({ length: 50 }, (_, i) => takeLanePlace(db, lane, `race-${i}`, 7)));
      expect(takes.filter((take) => take.admitted)).toHaveLength(7);
      expect(await lanePlacesTaken(db, lane)).toBe(7);
      expect(await oldestLanePlaces(db, lane, 100)).toHaveLength(7);
    });

    it('the reconcile of a lane is claimed once per interval', async () => {
      const lane = 'lane:a:claim';
      await takeLanePlace(db, lane, 'r1', 1);
      expect(await claimLaneCheck(db, lane, 60_000)).toBe(true);
      expect(await claimLaneCheck(db, lane, 60_000)).toBe(false);
      // An interval already over: claimed again.
      expect(await claimLaneCheck(db, lane, 0)).toBe(true);
    });

    it('the prune drops the count rows of lanes without a place, and keeps the others', async () => {
      await takeLanePlace(db, 'lane:a:empty', 'r1', 1);
      await freeLanePlaces(db, 'lane:a:empty', ['r1']);
      await takeLanePlace(db, 'lane:a:kept', 'r1', 1);
      await pruneFlowControl(db);
      const rows = await db.query<{ lane: string }>(
        "SELECT lane FROM lane_counts WHERE lane IN ('lane:a:empty', 'lane:a:kept')",
      );
      expect(rows.map((row) => row.lane)).toEqual(['lane:a:kept']);
      expect(await lanePlacesTaken(db, 'lane:a:kept')).toBe(1);
    });
  });
}
