/**
 * The notify step end to end: a real run on the Temporal dev server, a real worker and a local
 * HTTP receiver standing in for a Slack-compatible incoming webhook whose URL (with its token) is a
 * named outbound secret. The receiver gets `{"text": …}` as JSON with the call's Idempotency-Key;
 * the run's history and execution view never hold the URL's token; a value that is no URL the step
 * may post to (not a URL, not https, credentials, a non-public address, an origin the secret does
 * not allow) fails the step with one text naming the secret only, and sends nothing.
 */
import request from 'supertest';
import { deliver, hmacEvent, listenerPath, startStack, type AutomationView, type Stack } from '../helpers/stack';
import { expectRunFailure, historyText } from '../helpers/temporal';
import { startReceiver, type Receiver } from '../helpers/receiver';

describe('notify step in a real run', () => {
  let stack: Stack;
  let receiver: Receiver;
  let origin: string;
  const TOKEN = 'T0000/B0000/notifyTokenXYZ123';
  /** What the receiver got, in the fields the tests compare. */
  const received = () =>
    receiver.received.map((r) => ({
      url: r.path,
      contentType: r.headers['content-type'],
      idempotencyKey: r.headers['idempotency-key'],
      body: r.body.toString('utf8'),
    }));

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    origin = receiver.origin;
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
  });

  const api = () => request(stack.service.server);
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${stack.adminToken}`);
  const secret = (name: string, value: string, allowedOrigins: string[]) =>
    auth(api().post('/api/v1/secrets')).send({ name, value, allowedOrigins }).expect(200);
  const automation = (webhook: string) =>
    stack.createAutomation({
      displayName: `notify ${webhook}`,
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'tell', retry: { maximumAttempts: 1 }, notify: { webhook, text: "'Offboarded ' + ctx.trigger.who" } },
      ],
    });
  async function run(
    created: { automation: AutomationView; signingSecret?: string },
    payload: unknown,
  ): Promise<string> {
    const res = await deliver(stack, listenerPath(created.automation), hmacEvent(created.signingSecret!, payload));
    expect(res.status).toBe(200);
    return res.body.executionId as string;
  }

  it('posts {"text": …} to the webhook the secret holds, with the call key; the token stays out of the run', async () => {
    await secret('team_hook', `${origin}/services/${TOKEN}`, [origin]);
    const created = await automation('team_hook');
    const executionId = await run(created, { who: 'ada' });
    await stack.client.workflow.getHandle(executionId).result();

    expect(received()).toHaveLength(1);
    expect(received()[0]).toEqual({
      url: `/services/${TOKEN}`,
      contentType: 'application/json',
      idempotencyKey: expect.stringMatching(/\S/),
      body: '{"text":"Offboarded ada"}',
    });
    const execution = await auth(api().get(`/api/v1/automation_executions/${encodeURIComponent(executionId)}`));
    expect(execution.body.execution.steps[0]).toMatchObject({
      id: 'tell',
      kind: 'notify',
      status: 'DONE',
      output: { status: 200, text: 'Offboarded ada' },
    });
    expect(execution.body.execution.steps[0].idempotencyKey).toBe(received()[0]!.idempotencyKey);
    expect(JSON.stringify(execution.body)).not.toContain(TOKEN);
    expect(await historyText(stack.client, executionId)).not.toContain(TOKEN);

    const dry = await auth(api().post(`/api/v1/automations/${created.automation.id}/test`)).send({
      payload: { who: 'bob' },
    });
    expect(dry.body.steps[0]).toMatchObject({
      status: 'WOULD_RUN',
      output: { webhook: 'team_hook', text: 'Offboarded bob' },
    });
  });

  it("answers every URL problem of the secret's value with one text naming the secret only, never the value's origin; nothing is sent", async () => {
    const before = receiver.received.length;
    const closed = await startReceiver(() => ({ status: 200, body: 'ok' }));
    const closedOrigin = closed.origin;
    await closed.close(); // nothing listens there any more
    // Each value fails the URL rules in its own way; each secret allows some origin.
    const values: Array<[string, string, string[]]> = [
      ['not_url_hook', 'sk_live_notAUrlAtAll0123456789', ['https://hooks.example']],
      ['ftp_hook', `ftp://hooks.example/services/${TOKEN}`, ['https://hooks.example']],
      ['creds_hook', `https://user:pw@hooks.example/services/${TOKEN}`, ['https://hooks.example']],
      ['metadata_hook', `http://169.254.169.254/services/${TOKEN}`, ['http://169.254.169.254']],
      ['elsewhere_hook', `${origin}/services/${TOKEN}`, ['https://hooks.slack.com']],
    ];
    const failures: Array<{ message: string; history: string }> = [];
    for (const [name, value, allowed] of values) {
      await secret(name, value, allowed);
      const executionId = await run(await automation(name), { who: 'eve' });
      const failure = await expectRunFailure(stack.client.workflow.getHandle(executionId));
      failures.push({
        message: failure.message.replace(`"${name}"`, '"<name>"'),
        history: await historyText(stack.client, executionId),
      });
    }
    expect(failures.map((f) => f.message)).toEqual(
      values.map(
        () =>
          'step "tell" failed: notify: webhook: secret "<name>" does not hold a URL this step may post to (an https URL of a public host, at an origin the secret allows)',
      ),
    );
    // Nothing of any value (host, origin, credentials, token) is in a run's history either.
    for (const { history } of failures) {
      for (const part of ['hooks.example', '169.254.169.254', 'user:pw', origin, TOKEN, 'notAUrl', 'ftp:'])
        expect([part, history.includes(part)]).toEqual([part, false]);
    }
    // A post that cannot reach its host fails without naming it.
    await secret('closed_hook', `${closedOrigin}/services/${TOKEN}`, [closedOrigin]);
    const closedRun = await run(await automation('closed_hook'), { who: 'eve' });
    const unreachable = await expectRunFailure(stack.client.workflow.getHandle(closedRun));
    expect(unreachable.message).toBe(
      'step "tell" failed: notify: webhook: the incoming webhook could not be reached, or did not answer in time',
    );
    expect(await historyText(stack.client, closedRun)).not.toContain(closedOrigin.replace('http://', ''));
    expect(receiver.received.length).toBe(before);
  });

  it('refuses on save a notify step whose secret does not exist, naming the field', async () => {
    const res = await auth(api().post('/api/v1/automations')).send({
      displayName: 'n',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'tell', notify: { webhook: 'no_such_hook', text: "'x'" } }],
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('steps[0].notify.webhook');
    expect(JSON.stringify(res.body)).toContain('secret \\"no_such_hook\\" does not exist');
  });
});
