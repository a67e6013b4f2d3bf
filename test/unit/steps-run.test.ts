/**
 * The step interpreters (src/steps/*.ts `run`), through `runStep`, against recording effects: CEL
 * evaluation is the real one (src/cel); the effects the workflow would turn into activities, timers
 * and updates are recorded, so that each test sees exactly what a run would ask for (the effect and
 * its input, the line logged, the wait and its timeout) and what the step outputs or fails with.
 * automation-dry-run.test.ts runs the same interpreters through the dry run.
 */
import { evaluateAll } from '../../src/cel';
import { StepError } from '../../src/errors';
import {
  describeValue,
  evaluateThenPerform,
  lastResult,
  runStep,
  STEP_REGISTRY,
  type ApprovalDecision,
  type RecordedEffect,
  type StepDefinition,
  type StepEffects,
} from '../../src/steps';
import { callWebhookEffect } from '../../src/steps/call-webhook';
import { notifyEffect } from '../../src/steps/notify';

interface Recorded {
  evaluations: string[];
  sleeps: Array<[number, string]>;
  parked: string[];
  annotations: Array<[string, string]>;
  approvals: Array<[number | undefined, string]>;
  asked: Array<{ title: string; details: Array<{ label: string; value: string }> }>;
  performed: Array<[string, unknown]>;
  failed: string[];
}

/** Effects that record what the step asks for; `decision` answers awaitApproval. */
function recording(trigger: unknown, decision?: ApprovalDecision): { effects: StepEffects; recorded: Recorded } {
  const recorded: Recorded = {
    evaluations: [],
    sleeps: [],
    parked: [],
    annotations: [],
    approvals: [],
    asked: [],
    performed: [],
    failed: [],
  };
  const effects: StepEffects = {
    async evaluate(expressions, what) {
      recorded.evaluations.push(what);
      return evaluateAll(expressions, { trigger, steps: {} });
    },
    async sleep(ms, what) {
      recorded.sleeps.push([ms, what]);
    },
    park(status) {
      recorded.parked.push(status);
    },
    async annotate(level, line) {
      recorded.annotations.push([level, line]);
    },
    async awaitApproval(timeoutMs, what, ask) {
      recorded.approvals.push([timeoutMs, what]);
      if (Object.keys(ask.expressions).length > 0) {
        recorded.evaluations.push('approval context');
        recorded.asked.push(ask.present(evaluateAll(ask.expressions, { trigger, steps: {} }), 'Default: a'));
      }
      return decision;
    },
    async fail(message) {
      recorded.failed.push(message);
      return { message };
    },
    async perform(effect, input) {
      recorded.performed.push([effect.name, input]);
      return { performed: effect.name };
    },
    async evaluateAndPerform(effect, expressions, what) {
      return evaluateThenPerform(this, effect, expressions, what);
    },
  };
  return { effects, recorded };
}

/** Runs one step; answers its outcome or the StepError it fails with, and what it asked for. */
async function run(step: StepDefinition, trigger: unknown = {}, decision?: ApprovalDecision) {
  const { effects, recorded } = recording(trigger, decision);
  try {
    return { outcome: await runStep(step, effects), recorded };
  } catch (err) {
    if (!(err instanceof StepError)) throw err;
    return { error: err.message, errorOutput: err.output, recorded };
  }
}

describe('when', () => {
  it('a false condition skips the step without running it; true runs it', async () => {
    const skipped = await run({ id: 's', when: 'ctx.trigger.go', log: { message: "'x'" } }, { go: false });
    expect(skipped.outcome).toEqual({ skipped: true });
    expect(skipped.recorded.evaluations).toEqual(['evaluate when']);
    expect(skipped.recorded.annotations).toEqual([]);
    const ran = await run({ id: 's', when: 'ctx.trigger.go', log: { message: "'x'" } }, { go: true });
    expect(ran.outcome).toEqual({ skipped: false, output: { level: 'info', message: 'x' } });
    expect(ran.recorded.evaluations).toEqual(['evaluate when', 'evaluate log']);
  });

  it('an empty or blank condition is no condition: it is not evaluated', async () => {
    for (const when of ['', '  ']) {
      const { outcome, recorded } = await run({ id: 's', when, log: { message: "'x'" } });
      expect(outcome).toEqual({ skipped: false, output: { level: 'info', message: 'x' } });
      expect(recorded.evaluations).toEqual(['evaluate log']);
    }
  });

  it('a condition that is not a boolean fails the step, saying what it gave', async () => {
    expect((await run({ id: 's', when: 'ctx.trigger.n', log: { message: "'x'" } }, { n: 1 })).error).toBe(
      'when: must evaluate to a boolean, got number 1',
    );
  });

  it('a stored step of no known kind fails, listing the kinds', async () => {
    const { error } = await run({ id: 's' } as unknown as StepDefinition);
    expect(error).toBe(`unknown step kind: expected one of ${Object.keys(STEP_REGISTRY).join(', ')}`);
  });

  it('a step of no known kind evaluates its condition first, as recorded runs did: skipped when false, failed when true', async () => {
    // A run's history has the condition's evaluation before the failure: the order cannot change without a patch.
    const step = { id: 's', when: 'ctx.trigger.go' } as unknown as StepDefinition;
    const skipped = await run(step, { go: false });
    expect(skipped.outcome).toEqual({ skipped: true });
    const failed = await run(step, { go: true });
    expect(failed.error).toMatch(/^unknown step kind/);
    expect(failed.recorded.evaluations).toEqual(['evaluate when']);
  });

  it('an interpreter that throws at once rejects the step (its promise), as an async one does', async () => {
    const { effects } = recording({});
    const throwing = {
      ...effects,
      evaluate: () => {
        throw new StepError('thrown at once');
      },
    } as StepEffects;
    const pending = runStep({ id: 's', setVariables: { a: '1' } }, throwing);
    await expect(pending).rejects.toThrow('thrown at once');
  });
});

describe('log', () => {
  it('annotates the line at the step’s level (info by default) and outputs it', async () => {
    const plain = await run({ id: 'l', log: { message: "'hello ' + ctx.trigger.who" } }, { who: 'ada' });
    expect(plain.outcome).toEqual({ skipped: false, output: { level: 'info', message: 'hello ada' } });
    expect(plain.recorded.annotations).toEqual([['info', 'hello ada']]);
    const warn = await run({ id: 'l', log: { message: "'careful'", level: 'error' } });
    expect(warn.recorded.annotations).toEqual([['error', 'careful']]);
  });

  it('cuts a line longer than 500 characters, with an ellipsis; 500 are kept whole', async () => {
    const exact = await run({ id: 'l', log: { message: 'ctx.trigger.s' } }, { s: 'a'.repeat(500) });
    expect(exact.recorded.annotations).toEqual([['info', 'a'.repeat(500)]]);
    const long = await run({ id: 'l', log: { message: 'ctx.trigger.s' } }, { s: 'b'.repeat(501) });
    expect(long.recorded.annotations).toEqual([['info', `${'b'.repeat(500)}…`]]);
    expect(long.outcome).toEqual({ skipped: false, output: { level: 'info', message: `${'b'.repeat(500)}…` } });
  });

  it('the executions view reads the line from the history, with the step’s level', () => {
    const view = STEP_REGISTRY.log.outputFromHistory!;
    const annotated: RecordedEffect[] = [
      { kind: 'evaluate', done: true, result: { message: 'x' } },
      { kind: 'annotate', done: true, result: { line: 'the line' } },
    ];
    expect(view({ message: "'x'" }, annotated)).toEqual({ level: 'info', message: 'the line' });
    expect(view({ message: "'x'", level: 'warn' }, annotated)).toEqual({ level: 'warn', message: 'the line' });
    expect(view({ message: "'x'" }, [{ kind: 'evaluate', done: true, result: { message: 'x' } }])).toBeNull();
  });
});

describe('fail', () => {
  it('ends the run with the message; longer than 2000 characters is cut with an ellipsis', async () => {
    const stop = await run({ id: 'f', fail: { message: 'ctx.trigger.m' } }, { m: 'stop' });
    expect(stop.recorded).toMatchObject({ evaluations: ['evaluate fail'], failed: ['stop'] });
    expect(
      (await run({ id: 'f', fail: { message: 'ctx.trigger.m' } }, { m: 'm'.repeat(2000) })).recorded.failed,
    ).toEqual(['m'.repeat(2000)]);
    expect(
      (await run({ id: 'f', fail: { message: 'ctx.trigger.m' } }, { m: 'm'.repeat(2001) })).recorded.failed,
    ).toEqual([`${'m'.repeat(2000)}…`]);
  });

  it('an empty message is an error, not a silent failure', async () => {
    expect((await run({ id: 'f', fail: { message: "''" } })).error).toBe(
      'fail.message: must evaluate to a non-empty string, got string ""',
    );
  });
});

describe('notify', () => {
  it('posts the text through the named webhook secret; longer than 4000 characters is cut', async () => {
    const short = await run({ id: 'n', notify: { webhook: 'team_hook', text: "'done'" } });
    expect(short.recorded).toMatchObject({
      evaluations: ['evaluate notify'],
      performed: [['notify', { webhook: 'team_hook', text: 'done' }]],
    });
    expect(short.outcome).toEqual({ skipped: false, output: { performed: 'notify' } });
    const exact = await run(
      { id: 'n', notify: { webhook: 'team_hook', text: 'ctx.trigger.t' } },
      { t: 't'.repeat(4000) },
    );
    expect(exact.recorded.performed).toEqual([['notify', { webhook: 'team_hook', text: 't'.repeat(4000) }]]);
    const long = await run(
      { id: 'n', notify: { webhook: 'team_hook', text: 'ctx.trigger.t' } },
      { t: 't'.repeat(4001) },
    );
    expect(long.recorded.performed).toEqual([['notify', { webhook: 'team_hook', text: `${'t'.repeat(4000)}…` }]]);
  });

  it('refuses an empty or non-string text before posting', async () => {
    for (const [text, got] of [
      ["''", 'string ""'],
      ['42', 'number 42'],
    ] as const) {
      const { error, recorded } = await run({ id: 'n', notify: { webhook: 'team_hook', text } });
      expect(error).toBe(`notify.text: must evaluate to a non-empty string, got ${got}`);
      expect(recorded.performed).toEqual([]);
    }
  });

  it('reads its webhook secret (for the checks on save); the activity gets 15 s', () => {
    expect(STEP_REGISTRY.notify.secretReads!({ webhook: 'team_hook', text: "'x'" })).toEqual([
      { field: 'webhook', name: 'team_hook' },
    ]);
    expect(notifyEffect.timeoutMs!({ webhook: 'team_hook', text: 'x' })).toBe(15_000);
  });
});

describe('ownership steps', () => {
  const ids = { userId: "'u-1'", roleSlug: "'owner'", appId: "'app-1'", entitlementId: 'ctx.trigger.ent' };

  it('perform their own effect with exactly the four evaluated ids', async () => {
    for (const kind of ['createEntitlementOwner', 'deleteEntitlementOwner'] as const) {
      const { recorded } = await run({ id: 'o', [kind]: ids } as unknown as StepDefinition, { ent: 'e-9' });
      expect(recorded.evaluations).toEqual([`evaluate ${kind}`]);
      expect(recorded.performed).toEqual([
        [kind, { userId: 'u-1', roleSlug: 'owner', appId: 'app-1', entitlementId: 'e-9' }],
      ]);
    }
  });

  it('refuse an id that is empty or not a string, naming the kind and the field', async () => {
    const empty = await run({ id: 'o', deleteEntitlementOwner: { ...ids, roleSlug: "''" } }, { ent: 'e' });
    expect(empty.error).toBe('deleteEntitlementOwner.roleSlug: must evaluate to a non-empty string, got string ""');
    expect(empty.recorded.performed).toEqual([]);
    const list = await run({ id: 'o', createEntitlementOwner: ids }, { ent: ['e'] });
    expect(list.error).toBe('createEntitlementOwner.entitlementId: must evaluate to a non-empty string, got a list');
  });
});

describe('setVariables', () => {
  it('outputs the evaluated variables; the view reads the last evaluation, or nothing', async () => {
    const set = await run({ id: 'v', setVariables: { a: '1 + 1', b: "'x'" } });
    expect(set.outcome).toEqual({ skipped: false, output: { a: 2, b: 'x' } });
    expect(set.recorded.evaluations).toEqual(['evaluate setVariables']);
    const view = STEP_REGISTRY.setVariables.outputFromHistory!;
    expect(view({ a: '1' }, [{ kind: 'evaluate', done: true, result: { a: 1 } }])).toEqual({ a: 1 });
    expect(view({ a: '1' }, [])).toEqual({});
  });

  it('an empty body asks for no evaluation', async () => {
    const { outcome, recorded } = await run({ id: 'v', setVariables: {} });
    expect(outcome).toEqual({ skipped: false, output: {} });
    expect(recorded.evaluations).toEqual([]);
  });
});

describe('wait', () => {
  it('parks as WAITING and sleeps the duration; outputs the duration', async () => {
    const { outcome, recorded } = await run({ id: 'w', wait: { duration: '1.5s' } });
    expect(recorded.parked).toEqual(['WAITING']);
    expect(recorded.sleeps).toEqual([[1500, 'wait 1.5s']]);
    expect(outcome).toEqual({ skipped: false, output: { duration: '1.5s' } });
    expect(STEP_REGISTRY.wait.outputFromHistory!({ duration: '1.5s' }, [])).toEqual({ duration: '1.5s' });
  });

  it('a zero duration sets no timer', async () => {
    const { recorded } = await run({ id: 'w', wait: { duration: '0s' } });
    expect(recorded.sleeps).toEqual([]);
  });
});

describe('waitForApproval', () => {
  const approved: ApprovalDecision = {
    decision: 'approved',
    by: 'client-1',
    at: '2026-11-24T07:00:00Z',
    comment: 'ok',
  };
  const rejected: ApprovalDecision = {
    decision: 'rejected',
    by: 'client-2',
    at: '2026-11-24T07:00:00Z',
    comment: 'no',
  };
  const timedOut = { decision: 'timed_out', by: null, at: null, comment: null };

  it('parks as WAITING_FOR_APPROVAL, with the timeout when there is one', async () => {
    const timed = await run({ id: 'a', waitForApproval: { timeout: '60s' } }, {}, approved);
    expect(timed.recorded.parked).toEqual(['WAITING_FOR_APPROVAL']);
    expect(timed.recorded.approvals).toEqual([[60_000, 'waiting for approval, up to 60s']]);
    expect(timed.outcome).toEqual({ skipped: false, output: approved });
    const open = await run({ id: 'a', waitForApproval: {} }, {}, approved);
    expect(open.recorded.approvals).toEqual([[undefined, 'waiting for approval']]);
  });

  it('a rejection fails the run (reason rejected, the decision as output), unless onReject is continue', async () => {
    expect(await run({ id: 'a', waitForApproval: {} }, {}, rejected)).toMatchObject({
      error: 'rejected',
      errorOutput: rejected,
    });
    expect(await run({ id: 'a', waitForApproval: { onReject: 'fail' } }, {}, rejected)).toMatchObject({
      error: 'rejected',
      errorOutput: rejected,
    });
    expect((await run({ id: 'a', waitForApproval: { onReject: 'continue' } }, {}, rejected)).outcome).toEqual({
      skipped: false,
      output: rejected,
    });
  });

  it('a timeout rejects by default, approves with onTimeout approve', async () => {
    expect(await run({ id: 'a', waitForApproval: { timeout: '1s' } })).toMatchObject({
      error: 'rejected',
      errorOutput: timedOut,
    });
    expect(await run({ id: 'a', waitForApproval: { timeout: '1s', onTimeout: 'reject' } })).toMatchObject({
      error: 'rejected',
      errorOutput: timedOut,
    });
    expect((await run({ id: 'a', waitForApproval: { timeout: '1s', onTimeout: 'approve' } })).outcome).toEqual({
      skipped: false,
      output: timedOut,
    });
    expect((await run({ id: 'a', waitForApproval: { timeout: '1s', onReject: 'continue' } })).outcome).toEqual({
      skipped: false,
      output: timedOut,
    });
  });

  it('title and details: evaluated before the wait, strings as they are, others as JSON, long ones cut', async () => {
    const trigger = { email: 'ana@example.com', n: 3.0, roles: ['a', 'b'], long: 'x'.repeat(600) };
    const { recorded } = await run(
      {
        id: 'a',
        waitForApproval: {
          title: "'Offboard ' + ctx.trigger.email",
          details: {
            Who: 'ctx.trigger.email',
            Count: 'ctx.trigger.n',
            Roles: 'ctx.trigger.roles',
            Long: 'ctx.trigger.long',
          },
        },
      } as StepDefinition,
      trigger,
      approved,
    );
    expect(recorded.evaluations).toEqual(['approval context']);
    const [asked] = recorded.asked;
    expect(asked?.title).toBe('Offboard ana@example.com');
    expect(asked?.details.map((d) => d.label)).toEqual(['Who', 'Count', 'Roles', 'Long']);
    expect(asked?.details.slice(0, 3).map((d) => d.value)).toEqual(['ana@example.com', '3', '["a","b"]']);
    expect(asked?.details[3]?.value).toBe(`${'x'.repeat(499)}…`);
    expect([...(asked?.details[3]?.value ?? '')]).toHaveLength(500);
  });

  it('without a title the default one; a title that is not a string fails the step naming it', async () => {
    const plain = await run({ id: 'a', waitForApproval: { details: { Who: "'x'" } } } as StepDefinition, {}, approved);
    expect(plain.recorded.asked[0]?.title).toBe('Default: a');
    const nothing = await run({ id: 'a', waitForApproval: {} }, {}, approved);
    expect(nothing.recorded.evaluations).toEqual([]);
    const bad = await run({ id: 'a', waitForApproval: { title: 'ctx.trigger' } } as StepDefinition, { n: 1 }, approved);
    expect(bad.error).toBe('title: must be a string, not a map');
    const long = await run(
      { id: 'a', waitForApproval: { title: 'ctx.trigger.t' } } as StepDefinition,
      { t: 'é'.repeat(300) },
      approved,
    );
    expect(long.recorded.asked[0]?.title).toBe(`${'é'.repeat(199)}…`);
  });

  it('onTimeout approve does not turn a rejection into an approval', async () => {
    expect(await run({ id: 'a', waitForApproval: { onTimeout: 'approve' } }, {}, rejected)).toMatchObject({
      error: 'rejected',
      errorOutput: rejected,
    });
  });
});

describe('callWebhook', () => {
  const url = "'https://hooks.example/x'";

  it('performs the request with the default timeout of 10 s; the activity gets 5 s more', async () => {
    const { recorded } = await run(
      { id: 'h', callWebhook: { url, body: { n: 'ctx.trigger.n' }, headers: { 'X-N': "'1'" } } },
      { n: 2 },
    );
    expect(recorded.evaluations).toEqual(['evaluate callWebhook']);
    expect(recorded.performed).toEqual([
      ['callWebhook', { url: 'https://hooks.example/x', body: { n: 2 }, headers: { 'X-N': '1' }, timeoutMs: 10_000 }],
    ]);
    expect(callWebhookEffect.timeoutMs!({ url: 'u', body: {}, headers: {}, timeoutMs: 1234 })).toBe(6234);
  });

  it('keeps a set timeout; a body given as one expression must be a map', async () => {
    const set = await run({ id: 'h', callWebhook: { url, body: '{"a": 1}', timeoutMs: 30_000 } });
    expect(set.recorded.performed).toEqual([
      ['callWebhook', { url: 'https://hooks.example/x', body: { a: 1 }, headers: {}, timeoutMs: 30_000 }],
    ]);
    expect((await run({ id: 'h', callWebhook: { url, body: "'text'" } })).error).toBe(
      'callWebhook.body: must evaluate to a map, got string "text"',
    );
  });

  it('passes header values that read secrets as sources (never evaluated here), and the signing secret by name', async () => {
    const { recorded } = await run({
      id: 'h',
      callWebhook: {
        url,
        body: {},
        headers: { Authorization: "'Bearer ' + secrets.crm_token", 'X-Plain': "'p'" },
        signature: { secret: 'signing' },
      },
    });
    expect(recorded.performed).toEqual([
      [
        'callWebhook',
        {
          url: 'https://hooks.example/x',
          body: {},
          headers: { 'X-Plain': 'p' },
          timeoutMs: 10_000,
          secretHeaders: { Authorization: "'Bearer ' + secrets.crm_token" },
          signature: { secret: 'signing' },
        },
      ],
    ]);
  });

  it('refuses an empty URL and header values that are not strings or hold line breaks', async () => {
    expect((await run({ id: 'h', callWebhook: { url: "''", body: {} } })).error).toBe(
      'callWebhook.url: must evaluate to a non-empty string, got string ""',
    );
    expect((await run({ id: 'h', callWebhook: { url: '1', body: {} } })).error).toBe(
      'callWebhook.url: must evaluate to a non-empty string, got number 1',
    );
    expect((await run({ id: 'h', callWebhook: { url, body: {}, headers: { 'X-A': '1' } } })).error).toBe(
      'callWebhook.headers.X-A: must evaluate to a string, got number 1',
    );
    expect(
      (await run({ id: 'h', callWebhook: { url, body: {}, headers: { 'X-A': 'ctx.trigger.v' } } }, { v: 'a\nb' }))
        .error,
    ).toBe('callWebhook.headers.X-A: must contain only tabs and printable Latin-1 characters (no line breaks)');
    const tab = await run(
      { id: 'h', callWebhook: { url, body: {}, headers: { 'X-A': 'ctx.trigger.v' } } },
      { v: 'a\tb \u00e9' },
    );
    expect(tab.recorded.performed[0]![1]).toMatchObject({ headers: { 'X-A': 'a\tb \u00e9' } });
  });

  it('says where it reads secrets: each secret header with the URL, and the signing secret', () => {
    const reads = STEP_REGISTRY.callWebhook.secretReads!;
    expect(
      reads({
        url,
        body: {},
        headers: { Authorization: "'Bearer ' + secrets.crm_token", 'X-Plain': "'p'" },
        signature: { secret: 'signing' },
      }),
    ).toEqual([
      { field: 'headers.Authorization', expression: "'Bearer ' + secrets.crm_token", url },
      { field: 'signature.secret', name: 'signing', url },
    ]);
    expect(reads({ url, body: {} })).toEqual([]);
  });
});

describe('what errors and views show of values', () => {
  it('describeValue names the type and shows at most 60 characters of JSON', () => {
    expect([
      describeValue(null),
      describeValue(undefined),
      describeValue([1]),
      describeValue({ a: 1 }),
      describeValue(true),
      describeValue('hire'),
    ]).toEqual(['null', 'nothing', 'a list', 'a map', 'boolean true', 'string "hire"']);
    const sixty = 'x'.repeat(58);
    expect(describeValue(sixty)).toBe(`string "${sixty}"`);
    expect(describeValue(`${sixty}y`)).toBe(`string "${sixty}y…`);
  });

  it('lastResult is the last finished evaluation or activity that gave a map', () => {
    const history: RecordedEffect[] = [
      { kind: 'evaluate', done: true, result: { first: 1 } },
      { kind: 'activity', done: true, result: { second: 2 } },
      { kind: 'activity', done: false, result: { unfinished: 3 } },
      { kind: 'timer', done: true, result: { timer: 4 } },
    ];
    expect(lastResult(history)).toEqual({ second: 2 });
    expect(lastResult([{ kind: 'activity', done: true, result: 'text' }])).toBeNull();
    expect(lastResult([])).toBeNull();
  });
});
