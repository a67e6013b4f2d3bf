/** The dry run's evaluation rules, without HTTP: order, ctx.steps, statuses, and hostile expressions. */
import { DRY_RUN_TIME_BUDGET_MS, dryRunSteps } from '../../src/domain/automation-dry-run';
import type { StepDefinition } from '../../src/contract/run';

const insecure = { allowInsecureOutbound: true };
const secure = { allowInsecureOutbound: false };

describe('dryRunSteps', () => {
  it('runs a log step: its output is the line it would write, readable by later steps', async () => {
    const steps: StepDefinition[] = [
      { id: 'note', log: { message: "'user ' + ctx.trigger.user", level: 'warn' } },
      { id: 'after', setVariables: { copy: 'ctx.steps.note.message' } },
      { id: 'bad', log: { message: 'ctx.trigger.n' } },
    ];
    const results = (await dryRunSteps(steps, { user: 'u-1', n: 3 }, secure)).steps;
    expect(results.map((s) => [s.id, s.kind, s.status, s.output, s.error])).toEqual([
      ['note', 'log', 'WOULD_RUN', { level: 'warn', message: 'user u-1' }, null],
      ['after', 'setVariables', 'WOULD_RUN', { copy: 'user u-1' }, null],
      ['bad', 'log', 'ERROR', null, 'log.message: must evaluate to a string, got number 3'],
    ]);
  });

  it('evaluates every kind in order; later steps see earlier (simulated) outputs', async () => {
    const steps: StepDefinition[] = [
      { id: 'vars', setVariables: { who: 'ctx.trigger.user', n: 'ctx.trigger.n * 2.0' } },
      {
        id: 'own',
        createEntitlementOwner: {
          userId: 'ctx.steps.vars.who',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: 'ctx.trigger.ent',
        },
      },
      { id: 'pause', wait: { duration: '3600s' } },
      {
        id: 'hook',
        callWebhook: {
          url: "'https://hooks.example/' + ctx.steps.own.userId",
          body: { n: 'ctx.steps.vars.n' },
          headers: { 'X-Who': 'ctx.steps.vars.who' },
        },
      },
      { id: 'whole', callWebhook: { url: "'https://hooks.example/all'", body: '{"url": ctx.steps.hook.url}' } },
      {
        id: 'undo',
        deleteEntitlementOwner: {
          userId: 'ctx.steps.own.userId',
          roleSlug: "'owner'",
          appId: "'app-1'",
          entitlementId: "'e'",
        },
      },
    ];
    const { steps: results } = await dryRunSteps(steps, { user: 'svc-1', n: 2, ent: 'ent-9' }, secure);
    expect(results).toEqual([
      { id: 'vars', kind: 'setVariables', status: 'WOULD_RUN', output: { who: 'svc-1', n: 4 }, error: null },
      {
        id: 'own',
        kind: 'createEntitlementOwner',
        status: 'WOULD_RUN',
        output: { userId: 'svc-1', roleSlug: 'owner', appId: 'app-1', entitlementId: 'ent-9' },
        error: null,
      },
      { id: 'pause', kind: 'wait', status: 'WOULD_RUN', output: { duration: '3600s' }, error: null },
      {
        id: 'hook',
        kind: 'callWebhook',
        status: 'WOULD_RUN',
        output: {
          url: 'https://hooks.example/svc-1',
          body: { n: 4 },
          headers: { 'X-Who': 'svc-1', 'Idempotency-Key': '[per run]', 'webhook-id': '[per run]' },
        },
        error: null,
      },
      {
        id: 'whole',
        kind: 'callWebhook',
        status: 'WOULD_RUN',
        output: {
          url: 'https://hooks.example/all',
          body: { url: 'https://hooks.example/svc-1' },
          headers: { 'Idempotency-Key': '[per run]', 'webhook-id': '[per run]' },
        },
        error: null,
      },
      {
        id: 'undo',
        kind: 'deleteEntitlementOwner',
        status: 'WOULD_RUN',
        output: { userId: 'svc-1', roleSlug: 'owner', appId: 'app-1', entitlementId: 'e' },
        error: null,
      },
    ]);
  });

  it('skips a step whose when is false; a skipped step has no output for later steps', async () => {
    const steps: StepDefinition[] = [
      { id: 'maybe', when: "ctx.trigger.kind == 'fire'", setVariables: { x: '1' } },
      { id: 'check', setVariables: { ran: 'has(ctx.steps.maybe)' } },
    ];
    expect((await dryRunSteps(steps, { kind: 'hire' }, secure)).steps.map((s) => [s.status, s.output])).toEqual([
      ['SKIPPED', null],
      ['WOULD_RUN', { ran: false }],
    ]);
  });

  it('stops after a fail step that would run: its message is the output, the rest are NOT_REACHED', async () => {
    const steps: StepDefinition[] = [
      { id: 'a', setVariables: { x: '1' } },
      { id: 'stop', when: 'ctx.trigger.bad', fail: { message: '"bad user " + ctx.trigger.user' } },
      { id: 'b', setVariables: { y: '2' } },
      { id: 'c', wait: { duration: '1s' } },
    ];
    expect(
      (await dryRunSteps(steps, { bad: true, user: 'u1' }, secure)).steps.map((s) => [
        s.id,
        s.status,
        s.output,
        s.error,
      ]),
    ).toEqual([
      ['a', 'WOULD_RUN', { x: 1 }, null],
      ['stop', 'WOULD_RUN', { message: 'bad user u1' }, null],
      ['b', 'NOT_REACHED', null, null],
      ['c', 'NOT_REACHED', null, null],
    ]);
    expect((await dryRunSteps(steps, { bad: false, user: 'u1' }, secure)).steps.map((s) => s.status)).toEqual([
      'WOULD_RUN',
      'SKIPPED',
      'WOULD_RUN',
      'WOULD_RUN',
    ]);
  });

  it('reports an ERROR with the message a run would show, and does not reach the steps after it', async () => {
    const cases: Array<[StepDefinition, unknown, string]> = [
      [{ id: 's', setVariables: { v: 'ctx.trigger.missing' } }, {}, 'v: '],
      [
        { id: 's', when: 'ctx.trigger.kind', setVariables: { v: '1' } },
        { kind: 'x' },
        'when: must evaluate to a boolean, got string "x"',
      ],
      [{ id: 's', wait: { duration: '1h' } }, {}, 'wait.duration: "1h" is not a duration such as "3600s"'],
      [
        {
          id: 's',
          createEntitlementOwner: { userId: 'ctx.trigger.n', roleSlug: "'o'", appId: "'a'", entitlementId: "'e'" },
        },
        { n: 7 },
        'createEntitlementOwner.userId: must evaluate to a non-empty string, got number 7',
      ],
      [
        { id: 's', callWebhook: { url: "'http://hooks.example/x'", body: {} } },
        {},
        'callWebhook.url: URL must use https',
      ],
      [
        { id: 's', callWebhook: { url: "'https://169.254.169.254/latest'", body: {} } },
        {},
        'callWebhook.url: URL must not point to a loopback, private, link-local or other non-public address',
      ],
      [
        { id: 's', callWebhook: { url: "'https://h.example'", body: '[1]' } },
        {},
        'callWebhook.body: must evaluate to a map, got a list',
      ],
      [
        { id: 's', fail: { message: 'ctx.trigger.n' } },
        { n: 1 },
        'fail.message: must evaluate to a non-empty string, got number 1',
      ],
      [
        { id: 's', callWebhook: { url: "'https://h.example'", body: {}, headers: { 'X-V': 'ctx.trigger.v' } } },
        { v: 'a\r\nInjected: 1' },
        'callWebhook.headers.X-V: must contain only tabs and printable Latin-1 characters (no line breaks)',
      ],
      [
        { id: 's', callWebhook: { url: "'https://h.example'", body: {}, headers: { 'X-V': 'ctx.trigger.v' } } },
        { v: '\u20ac' },
        'callWebhook.headers.X-V: must contain only tabs and printable Latin-1 characters (no line breaks)',
      ],
    ];
    for (const [step, payload, error] of cases) {
      const [first, second] = (await dryRunSteps([step, { id: 'next', setVariables: { z: '1' } }], payload, secure))
        .steps;
      expect([step.id, first!.status, first!.output]).toEqual([step.id, 'ERROR', null]);
      if (error.endsWith(': ')) expect(first!.error).toMatch(new RegExp(`^${error}`));
      else expect(first!.error).toBe(error);
      expect(second!.status).toBe('NOT_REACHED');
    }
  });

  it('accepts http:// and private callWebhook URLs only when insecure outbound is allowed', async () => {
    const step: StepDefinition = { id: 'h', callWebhook: { url: "'http://127.0.0.1:9/x'", body: {} } };
    expect((await dryRunSteps([step], {}, insecure)).steps[0]!.status).toBe('WOULD_RUN');
    expect((await dryRunSteps([step], {}, secure)).steps[0]!.error).toBe('callWebhook.url: URL must use https');
  });

  describe('hostile expressions fail their step with a clear error, within the bounds', () => {
    // 99 × 99 full scans of a 200,000-character text that an anchored pattern cannot match (so no
    // literal prefilter can skip it): about 2 × 10^9 regex steps, far past the cost budget.
    const list99 = Array.from({ length: 99 }, (_, i) => i);

    it('a slow expression hits the per-evaluation cost budget', async () => {
      const steps: StepDefinition[] = [
        {
          id: 'slow',
          setVariables: { v: "ctx.trigger.l.all(x, ctx.trigger.l.all(y, !ctx.trigger.s.matches('^(a|b)*$')))" },
        },
      ];
      const [result] = (await dryRunSteps(steps, { l: list99, s: 'a'.repeat(200_000) + 'c' }, secure)).steps;
      expect(result).toMatchObject({ status: 'ERROR', error: 'v: evaluation exceeds the cost budget of 1000000' });
    });

    it('a huge comprehension hits the iteration budget; deep nesting and long expressions are refused', async () => {
      const big = Array.from({ length: 20_000 }, (_, i) => i);
      const cases: Array<[string, RegExp]> = [
        [
          'ctx.trigger.l.map(x, ctx.trigger.l.map(y, x * y)).size()',
          /^v: comprehensions iterate more than 10000 times$/,
        ],
        ['ctx.trigger.l.exists(x, x < 0)', /^v: comprehensions iterate more than 10000 times$/],
        [`${'['.repeat(300)}1${']'.repeat(300)}`, /^v: expression is nested too deeply/],
        ['1 + '.repeat(1200) + '1', /^v: expression is too long/],
      ];
      for (const [source, error] of cases) {
        const [result] = (await dryRunSteps([{ id: 'h', setVariables: { v: source } }], { l: big }, secure)).steps;
        expect([source.slice(0, 40), result!.status]).toEqual([source.slice(0, 40), 'ERROR']);
        // On a starved machine the 1 s evaluation limit can stop a comprehension before the
        // iteration budget does (the budget alone, untimed, is tested in cel.test.ts).
        if (result!.error === 'v: evaluation exceeded the time limit of 1000 ms' && String(error).includes('iterate'))
          continue;
        expect(result!.error).toMatch(error);
      }
    });

    it('the whole dry run is bounded: steps after the time budget are not evaluated', async () => {
      const slow: StepDefinition = {
        id: 'slow',
        setVariables: { v: "ctx.trigger.l.all(x, ctx.trigger.l.all(y, !ctx.trigger.s.matches('^(a|b)*$')))" },
      };
      const results = (
        await dryRunSteps(
          [slow, { id: 'next', setVariables: { z: '1' } }],
          { l: list99, s: 'a'.repeat(200_000) + 'c' },
          { ...secure, timeBudgetMs: 300 },
        )
      ).steps;
      expect(results[0]).toMatchObject({ status: 'ERROR', error: 'v: evaluation exceeds the cost budget of 1000000' });
      expect(results[1]!.status).toBe('NOT_REACHED');
      const exhausted = (await dryRunSteps([{ id: 'a', setVariables: { z: '1' } }], {}, { ...secure, timeBudgetMs: 0 }))
        .steps;
      expect(exhausted[0]).toMatchObject({
        status: 'ERROR',
        error: 'the dry run used up its time budget of 0 ms before this step',
      });
      expect(DRY_RUN_TIME_BUDGET_MS).toBe(5000);
    });
  });
});
