/**
 * Published versions: each publish snapshots the automation (display name and steps) under its
 * version number, and the receiver starts runs with the latest published snapshot, never the
 * draft. Trigger settings stay live. A run keeps the version it started with, even when the
 * automation is edited, republished or unpublished while it waits. Real HTTP, store, Temporal.
 */
import request from 'supertest';
import { startStack, hmacEvent, deliver, listenerPath, type Stack, type AutomationView } from '../helpers/stack';
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import { migrate, MIGRATIONS } from '../../src/store/migrations';
import { getLatestPublishedVersion } from '../../src/store/automation-versions';
import { decodePayloadsInPlace } from '../../src/temporal/payloads';
import type { AutomationRunInput, RunState } from '../../src/contract/run';
import { poll } from '../helpers/wait';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const tagSteps = (tag: string) => [
  { id: 'vars', setVariables: { tag: `"${tag}"`, employee: 'ctx.trigger.employee_id' } },
];

describe('automation versions', () => {
  let stack: Stack;
  const auth = (test: request.Test) => test.set('Authorization', `Bearer ${stack.adminToken}`);
  const api = {
    get: (path: string) => auth(request(stack.service.server).get(path)),
    post: (path: string, body?: object) => auth(request(stack.service.server).post(path)).send(body ?? {}),
  };

  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.close());

  async function create(
    displayName: string,
    steps: unknown[],
  ): Promise<{ automation: AutomationView; secret: string }> {
    const created = await stack.createAutomation({
      displayName,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps,
    });
    return { automation: created.automation, secret: created.signingSecret! };
  }

  async function edit(id: string, automation: object, updateMask: string): Promise<Json> {
    const res = await api.post(`/api/v1/automations/${id}`, { automation, updateMask });
    expect(res.status).toBe(200);
    return res.body.automation;
  }

  async function publish(id: string, action: 'publish' | 'unpublish' = 'publish'): Promise<Json> {
    const res = await api.post(`/api/v1/automations/${id}/${action}`);
    expect(res.status).toBe(200);
    return res.body.automation;
  }

  async function run(target: {
    automation: AutomationView;
    secret: string;
  }): Promise<{ executionId: string; input: AutomationRunInput }> {
    const res = await deliver(stack, listenerPath(target.automation), hmacEvent(target.secret, { employee_id: '7' }));
    expect(res.status).toBe(200);
    const handle = stack.client.workflow.getHandle(res.body.executionId);
    const history = await handle.fetchHistory();
    // Payloads are encrypted in the history: decode them with the client's codec first.
    await decodePayloadsInPlace(history.events ?? [], stack.client.options.loadedDataConverter.payloadCodecs);
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const { defaultPayloadConverter } = await import('@temporalio/common');
    const input = defaultPayloadConverter.fromPayload(started!.input!.payloads![0]!) as AutomationRunInput;
    return { executionId: res.body.executionId, input };
  }

  /**
   * Long enough that the API calls made while a run waits (a few, each well under a second) end
   * before the wait does even on a loaded machine; `expectWaiting` afterwards proves they did.
   */
  const WAIT = '20s';
  const expectWaiting = (got: Json): void => {
    expect([got.status, got.steps?.map((s: Json) => s.status)]).toEqual(['RUNNING', ['WAITING', 'PENDING']]);
  };

  const resultOf = (executionId: string): Promise<RunState> => stack.client.workflow.getHandle(executionId).result();
  const execution = async (executionId: string): Promise<Json> => {
    const res = await api.get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`);
    expect(res.status).toBe(200);
    return res.body.execution;
  };

  it('runs the latest published snapshot: a draft edit changes nothing until it is published', async () => {
    const target = await create('Versioned v1', tagSteps('v1'));
    expect(target.automation).toMatchObject({ published: true, version: 1, publishedVersion: 1 });

    const first = await run(target);
    expect(first.input).toEqual({
      automationId: target.automation.id,
      version: 1,
      listenerId: target.automation.trigger.incomingWebhook.listenerId,
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      receivedAt: expect.stringMatching(/^\d{4}-/),
      trigger: { employee_id: '7' },
    });
    expect((await resultOf(first.executionId)).steps[0]!.output).toEqual({ tag: 'v1', employee: '7' });
    expect(await execution(first.executionId)).toMatchObject({ version: 1, status: 'COMPLETED' });

    // Edit the draft: steps and name. Still published; new runs keep running v1.
    const draft = await edit(
      target.automation.id,
      { displayName: 'Versioned v2', steps: tagSteps('v2') },
      'displayName,steps',
    );
    expect(draft).toMatchObject({ published: true, version: 2, publishedVersion: 1, displayName: 'Versioned v2' });
    const got = await api.get(`/api/v1/automations/${target.automation.id}`);
    expect(got.body.automation).toMatchObject({ published: true, version: 2, steps: tagSteps('v2') });

    const second = await run(target);
    expect(second.input).toMatchObject({ version: 1 });
    expect((await resultOf(second.executionId)).steps[0]!.output).toEqual({ tag: 'v1', employee: '7' });
    const described = await stack.client.workflow.getHandle(second.executionId).describe();
    expect(described.memo).toEqual({ automationName: 'Versioned v1', automationVersion: 1 });
    expect(await execution(second.executionId)).toMatchObject({ version: 1 });

    // Publish: v2 from now on.
    expect(await publish(target.automation.id)).toMatchObject({ published: true, version: 2, publishedVersion: 2 });
    const third = await run(target);
    expect(third.input).toMatchObject({ version: 2 });
    expect((await resultOf(third.executionId)).steps[0]!.output).toEqual({ tag: 'v2', employee: '7' });
    expect(await execution(third.executionId)).toMatchObject({ version: 2, status: 'COMPLETED' });

    const listed = await poll(
      () => api.get(`/api/v1/automations/${target.automation.id}/executions`),
      (r) => r.body.list?.length === 3,
    );
    const versions = new Map(listed.body.list.map((item: Json) => [item.execution.id, item.execution.version]));
    expect(versions).toEqual(
      new Map([
        [first.executionId, 1],
        [second.executionId, 1],
        [third.executionId, 2],
      ]),
    );
  });

  it('keeps trigger settings live: disabling the trigger in the draft refuses events at once', async () => {
    const target = await create('Live trigger', tagSteps('live'));
    await edit(
      target.automation.id,
      { trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: false } } },
      'trigger',
    );
    const refused = await deliver(
      stack,
      listenerPath(target.automation),
      hmacEvent(target.secret, { employee_id: '7' }),
    );
    expect(refused.status).toBe(404);
    await edit(
      target.automation.id,
      { trigger: { incomingWebhook: { authMethod: 'HMAC', enabled: true } } },
      'trigger',
    );
    const accepted = await run(target);
    expect(accepted.input.version).toBe(1); // the trigger edits made drafts 2 and 3; v1 is still the published one
  });

  it('unpublish, then publish again without an edit, runs the same version', async () => {
    const target = await create('Republished', tagSteps('same'));
    expect(await publish(target.automation.id, 'unpublish')).toMatchObject({
      published: false,
      version: 1,
      publishedVersion: 1,
    });
    expect((await deliver(stack, listenerPath(target.automation), hmacEvent(target.secret, {}))).status).toBe(404);
    expect(await publish(target.automation.id)).toMatchObject({ published: true, version: 1, publishedVersion: 1 });
    expect((await run(target)).input.version).toBe(1);
  });

  it('a run started before an edit and a publish finishes with the steps it started with', async () => {
    const oldSteps = [
      { id: 'pause', wait: { duration: WAIT } },
      { id: 'vars', setVariables: { tag: '"old"' } },
    ];
    const target = await create('Long run', oldSteps);
    const started = await run(target);
    expectWaiting(
      await poll(
        () => execution(started.executionId),
        (e) => e.steps?.[0]?.status === 'WAITING',
      ),
    );

    const newSteps = [
      { id: 'vars', setVariables: { tag: '"new"' } },
      { id: 'extra', setVariables: { more: '1' } },
    ];
    await edit(target.automation.id, { steps: newSteps }, 'steps');
    expect(await publish(target.automation.id)).toMatchObject({ version: 2, publishedVersion: 2 });
    // Still waiting: the edit and the publish really happened while the run was in flight.
    const during = await execution(started.executionId);
    expectWaiting(during);
    expect(during.steps.map((s: Json) => s.id)).toEqual(['pause', 'vars']);

    const result = await resultOf(started.executionId);
    expect(result.status).toBe('COMPLETED');
    expect(result.steps.map((s) => [s.id, s.status, s.output])).toEqual([
      ['pause', 'DONE', { duration: WAIT }],
      ['vars', 'DONE', { tag: 'old' }],
    ]);
    expect(await execution(started.executionId)).toMatchObject({ version: 1, status: 'COMPLETED' });

    const after = await run(target);
    expect(after.input.version).toBe(2);
    expect((await resultOf(after.executionId)).steps.map((s) => [s.id, s.output])).toEqual([
      ['vars', { tag: 'new' }],
      ['extra', { more: 1 }],
    ]);
  });

  it('a run keeps going when its automation is unpublished while it waits', async () => {
    const target = await create('Unpublished mid-run', [
      { id: 'pause', wait: { duration: WAIT } },
      { id: 'vars', setVariables: { tag: '"finished"' } },
    ]);
    const started = await run(target);
    expectWaiting(
      await poll(
        () => execution(started.executionId),
        (e) => e.steps?.[0]?.status === 'WAITING',
      ),
    );
    expect(await publish(target.automation.id, 'unpublish')).toMatchObject({ published: false });
    expect((await deliver(stack, listenerPath(target.automation), hmacEvent(target.secret, {}))).status).toBe(404);
    expectWaiting(await execution(started.executionId));

    const result = await resultOf(started.executionId);
    expect(result.status).toBe('COMPLETED');
    expect(result.steps[1]!.output).toEqual({ tag: 'finished' });
    expect(await execution(started.executionId)).toMatchObject({ version: 1, status: 'COMPLETED' });
  });
});

for (const target of DATABASES) {
  describeOn(target)(`automation_versions migration (${target.label})`, () => {
    it('backfills a snapshot for every automation published before it', async () => {
      const db = await openTestDb(target);
      try {
        const version = MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE automation_versions')) + 1;
        expect(version).toBeGreaterThan(0);
        // Back to the schema just before this migration, with a published and a draft automation.
        await db.exec('DROP TABLE automation_versions');
        await db.query('DELETE FROM schema_migrations WHERE version = $1', [version]);
        for (const [id, published] of [
          ['live', true],
          ['draft', false],
        ] as const) {
          await db.query(
            `INSERT INTO automations (id, display_name, trigger, steps, listener_id, published, version)
             VALUES ($1, $2, '{"authMethod":"HMAC"}'::jsonb, $3::jsonb, $4, $5, 4)`,
            [id, `name ${id}`, JSON.stringify(tagSteps(id)), `listener-${id}`, published],
          );
        }
        await migrate(db);
        expect(await getLatestPublishedVersion(db, 'live')).toMatchObject({
          automationId: 'live',
          version: 4,
          snapshot: { displayName: 'name live', steps: tagSteps('live') },
        });
        expect(await getLatestPublishedVersion(db, 'draft')).toBeUndefined();
      } finally {
        await db.close();
      }
    });
  });
}
