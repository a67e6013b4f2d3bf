/**
 * The ensureUser step end to end: a real run on the Temporal dev server and a real worker. The step
 * finds the user of an email case-insensitively (the oldest of several) or makes one, with its
 * `user.created` event; one user per lower-cased email even when many attempts race (the activity
 * called at once, as concurrent runs and a retried attempt would); a value that is no email fails
 * the step naming the field; a `type` that is not a user type is refused on save.
 */
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { deliver, hmacEvent, listenerPath, startStack, type AutomationView, type Stack } from '../helpers/stack';
import { expectRunFailure } from '../helpers/temporal';
import { createUserActivities } from '../../activities/users';

describe('ensureUser step in a real run', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.close());

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);
  const unique = () => randomBytes(4).toString('hex');
  const usersWith = async (email: string) =>
    stack.service.deps.db.query<{ id: string; display_name: string; type: string }>(
      'SELECT id, display_name, type FROM users WHERE lower(email) = lower($1) ORDER BY created_at, id',
      [email],
    );
  const userCreatedEvents = async (userId: string) =>
    (
      await stack.service.deps.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM directory_events WHERE type = 'user.created' AND payload::text LIKE $1`,
        [`%${userId}%`],
      )
    )[0]!.n;
  async function run(created: { automation: AutomationView; signingSecret?: string }, payload: unknown) {
    const res = await deliver(stack, listenerPath(created.automation), hmacEvent(created.signingSecret!, payload));
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }
  async function stepOf(executionId: string) {
    await stack.client.workflow.getHandle(executionId).result();
    const execution = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`));
    return execution.body.execution.steps[0] as { status: string; output: { userId: string; created: boolean } };
  }
  const joiner = (type?: string) =>
    stack.createAutomation({
      displayName: `joiner ${unique()}`,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        {
          id: 'person',
          ensureUser: { email: 'ctx.trigger.email', displayName: 'ctx.trigger.name', ...(type ? { type } : {}) },
        },
      ],
    });

  it('makes the user of a new email once, then finds it whatever the case; one user.created event', async () => {
    const created = await joiner();
    const local = `ada.${unique()}`;
    const first = await stepOf(await run(created, { email: `${local}@Example.com`, name: 'Ada Lovelace' }));
    expect(first).toMatchObject({ status: 'DONE', output: { created: true, userId: expect.any(String) } });
    const again = await stepOf(await run(created, { email: `${local.toUpperCase()}@EXAMPLE.COM`, name: 'Other' }));
    expect(again).toMatchObject({ status: 'DONE', output: { created: false, userId: first.output.userId } });

    const user = await auth(api().get(`/api/v1/users/${first.output.userId}`)).expect(200);
    expect(user.body.user).toMatchObject({
      displayName: 'Ada Lovelace',
      email: `${local}@Example.com`,
      type: 'USER_TYPE_HUMAN',
    });
    expect(await usersWith(`${local}@example.com`)).toHaveLength(1);
    expect(await userCreatedEvents(first.output.userId)).toBe(1);
  });

  it('finds the oldest of several users of one email; a made user takes the step type', async () => {
    const email = `twin.${unique()}@example.com`;
    const older = await auth(api().post('/api/v1/users'))
      .send({ displayName: 'Older', email: email.toUpperCase(), type: 'USER_TYPE_HUMAN' })
      .expect(200);
    await auth(api().post('/api/v1/users')).send({ displayName: 'Newer', email, type: 'USER_TYPE_HUMAN' }).expect(200);
    const found = await stepOf(await run(await joiner(), { email, name: 'x' }));
    expect(found.output).toEqual({ userId: older.body.user.id, created: false });

    const robot = `robot.${unique()}@example.com`;
    const made = await stepOf(await run(await joiner('USER_TYPE_SERVICE'), { email: robot, name: 'Robot' }));
    expect(made.output.created).toBe(true);
    expect((await usersWith(robot))[0]).toMatchObject({ id: made.output.userId, type: 'USER_TYPE_SERVICE' });
  });

  it('makes one user per lower-cased email when eight attempts race', async () => {
    const activities = createUserActivities({ db: stack.service.deps.db });
    const local = `race.${unique()}`;
    const spellings = [`${local}@example.com`, `${local.toUpperCase()}@example.com`, `${local}@EXAMPLE.com`];
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        activities.ensureUser({
          stepId: 'person',
          actor: `automation:a:${i}`,
          expressions: { email: 'ctx.trigger.email' },
          ctx: { trigger: { email: spellings[i % spellings.length] }, steps: {} },
        }),
      ),
    );
    expect(new Set(answers.map((a) => a.userId)).size).toBe(1);
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    expect(await usersWith(`${local}@example.com`)).toHaveLength(1);
    expect(await userCreatedEvents(answers[0]!.userId)).toBe(1);
  });

  it('fails the step naming the field when a value is no email or no name; nothing is made', async () => {
    const created = await joiner();
    const notEmail = await expectRunFailure(
      stack.client.workflow.getHandle(await run(created, { email: 42, name: 'x' })),
    );
    expect(notEmail.message).toContain('ensureUser.email: must evaluate to an email address, got');
    const local = `blank.${unique()}@example.com`;
    const blank = await expectRunFailure(
      stack.client.workflow.getHandle(await run(created, { email: local, name: ' ' })),
    );
    expect(blank.message).toContain('ensureUser.displayName: must evaluate to a non-empty string');
    expect(await usersWith(local)).toHaveLength(0);
  });

  it('refuses on save a type that is no user type, and a step without email, naming the field', async () => {
    const save = (ensureUser: Record<string, unknown>) =>
      auth(api().post('/api/v1/automations')).send({
        displayName: 'bad joiner',
        trigger: { incomingWebhook: { authMethod: 'HMAC' } },
        steps: [{ id: 'person', ensureUser }],
      });
    const robot = await save({ email: 'ctx.trigger.email', type: 'USER_TYPE_ROBOT' });
    expect(robot.status).toBe(400);
    expect(JSON.stringify(robot.body)).toContain('steps[0].ensureUser.type');
    const none = await save({ displayName: "'x'" });
    expect(none.status).toBe(400);
    expect(JSON.stringify(none.body)).toContain('steps[0].ensureUser.email');
  });
});
