/**
 * The daylight-saving corrections of cron schedules (src/domain/schedule-dst.ts) and the cron
 * reading they rest on: the wall times a change skips or repeats, and the instants the contract
 * fires them at, for Berlin (changes at 01:00Z) and New York (changes at 02:00 local).
 * test/integration/schedules.test.ts reads the same instants from the Temporal server.
 */
import { cronFields } from '../../src/triggers/cron';
import { dstCorrections, nextRunsOf, offsetChanges } from '../../src/domain/schedule-dst';
import type { ScheduleTrigger } from '../../src/triggers';

const NOW = Date.parse('2027-01-01T00:00:00Z');

function cron(expression: string, timezone: string): ScheduleTrigger {
  return {
    kind: 'schedule',
    cron: expression,
    interval: null,
    offset: null,
    timezone,
    overlap: 'SKIP',
    catchupWindow: '300s',
    enabled: true,
  };
}

describe('cronFields', () => {
  it('reads names, ranges, steps and lists as the Schedule matches them', () => {
    const daily = cronFields('@daily');
    expect([...daily.minute]).toEqual([0]);
    expect([...daily.hour]).toEqual([0]);
    expect(daily.dayOfMonth.size).toBe(31);
    const weekdays = cronFields('*/15 9-17/4 1,15 JAN-MAR MON-FRI');
    expect([...weekdays.minute]).toEqual([0, 15, 30, 45]);
    expect([...weekdays.hour]).toEqual([9, 13, 17]);
    expect([...weekdays.dayOfMonth]).toEqual([1, 15]);
    expect([...weekdays.month]).toEqual([1, 2, 3]);
    expect([...weekdays.dayOfWeek]).toEqual([1, 2, 3, 4, 5]);
    expect([...cronFields('0 0 * * 7').dayOfWeek]).toEqual([0]);
  });
});

describe('offsetChanges', () => {
  it("finds Berlin's two changes of 2027 to the minute", () => {
    const changes = offsetChanges('Europe/Berlin', NOW, Date.parse('2028-01-01T00:00:00Z'));
    expect(changes).toEqual([
      { atMs: Date.parse('2027-03-28T01:00:00Z'), before: 60, after: 120 },
      { atMs: Date.parse('2027-10-31T01:00:00Z'), before: 120, after: 60 },
    ]);
  });
});

describe('dstCorrections', () => {
  it("Berlin's 02:30: the skipped one fires at the gap's end, the repeated one at its first occurrence", () => {
    const { skip, add } = dstCorrections(cron('30 2 * * *', 'Europe/Berlin'), NOW);
    expect(add).toEqual(expect.arrayContaining(['2027-03-28T01:00:00.000Z', '2027-10-31T00:30:00.000Z']));
    expect(skip).toEqual(
      expect.arrayContaining([
        { year: 2027, month: 3, day: 28, hour: 2, minute: 30, second: 0 },
        { year: 2027, month: 10, day: 31, hour: 2, minute: 30, second: 0 },
      ]),
    );
    // Every correction is at one of the changes within 400 days of now: none on an ordinary day.
    expect(add.map((instant) => instant.slice(0, 10))).toEqual([
      '2026-03-29',
      '2026-10-25',
      '2027-03-28',
      '2027-10-31',
    ]);
  });

  it('a whole skipped hour fires once; a cron that matches the first time after the gap needs no addition', () => {
    const everyMinute = dstCorrections(cron('* 2 28 3 *', 'Europe/Berlin'), NOW);
    expect(everyMinute.add).toEqual(['2027-03-28T01:00:00.000Z']);
    expect(everyMinute.skip).toHaveLength(60);
    const andThree = dstCorrections(cron('0 2,3 28 3 *', 'Europe/Berlin'), NOW);
    expect(andThree.add).toEqual([]);
    expect(andThree.skip).toEqual([{ year: 2027, month: 3, day: 28, hour: 2, minute: 0, second: 0 }]);
  });

  it("New York: 02:30 is skipped in March (07:00Z) and 01:30's first occurrence in November is 05:30Z", () => {
    expect(dstCorrections(cron('30 2 * * *', 'America/New_York'), NOW).add).toContain('2027-03-14T07:00:00.000Z');
    const repeated = dstCorrections(cron('30 1 7 11 *', 'America/New_York'), NOW);
    expect(repeated.add).toEqual(['2027-11-07T05:30:00.000Z']);
    expect(repeated.skip).toEqual([{ year: 2027, month: 11, day: 7, hour: 1, minute: 30, second: 0 }]);
  });

  it('no correction for a time no change touches, for UTC, or for an interval', () => {
    expect(dstCorrections(cron('0 9 * * MON-FRI', 'Europe/Berlin'), NOW)).toEqual({ skip: [], add: [] });
    expect(dstCorrections(cron('30 2 * * *', 'UTC'), NOW)).toEqual({ skip: [], add: [] });
    expect(
      dstCorrections({ ...cron('30 2 * * *', 'Europe/Berlin'), cron: null, interval: '3600s', offset: '0s' }, NOW),
    ).toEqual({ skip: [], add: [] });
  });
});

describe('nextRunsOf (a draft without a Schedule)', () => {
  it("Berlin's 02:30 across both changes: the gap's end, then the first occurrence", () => {
    const trigger = cron('30 2 * * *', 'Europe/Berlin');
    expect(nextRunsOf(trigger, Date.parse('2027-03-27T12:00:00Z'), 2)).toEqual([
      '2027-03-28T01:00:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ]);
    expect(nextRunsOf(trigger, Date.parse('2027-10-30T12:00:00Z'), 2)).toEqual([
      '2027-10-31T00:30:00.000Z',
      '2027-11-01T01:30:00.000Z',
    ]);
  });

  it('an interval counts from the epoch with its offset; a weekday cron skips the weekend', () => {
    const interval = { ...cron('0 0 * * *', 'UTC'), cron: null, interval: '3600s', offset: '300s' };
    expect(nextRunsOf(interval, Date.parse('2027-01-01T00:10:00Z'), 2)).toEqual([
      '2027-01-01T01:05:00.000Z',
      '2027-01-01T02:05:00.000Z',
    ]);
    // 2027-01-01 is a Friday: the next two weekday 09:00s in Berlin are Friday and Monday (08:00Z).
    expect(nextRunsOf(cron('0 9 * * MON-FRI', 'Europe/Berlin'), Date.parse('2027-01-01T00:00:00Z'), 2)).toEqual([
      '2027-01-01T08:00:00.000Z',
      '2027-01-04T08:00:00.000Z',
    ]);
  });
});
