/**
 * The worker keeps the published versions it has loaded (activities/steps.ts): a second run of a
 * version does not ask the store, a version that does not exist is asked for again, and only the
 * most recently used are kept, within a count and a size (PUBLISHED_VERSIONS_KEPT).
 */
import { openTestDb, PGLITE } from '../helpers/databases';
import { publishedRunInput } from '../helpers/versions';
import { createStepActivities, PUBLISHED_VERSIONS_KEPT } from '../../activities/steps';
import { recordPublishedVersion } from '../../src/store/automation-versions';
import type { Db } from '../../src/store/db';

describe('published versions kept by the worker', () => {
  let db: Db;
  /** Statements that read automation_versions since the last reset. */
  let versionReads = 0;

  beforeAll(async () => {
    db = await openTestDb(PGLITE);
  });

  afterAll(async () => {
    await db?.close();
  });

  /** The store as the activities see it, counting its reads of published versions. */
  function counting(): Db {
    return new Proxy(db, {
      get(target, prop, receiver) {
        if (prop === 'query') {
          return (sql: string, params?: unknown[]) => {
            if (/FROM automation_versions/.test(sql)) versionReads += 1;
            return target.query(sql, params);
          };
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it('reads a version from the store once, and answers the same steps after', async () => {
    const activities = createStepActivities({ db: counting() });
    const input = await publishedRunInput(db, [{ id: 'vars', setVariables: { x: '1' } }], {}, 'Kept');
    const ref = { automationId: input.automationId, version: input.version };
    versionReads = 0;
    const first = await activities.loadAutomationVersion(ref);
    const second = await activities.loadAutomationVersion(ref);
    expect(second).toEqual({ automationName: 'Kept', steps: [{ id: 'vars', setVariables: { x: '1' } }] });
    expect(second).toEqual(first);
    expect(versionReads).toBe(1);
  });

  it('does not keep a version that does not exist: once published, it is found', async () => {
    const activities = createStepActivities({ db: counting() });
    const input = await publishedRunInput(db, [{ id: 'vars', setVariables: { x: '1' } }], {});
    const ref = { automationId: input.automationId, version: 2 };
    await expect(activities.loadAutomationVersion(ref)).rejects.toMatchObject({ type: 'AutomationVersionNotFound' });
    await recordPublishedVersion(db, input.automationId, 2, {
      displayName: 'Second',
      steps: [{ id: 'later', setVariables: { y: '2' } }],
    });
    expect(await activities.loadAutomationVersion(ref)).toEqual({
      automationName: 'Second',
      steps: [{ id: 'later', setVariables: { y: '2' } }],
    });
  });

  it(`keeps the ${PUBLISHED_VERSIONS_KEPT.count} most recently used versions`, async () => {
    const activities = createStepActivities({ db: counting() });
    const input = await publishedRunInput(db, [{ id: 'v1', setVariables: { n: '1' } }], {});
    for (let version = 2; version <= PUBLISHED_VERSIONS_KEPT.count + 1; version++) {
      await recordPublishedVersion(db, input.automationId, version, {
        displayName: 'Many',
        steps: [{ id: `v${version}`, setVariables: { n: String(version) } }],
      });
    }
    const load = (version: number) => activities.loadAutomationVersion({ automationId: input.automationId, version });
    for (let version = 1; version <= PUBLISHED_VERSIONS_KEPT.count; version++) await load(version);
    await load(1); // used again: now the most recent
    versionReads = 0;
    await load(PUBLISHED_VERSIONS_KEPT.count + 1); // one more than kept: the least recently used (2) goes
    await load(1);
    expect(versionReads).toBe(1);
    expect((await load(2)).steps).toEqual([{ id: 'v2', setVariables: { n: '2' } }]);
    expect(versionReads).toBe(2);
  });

  it('keeps no more than its size allows: the least recently used go first, and a version larger than all of it is never kept', async () => {
    const steps = (id: string, padding: number) => [{ id, setVariables: { text: `'${'x'.repeat(padding)}'` } }];
    const size = (padding: number) => JSON.stringify(steps('s0', padding)).length;
    // Room for two versions of 1,000 characters of padding, not three.
    const activities = createStepActivities({
      db: counting(),
      keptVersions: { count: 100, chars: 2 * size(1000) + 10 },
    });
    const input = await publishedRunInput(db, steps('s1', 1000), {});
    await recordPublishedVersion(db, input.automationId, 2, { displayName: 'Two', steps: steps('s2', 1000) });
    await recordPublishedVersion(db, input.automationId, 3, { displayName: 'Three', steps: steps('s3', 1000) });
    await recordPublishedVersion(db, input.automationId, 4, { displayName: 'Huge', steps: steps('s4', 5000) });
    const load = (version: number) => activities.loadAutomationVersion({ automationId: input.automationId, version });
    await load(1);
    await load(2);
    await load(3); // over the size: version 1 goes
    versionReads = 0;
    await load(2);
    await load(3);
    expect(versionReads).toBe(0);
    await load(1);
    expect(versionReads).toBe(1);
    versionReads = 0;
    await load(4);
    await load(4);
    expect(versionReads).toBe(2);
    // …and loading it pushed nothing out.
    await load(3);
    await load(1);
    expect(versionReads).toBe(2);
  });
});
