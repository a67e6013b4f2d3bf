/**
 * The automation workflow on a real Temporal dev server, with real activities over a real store.
 * The workflow code is bundled once; every test runs its own worker on its own task queue.
 */
import { randomUUID } from 'node:crypto';
import { Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import {
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  Runtime,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { tsToMs } from '@temporalio/common/lib/time';
import type { Db } from '../../src/store/db';
import { automationBundleOptions, createAutomationWorker } from '../../src/temporal/worker';
import { createActivities } from '../../activities';
import { automation } from '../../workflows';
import {
  APPROVAL_CONTEXT_PATCH,
  RUN_STATE_QUERY,
  type AutomationRunInput,
  type RunState,
  type StepDefinition,
} from '../../src/contract/run';
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import {
  connectClient,
  connectNative,
  expectRunFailure,
  testCodec,
  testDataConverter,
  testTemporal,
  uniqueTaskQueue,
} from '../helpers/temporal';
import { publishedRunInput } from '../helpers/versions';
import { decodePayloadsInPlace } from '../../src/temporal/payloads';
import { localActivityType } from '../../src/temporal/run-history';
import { poll } from '../helpers/wait';

let nativeConnection: NativeConnection;
let connection: Connection;
let client: Client;
let namespace: string;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  // Expected workflow failures are logged as warnings: keep the test output to errors.
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const temporal = await testTemporal();
  namespace = temporal.namespace;
  nativeConnection = await connectNative(temporal.address);
  connection = await connectClient(temporal.address);
  client = new Client({ connection, namespace, ...testDataConverter() });
  bundle = await bundleWorkflowCode({ ...automationBundleOptions(), logger: quietLogger() });
});

afterAll(async () => {
  await connection?.close();
  await nativeConnection?.close();
});

function quietLogger() {
  const noop = (): void => undefined;
  return { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: noop };
}

for (const target of DATABASES) {
  describeOn(target)(`automation workflow (${target.label})`, () => {
    let db: Db;
    const runInput = (steps: StepDefinition[], trigger: unknown): Promise<AutomationRunInput> =>
      publishedRunInput(db, steps, trigger);

    beforeAll(async () => {
      db = await openTestDb(target);
    });

    afterAll(async () => {
      await db?.close();
    });

    /** Starts a worker on a fresh task queue, runs `fn` with a starter for that queue, stops the worker. */
    async function withWorker<T>(
      fn: (start: (input: AutomationRunInput) => Promise<WorkflowHandle<typeof automation>>) => Promise<T>,
      workerDb: Db = db,
    ): Promise<T> {
      const taskQueue = uniqueTaskQueue('automation');
      const worker = await createAutomationWorker({
        connection: nativeConnection,
        namespace,
        taskQueue,
        db: workerDb,
        activities: (engine) => createActivities({ db: workerDb, allowPrivateOutbound: false, engine }),
        bundle,
        codec: testCodec(),
      });
      const start = (input: AutomationRunInput) =>
        client.workflow.start(automation, {
          taskQueue,
          workflowId: `test:${input.eventId}`,
          args: [input],
        });
      return worker.runUntil(fn(start));
    }

    it('sets variables from the trigger (both syntaxes) and reads them in later steps', async () => {
      const steps: StepDefinition[] = [
        {
          id: 'vars',
          setVariables: { who: 'ctx.trigger.user', ent: 'ctx.trigger["entitlement"]', n: 'ctx.trigger.count * 2.0' },
        },
        {
          id: 'derived',
          setVariables: { greeting: "'hello ' + ctx.steps.vars.who", isTwo: 'ctx.steps.vars.n == 4.0' },
        },
      ];
      const result = await withWorker(async (start) => {
        const handle = await start(await runInput(steps, { user: 'svc-1', entitlement: 'ent-9', count: 2 }));
        return handle.result();
      });
      expect(result.status).toBe('COMPLETED');
      // Each step's times are the run's own clock: the second starts no earlier than the first ended.
      const times = { startedAt: expect.any(String), finishedAt: expect.any(String) };
      expect(result.steps).toEqual([
        {
          id: 'vars',
          kind: 'setVariables',
          status: 'DONE',
          output: { who: 'svc-1', ent: 'ent-9', n: 4 },
          error: null,
          ...times,
        },
        {
          id: 'derived',
          kind: 'setVariables',
          status: 'DONE',
          output: { greeting: 'hello svc-1', isTwo: true },
          error: null,
          ...times,
        },
      ]);
      const [vars, derived] = result.steps;
      expect(Date.parse(vars!.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(vars!.startedAt!));
      expect(Date.parse(derived!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(vars!.finishedAt!));
    });

    it('skips a step whose when is false and runs one whose when is true', async () => {
      const steps: StepDefinition[] = [
        { id: 'skipped', when: "ctx.trigger.kind == 'fire'", setVariables: { x: "'never'" } },
        { id: 'ran', when: "ctx.trigger.kind == 'hire' && !has(ctx.steps.skipped)", setVariables: { x: "'yes'" } },
      ];
      const result = await withWorker(async (start) => (await start(await runInput(steps, { kind: 'hire' }))).result());
      expect(result.status).toBe('COMPLETED');
      expect(result.steps.map((s) => [s.id, s.status, s.output])).toEqual([
        ['skipped', 'SKIPPED', null],
        ['ran', 'DONE', { x: 'yes' }],
      ]);
    });

    it('fails the run at a CEL error, naming the step and field; later steps stay PENDING', async () => {
      const steps: StepDefinition[] = [
        { id: 'ok', setVariables: { a: '1' } },
        { id: 'broken', setVariables: { value: 'ctx.trigger.missing' } },
        { id: 'after', setVariables: { b: '2' } },
      ];
      await withWorker(async (start) => {
        const handle = await start(await runInput(steps, { present: true }));
        const failure = await expectRunFailure(handle);
        expect(failure.type).toBe('StepFailed');
        expect(failure.message).toMatch(/^step "broken" failed: value: .*missing/);
        const state = await handle.query<RunState>(RUN_STATE_QUERY);
        expect(state.status).toBe('FAILED');
        expect(state.steps.map((s) => s.status)).toEqual(['DONE', 'FAILED', 'PENDING']);
        expect(state.steps[1]?.error).toMatch(/^value: .*missing/);
      });
    });

    it('fails the step when `when` is not a boolean', async () => {
      const steps: StepDefinition[] = [{ id: 'odd', when: 'ctx.trigger.kind', setVariables: {} }];
      await withWorker(async (start) => {
        const failure = await expectRunFailure(await start(await runInput(steps, { kind: 'hire' })));
        expect(failure.message).toBe('step "odd" failed: when: must evaluate to a boolean, got string "hire"');
      });
    });

    it('shows WAITING during a durable wait, then DONE', async () => {
      await withWorker(async (start) => {
        // An hour-long wait stays WAITING for as long as the test looks at it: no race with the timer.
        const long = await start(
          await runInput(
            [
              { id: 'pause', wait: { duration: '3600s' } },
              { id: 'after', setVariables: { done: 'true' } },
            ],
            {},
          ),
        );
        const seen = await poll(
          () => long.query<RunState>(RUN_STATE_QUERY),
          (state) => state.steps[0]?.status === 'WAITING',
        );
        expect(seen.status).toBe('RUNNING');
        expect(seen.steps.map((s) => s.status)).toEqual(['WAITING', 'PENDING']);
        await long.terminate('test done');

        // A short one runs to the end: the wait is DONE and the next step ran.
        const short = await start(
          await runInput(
            [
              { id: 'pause', wait: { duration: '1.5s' } },
              { id: 'after', setVariables: { done: 'true' } },
            ],
            {},
          ),
        );
        const result = await short.result();
        expect(result.status).toBe('COMPLETED');
        expect(result.steps.map((s) => [s.id, s.status, s.output])).toEqual([
          ['pause', 'DONE', { duration: '1.5s' }],
          ['after', 'DONE', { done: true }],
        ]);
      });
    });

    it('fails the step when the wait duration is invalid', async () => {
      const steps: StepDefinition[] = [{ id: 'pause', wait: { duration: '1h' } }];
      await withWorker(async (start) => {
        const failure = await expectRunFailure(await start(await runInput(steps, {})));
        expect(failure.message).toMatch(/^step "pause" failed: wait.duration: "1h" is not a duration/);
      });
    });

    describe('ownership steps', () => {
      beforeAll(async () => {
        await db.query(
          `INSERT INTO users (id, display_name, type) VALUES ('svc-1', 'Robot', 'USER_TYPE_SERVICE'), ('human-1', 'Ann', 'USER_TYPE_HUMAN')`,
        );
        await db.query(`INSERT INTO apps (id, display_name) VALUES ('app-1', 'App one')`);
        await db.query(
          `INSERT INTO app_entitlements (id, app_id, display_name, slug, record) VALUES ('ent-1', 'app-1', 'Admin', 'admin', '{}'::jsonb)`,
        );
      });

      async function owners(): Promise<Array<{ user_id: string; role_slug: string }>> {
        return db.query('SELECT user_id, role_slug FROM entitlement_owners ORDER BY user_id, role_slug');
      }

      it('creates then deletes an ownership, reading the first step output in the last', async () => {
        const fields = { roleSlug: "'owner'", appId: "'app-1'", entitlementId: "ctx.trigger['entitlement']" };
        const steps: StepDefinition[] = [
          {
            id: 'own',
            when: "ctx.trigger.kind == 'hire'",
            createEntitlementOwner: { userId: 'ctx.trigger.service_account', ...fields },
          },
          { id: 'check', setVariables: { createdAt: 'ctx.steps.own.createdAt' } },
          { id: 'pause', wait: { duration: '0.1s' } },
          { id: 'undo', deleteEntitlementOwner: { userId: 'ctx.steps.own.userId', ...fields } },
          { id: 'again', deleteEntitlementOwner: { userId: 'ctx.steps.own.userId', ...fields } },
        ];
        const trigger = { kind: 'hire', service_account: 'svc-1', entitlement: 'ent-1' };
        await withWorker(async (start) => {
          const first = await (await start(await runInput(steps.slice(0, 2), trigger))).result();
          expect(first.steps[0]).toMatchObject({
            id: 'own',
            kind: 'createEntitlementOwner',
            status: 'DONE',
            output: { userId: 'svc-1', roleSlug: 'owner', appId: 'app-1', entitlementId: 'ent-1' },
          });
          const createdAt = first.steps[0]?.output?.createdAt;
          expect(typeof createdAt).toBe('string');
          expect(first.steps[1]?.output).toEqual({ createdAt });
          expect(await owners()).toEqual([{ user_id: 'svc-1', role_slug: 'owner' }]);

          // the whole automation: create again (idempotent, same createdAt), delete, delete again
          const all = await (await start(await runInput(steps, trigger))).result();
          expect(all.steps.map((s) => s.status)).toEqual(['DONE', 'DONE', 'DONE', 'DONE', 'DONE']);
          expect(all.steps[0]?.output?.createdAt).toBe(createdAt);
          expect(all.steps[3]?.output).toEqual({ deleted: true });
          expect(all.steps[4]?.output).toEqual({ deleted: false });
          expect(await owners()).toEqual([]);
        });
      });

      it('fails without retrying for an unknown entitlement or a non-service user', async () => {
        const step = (userId: string, entitlementId: string): StepDefinition => ({
          id: 'own',
          createEntitlementOwner: {
            userId: `'${userId}'`,
            roleSlug: "'owner'",
            appId: "'app-1'",
            entitlementId: `'${entitlementId}'`,
          },
        });
        await withWorker(async (start) => {
          const missing = await expectRunFailure(await start(await runInput([step('svc-1', 'ent-404')], {})));
          expect(missing.message).toBe(
            'step "own" failed: createEntitlementOwner: app entitlement "app-1/ent-404" not found',
          );
          const human = await expectRunFailure(await start(await runInput([step('human-1', 'ent-1')], {})));
          expect(human.message).toMatch(/^step "own" failed: createEntitlementOwner: .*service account/);
        });
      });

      it('fails the step when a field does not evaluate to a string', async () => {
        const steps: StepDefinition[] = [
          {
            id: 'own',
            createEntitlementOwner: {
              userId: 'ctx.trigger.n',
              roleSlug: "'owner'",
              appId: "'app-1'",
              entitlementId: "'ent-1'",
            },
          },
        ];
        await withWorker(async (start) => {
          const failure = await expectRunFailure(await start(await runInput(steps, { n: 7 })));
          expect(failure.message).toBe(
            'step "own" failed: createEntitlementOwner.userId: must evaluate to a non-empty string, got number 7',
          );
          // An expression that cannot be evaluated names its field, as a setVariables step's does.
          const missing = await expectRunFailure(
            await start(
              await runInput(
                [
                  {
                    id: 'own',
                    createEntitlementOwner: {
                      userId: 'ctx.trigger.nobody',
                      roleSlug: "'owner'",
                      appId: "'app-1'",
                      entitlementId: "'ent-1'",
                    },
                  },
                ],
                { n: 7 },
              ),
            ),
          );
          expect(missing.message).toMatch(/^step "own" failed: userId: .*nobody/);
        });
      });

      describe('the first attempt, as a local activity', () => {
        const own = (roleSlug: string, retry?: StepDefinition['retry'], entitlementId = 'ent-1'): StepDefinition => ({
          id: 'own',
          ...(retry ? { retry } : {}),
          createEntitlementOwner: {
            userId: "'svc-1'",
            roleSlug: `'${roleSlug}'`,
            appId: "'app-1'",
            entitlementId: `'${entitlementId}'`,
          },
        });

        /** The store, except that its first `failures` ownership statements (src/store/owners.ts recordOwner) fail as an unreachable database does; `calls` counts them. */
        function failingFirst(failures: number): Db & { calls: () => number } {
          let calls = 0;
          return Object.assign(Object.create(db) as Db, {
            calls: () => calls,
            query: (sql: string, params?: unknown[]) =>
              /INSERT INTO entitlement_owners/.test(sql) && ++calls <= failures
                ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'))
                : db.query(sql, params),
          });
        }

        /**
         * The patches a run records with an ownership step: one marker (since 0.15.0 `approval-context`,
         * which took over from `run-records-one-patch-marker`), asked in its first activation, under
         * which the run marks its approval waits and the effect evaluates the step's fields itself and
         * makes its first attempt locally, without a marker of their own.
         */
        const BOTH_PATCHES = [APPROVAL_CONTEXT_PATCH];

        /** What the run's history shows of the ownership effect: local attempts (ok or failed), timers, regular activities, patches, and how many evaluations of their own. */
        async function effectEvents(handle: WorkflowHandle<typeof automation>) {
          const history = await handle.fetchHistory();
          const shown = {
            local: [] as Array<'completed' | 'failed'>,
            timers: [] as number[],
            scheduled: [] as Array<{ maximumAttempts: number; initialIntervalMs: number }>,
            patches: [] as string[],
            evaluations: 0,
          };
          for (const event of history.events ?? []) {
            const marker = event.markerRecordedEventAttributes;
            if (marker?.markerName === 'core_patch') {
              shown.patches.push(
                JSON.parse(Buffer.from(marker.details?.['patch-data']?.payloads?.[0]?.data ?? []).toString()).id,
              );
            }
            if (marker && localActivityType(marker) === 'createEntitlementOwner')
              shown.local.push(marker.failure ? 'failed' : 'completed');
            if (marker && localActivityType(marker) === 'evaluateStep') shown.evaluations += 1;
            const timer = event.timerStartedEventAttributes;
            if (timer) shown.timers.push(tsToMs(timer.startToFireTimeout));
            const scheduled = event.activityTaskScheduledEventAttributes;
            if (scheduled?.activityType?.name === 'createEntitlementOwner') {
              shown.scheduled.push({
                maximumAttempts: scheduled.retryPolicy?.maximumAttempts ?? -1,
                initialIntervalMs: tsToMs(scheduled.retryPolicy?.initialInterval),
              });
            }
          }
          return shown;
        }

        it('records one patch marker and one TemporalChangeVersion upsert per run, not one of each per change it takes', async () => {
          await withWorker(async (start) => {
            const steps: StepDefinition[] = [
              { id: 'vars', setVariables: { who: "'svc-1'" } },
              own('one-marker'),
              { id: 'done', setVariables: { at: 'ctx.steps.own.createdAt' } },
            ];
            const handle = await start(await runInput(steps, {}));
            expect((await handle.result()).status).toBe('COMPLETED');
            const events = (await handle.fetchHistory()).events ?? [];
            const changeVersions = events
              .map(
                (event) =>
                  event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields
                    ?.TemporalChangeVersion?.data,
              )
              .filter((data) => data !== undefined && data !== null)
              .map((data) => JSON.parse(Buffer.from(data).toString()) as unknown);
            expect(changeVersions).toEqual([[APPROVAL_CONTEXT_PATCH]]);
            expect((await effectEvents(handle)).patches).toEqual([APPROVAL_CONTEXT_PATCH]);
          });
        });

        it('makes the ownership in the workflow task: one local activity marker (it evaluates the fields itself), no activity task', async () => {
          await withWorker(async (start) => {
            const handle = await start(await runInput([own('local-ok')], {}));
            const result = await handle.result();
            expect(result.steps[0]).toMatchObject({
              status: 'DONE',
              output: { userId: 'svc-1', roleSlug: 'local-ok', appId: 'app-1', entitlementId: 'ent-1' },
            });
            expect(await effectEvents(handle)).toEqual({
              local: ['completed'],
              timers: [],
              scheduled: [],
              patches: BOTH_PATCHES,
              evaluations: 0,
            });
          });
          expect((await owners()).filter((o) => o.role_slug === 'local-ok')).toEqual([
            { user_id: 'svc-1', role_slug: 'local-ok' },
          ]);
        });

        it('after a failed first attempt, runs the rest of the step policy as a regular activity: same attempts in all, same intervals', async () => {
          const flaky = failingFirst(2);
          await withWorker(async (start) => {
            const retry = {
              maximumAttempts: 4,
              initialInterval: '0.1s',
              backoffCoefficient: 3,
              maximumInterval: '10s',
            };
            const handle = await start(await runInput([own('after-retry', retry)], {}));
            const result = await handle.result();
            expect(result.steps[0]).toMatchObject({ status: 'DONE', output: { roleSlug: 'after-retry' } });
            // local attempt 1 failed; 100 ms; the regular activity: attempt 2 failed, 300 ms, attempt 3 succeeded
            expect(await effectEvents(handle)).toEqual({
              local: ['failed'],
              timers: [100],
              scheduled: [{ maximumAttempts: 3, initialIntervalMs: 300 }],
              patches: BOTH_PATCHES,
              evaluations: 0,
            });
          }, flaky);
          expect(flaky.calls()).toBe(3);
          expect((await owners()).filter((o) => o.role_slug === 'after-retry')).toHaveLength(1);
        });

        it('a step allowed one attempt fails with the local attempt, and so does a failure that is never retried', async () => {
          const flaky = failingFirst(1);
          await withWorker(async (start) => {
            const once = await start(await runInput([own('only-once', { maximumAttempts: 1 })], {}));
            expect((await expectRunFailure(once)).message).toBe(
              'step "own" failed: connect ECONNREFUSED 127.0.0.1:5432',
            );
            expect(await effectEvents(once)).toEqual({
              local: ['failed'],
              timers: [],
              scheduled: [],
              patches: BOTH_PATCHES,
              evaluations: 0,
            });

            const missing = await start(await runInput([own('x', undefined, 'ent-404')], {}));
            expect((await expectRunFailure(missing)).message).toBe(
              'step "own" failed: createEntitlementOwner: app entitlement "app-1/ent-404" not found',
            );
            expect(await effectEvents(missing)).toEqual({
              local: ['failed'],
              timers: [],
              scheduled: [],
              patches: BOTH_PATCHES,
              evaluations: 0,
            });
          }, flaky);
          expect((await owners()).filter((o) => o.role_slug === 'only-once')).toEqual([]);
        });
      });

      it('runs only the stored steps of the referenced version: steps in a forged input never run', async () => {
        const own: StepDefinition = {
          id: 'own',
          createEntitlementOwner: {
            userId: "'svc-1'",
            roleSlug: "'forged'",
            appId: "'app-1'",
            entitlementId: "'ent-1'",
          },
        };
        await withWorker(async (start) => {
          // A real version with a harmless step, and an input that also carries an ownership step of its own.
          const input = await runInput([{ id: 'vars', setVariables: { x: '1' } }], {});
          const forged = { ...input, steps: [own], automationName: 'forged' } as AutomationRunInput;
          const result = await (await start(forged)).result();
          expect(result.steps.map((s) => [s.id, s.status])).toEqual([['vars', 'DONE']]);

          // A version that does not exist: the run fails at once, before any step.
          const missing = await expectRunFailure(
            await start({ ...input, eventId: randomUUID(), version: 99, steps: [own] } as AutomationRunInput),
          );
          expect(missing.type).toBe('AutomationVersionNotFound');
          expect(missing.message).toBe(`automation ${JSON.stringify(input.automationId)} has no published version 99`);
        });
        expect((await owners()).filter((o) => o.role_slug === 'forged')).toEqual([]);
      });

      it('a log step writes its line to the history (as a summary) and answers it as its output', async () => {
        const steps: StepDefinition[] = [
          { id: 'note', log: { message: "'offboarding ' + ctx.trigger.user" } },
          { id: 'loud', log: { message: "'done'", level: 'warn' } },
        ];
        await withWorker(async (start) => {
          const handle = await start(await runInput(steps, { user: 'u-7' }));
          const result = await handle.result();
          expect(result.steps.map((s) => [s.id, s.kind, s.status, s.output])).toEqual([
            ['note', 'log', 'DONE', { level: 'info', message: 'offboarding u-7' }],
            ['loud', 'log', 'DONE', { level: 'warn', message: 'done' }],
          ]);
          const history = await handle.fetchHistory();
          await decodePayloadsInPlace(history, [testCodec()]); // summaries are encrypted in Temporal
          const summaries = (history.events ?? [])
            .map((event) => event.userMetadata?.summary?.data)
            .filter((data): data is Uint8Array => data instanceof Uint8Array)
            .map((data) => JSON.parse(Buffer.from(data).toString('utf8')) as string);
          expect(summaries).toEqual(expect.arrayContaining(['note: offboarding u-7', 'loud: done']));
        });
      });
    });
  });
}

describe('the workflow bundle', () => {
  it('holds the step registry and no runtime code of the service (CEL, store, HTTP, webhooks, activities)', () => {
    const modules = [...bundle.code.matchAll(/\/\*\*\*\/ "\.\/([^"]+)"/g)].map((m) => m[1]!);
    expect(modules).toEqual(
      expect.arrayContaining([
        'workflows/automation.ts',
        'src/steps/index.ts',
        'src/steps/log.ts',
        'src/steps/call-webhook.ts',
      ]),
    );
    expect(
      modules.filter((path) => /^(src\/(cel|store|http|webhooks|auth|domain|temporal)|activities)\//.test(path)),
    ).toEqual([]);
  });
});
