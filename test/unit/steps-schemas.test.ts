/**
 * The step list and the step schemas on save (src/steps/index.ts `validateSteps`, the kinds' zod
 * schemas, src/steps/retry.ts, src/steps/validate.ts), through the validator the automation API
 * uses (src/domain/automation-validation.ts, with the real CEL compiler): every bound of a field,
 * and what each refusal says and where. step-validation.test.ts covers the CEL fields and notify.
 */
import { validateSteps } from '../../src/domain/automation-validation';
import type { FieldViolation } from '../../src/errors';
import { MAX_STEPS, RETRYABLE_STEP_KINDS, STEP_KINDS } from '../../src/steps';

function check(steps: unknown): { violations: FieldViolation[]; steps: unknown[] } {
  const violations: FieldViolation[] = [];
  const validated = validateSteps(steps, violations);
  return { violations, steps: validated };
}

/** The violations of one step. */
function refused(step: Record<string, unknown>): FieldViolation[] {
  return check([{ id: 's', ...step }]).violations;
}

/** The violation of one step body, or [] when accepted. */
function body(kind: string, value: unknown): FieldViolation[] {
  return refused({ [kind]: value });
}

const hook = { url: "'https://x.example'", body: {} };

describe('the step list', () => {
  it('must be an array of at most 50 steps', () => {
    expect(check('steps')).toEqual({
      violations: [{ field: 'steps', description: 'must be an array of steps' }],
      steps: [],
    });
    expect(check({ 0: { id: 'a' } })).toEqual({
      violations: [{ field: 'steps', description: 'must be an array of steps' }],
      steps: [],
    });
    const steps = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `s${i}`, log: { message: "'x'" } }));
    expect(MAX_STEPS).toBe(50);
    expect(check(steps(50)).violations).toEqual([]);
    expect(check(steps(50)).steps).toHaveLength(50);
    expect(check(steps(51))).toEqual({ violations: [{ field: 'steps', description: 'at most 50 steps' }], steps: [] });
    expect(check([])).toEqual({ violations: [], steps: [] });
  });

  it('each step is an object with an id usable as ctx.steps.<id>, unique', () => {
    const rule = 'must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (it is read as ctx.steps.<id>)';
    expect(check(['x', null, [], { id: 'ok', log: { message: "'x'" } }]).violations).toEqual([
      { field: 'steps[0]', description: 'must be an object' },
      { field: 'steps[1]', description: 'must be an object' },
      { field: 'steps[2]', description: 'must be an object' },
    ]);
    for (const id of [undefined, 7, '', '1a', 'a-b', 'a'.repeat(65)]) {
      expect([id, check([{ id, log: { message: "'x'" } }]).violations]).toEqual([
        id,
        [{ field: 'steps[0].id', description: rule }],
      ]);
    }
    expect(check([{ id: `_${'a'.repeat(63)}`, log: { message: "'x'" } }]).violations).toEqual([]);
    const twice = check([
      { id: 'a', log: { message: "'x'" } },
      { id: 'a', log: { message: "'y'" } },
    ]);
    expect(twice.violations).toEqual([{ field: 'steps[1].id', description: 'step id "a" is used twice' }]);
  });

  it('each step sets exactly one kind (null counts as unset)', () => {
    const kinds = STEP_KINDS.join(', ');
    const one = `a step sets exactly one of ${kinds}`;
    expect(refused({})).toEqual([{ field: 'steps[0]', description: `step "s": no step kind; ${one}` }]);
    expect(refused({ log: { message: "'x'" }, wait: { duration: '1s' } })).toEqual([
      { field: 'steps[0]', description: `step "s": sets wait and log; ${one}` },
    ]);
    // A mistyped kind is named at its field, with the kind it is closest to (or none when nothing is near).
    expect(refused({ logg: { message: "'x'" } })).toEqual([
      { field: 'steps[0].logg', description: `step "s": "logg" is not a step kind; did you mean "log"? (${one})` },
    ]);
    expect(refused({ WaitForAproval: {} })).toEqual([
      {
        field: 'steps[0].WaitForAproval',
        description: `step "s": "WaitForAproval" is not a step kind; did you mean "waitForApproval"? (${one})`,
      },
    ]);
    expect(refused({ sendEmail: {} })).toEqual([
      { field: 'steps[0].sendEmail', description: `step "s": "sendEmail" is not a step kind (${one})` },
    ]);
    expect(check([{ id: 's', log: { message: "'x'" }, wait: null }])).toEqual({
      violations: [],
      steps: [{ id: 's', log: { message: "'x'" } }],
    });
  });

  it('a body that is not an object is refused at the kind', () => {
    expect(body('wait', '3600s')).toEqual([{ field: 'steps[0].wait', description: 'step "s": must be an object' }]);
    expect(body('log', ["'x'"])).toEqual([{ field: 'steps[0].log', description: 'step "s": must be an object' }]);
  });

  it('unknown step fields are named one by one', () => {
    expect(refused({ log: { message: "'x'" }, after: 'a', name: 'n' })).toEqual([
      { field: 'steps[0].after', description: 'step "s": unknown field' },
      { field: 'steps[0].name', description: 'step "s": unknown field' },
    ]);
  });

  it('when: a non-empty CEL condition, kept; null is unset', () => {
    const rule = 'step "s": must be a CEL expression (a non-empty string)';
    for (const when of ['', '  ', 5])
      expect(refused({ when, log: { message: "'x'" } })).toEqual([{ field: 'steps[0].when', description: rule }]);
    expect(refused({ when: 'ctx.trigger ==', log: { message: "'x'" } })).toEqual([
      { field: 'steps[0].when', description: expect.stringMatching(/^step "s": syntax error/) },
    ]);
    expect(check([{ id: 's', when: 'ctx.trigger.go', log: { message: "'x'" } }])).toEqual({
      violations: [],
      steps: [{ id: 's', when: 'ctx.trigger.go', log: { message: "'x'" } }],
    });
    expect(check([{ id: 's', when: null, log: { message: "'x'" } }])).toEqual({
      violations: [],
      steps: [{ id: 's', log: { message: "'x'" } }],
    });
  });
});

describe('retry policies', () => {
  const retry = (policy: unknown) => refused({ callWebhook: hook, retry: policy });

  it('apply only to the kinds whose effect is an activity', () => {
    expect(RETRYABLE_STEP_KINDS).toEqual([
      'createEntitlementOwner',
      'deleteEntitlementOwner',
      'ensureUser',
      'grantEntitlements',
      'revokeEntitlements',
      'callWebhook',
      'notify',
    ]);
    expect(refused({ log: { message: "'x'" }, retry: { maximumAttempts: 2 } })).toEqual([
      {
        field: 'steps[0].retry',
        description:
          'step "s": retry applies only to createEntitlementOwner, deleteEntitlementOwner, ensureUser, grantEntitlements, revokeEntitlements, callWebhook, notify steps',
      },
    ]);
    expect(check([{ id: 's', log: { message: "'x'" }, retry: null }]).violations).toEqual([]);
    expect(refused({ callWebhook: hook, retry: 'fast' })).toEqual([
      { field: 'steps[0].retry', description: 'step "s": must be an object' },
    ]);
  });

  it('are kept as given when within bounds, null fields dropped', () => {
    const policy = { maximumAttempts: 20, initialInterval: '0.5s', maximumInterval: '3600s', backoffCoefficient: 10 };
    expect(check([{ id: 's', callWebhook: hook, retry: policy }])).toEqual({
      violations: [],
      steps: [{ id: 's', callWebhook: hook, retry: policy }],
    });
    expect(
      check([
        {
          id: 's',
          notify: { webhook: 'w', text: "'t'" },
          retry: { maximumAttempts: 1, backoffCoefficient: 1, initialInterval: null },
        },
      ]).steps,
    ).toEqual([
      { id: 's', notify: { webhook: 'w', text: "'t'" }, retry: { maximumAttempts: 1, backoffCoefficient: 1 } },
    ]);
  });

  it.each([
    [{ maximumAttempts: 0 }, 'maximumAttempts', 'must be an integer from 1 to 20'],
    [{ maximumAttempts: 21 }, 'maximumAttempts', 'must be an integer from 1 to 20'],
    [{ maximumAttempts: 2.5 }, 'maximumAttempts', 'must be an integer from 1 to 20'],
    [{ maximumAttempts: '3' }, 'maximumAttempts', 'must be an integer from 1 to 20'],
    [{ backoffCoefficient: 0.99 }, 'backoffCoefficient', 'must be a number from 1 to 10'],
    [{ backoffCoefficient: 10.01 }, 'backoffCoefficient', 'must be a number from 1 to 10'],
    [{ backoffCoefficient: '2' }, 'backoffCoefficient', 'must be a number from 1 to 10'],
    [{ initialInterval: '0s' }, 'initialInterval', 'must be a positive duration such as "1s" or "0.5s", at most 3600s'],
    [
      { initialInterval: '3600.001s' },
      'initialInterval',
      'must be a positive duration such as "1s" or "0.5s", at most 3600s',
    ],
    [{ maximumInterval: '1m' }, 'maximumInterval', 'must be a positive duration such as "1s" or "0.5s", at most 3600s'],
    [{ maximumInterval: 30 }, 'maximumInterval', 'must be a positive duration such as "1s" or "0.5s", at most 3600s'],
    [
      { initialInterval: '2s', maximumInterval: '1.5s' },
      'maximumInterval',
      'must not be shorter than initialInterval (2s)',
    ],
    [{ maximumInterval: '0.5s' }, 'maximumInterval', 'must not be shorter than initialInterval (1s)'],
    [
      { jitter: true },
      'jitter',
      'unknown field; expected maximumAttempts, initialInterval, maximumInterval, backoffCoefficient',
    ],
  ])('%j is refused at retry.%s', (policy, field, description) => {
    expect(retry(policy)).toEqual([{ field: `steps[0].retry.${field}`, description: `step "s": ${description}` }]);
  });

  it('a maximum equal to the initial interval (given or the 1 s default) is accepted', () => {
    expect(retry({ initialInterval: '2s', maximumInterval: '2s' })).toEqual([]);
    expect(retry({ maximumInterval: '1s' })).toEqual([]);
    expect(retry({ initialInterval: '5s' })).toEqual([]);
  });
});

describe('bounds of the kinds', () => {
  it('wait: a positive duration of at most one year (366 days)', () => {
    const rule = 'step "s": must be a positive duration such as "3600s", at most 31622400s';
    expect(body('wait', { duration: '31622400s' })).toEqual([]);
    expect(body('wait', { duration: '0.001s' })).toEqual([]);
    for (const duration of ['0s', '31622400.5s', '1h', 3600])
      expect([duration, body('wait', { duration })]).toEqual([
        duration,
        [{ field: 'steps[0].wait.duration', description: rule }],
      ]);
    expect(body('wait', {})).toEqual([{ field: 'steps[0].wait.duration', description: rule }]);
  });

  it('waitForApproval: a timeout of at most 30 days, and the two choices', () => {
    expect(body('waitForApproval', { timeout: '2592000s', onTimeout: 'approve', onReject: 'continue' })).toEqual([]);
    expect(body('waitForApproval', { timeout: '2592001s' })).toEqual([
      {
        field: 'steps[0].waitForApproval.timeout',
        description: 'step "s": must be a positive duration such as "86400s", at most 2592000s',
      },
    ]);
    expect(body('waitForApproval', { onTimeout: 'ignore' })).toEqual([
      { field: 'steps[0].waitForApproval.onTimeout', description: 'step "s": must be one of reject, approve' },
    ]);
    expect(body('waitForApproval', { onReject: 'retry' })).toEqual([
      { field: 'steps[0].waitForApproval.onReject', description: 'step "s": must be one of fail, continue' },
    ]);
  });

  it('waitForApproval: a CEL title, and at most 20 details labelled with 1 to 60 characters', () => {
    const details = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`Label ${i}`, 'ctx.trigger.x']));
    expect(body('waitForApproval', { title: "'Offboard ' + ctx.trigger.email", details: details(20) })).toEqual([]);
    expect(body('waitForApproval', { details: details(21) })).toEqual([
      {
        field: 'steps[0].waitForApproval.details',
        description: 'step "s": must have at most 20 labels of 1 to 60 characters',
      },
    ]);
    expect(body('waitForApproval', { details: { ['x'.repeat(61)]: "'v'" } })).toEqual([
      expect.objectContaining({ description: 'step "s": each label must be 1 to 60 characters' }),
    ]);
    expect(body('waitForApproval', { title: 'ctx.trigger.' })).toEqual([
      expect.objectContaining({ field: 'steps[0].waitForApproval.title' }),
    ]);
    expect(body('waitForApproval', { details: { Who: 'ctx.trigger.(' } })).toEqual([
      expect.objectContaining({ field: 'steps[0].waitForApproval.details.Who' }),
    ]);
  });

  it('setVariables: 1 to 50 variables named like ids', () => {
    const vars = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`v${i}`, '1']));
    expect(body('setVariables', vars(1))).toEqual([]);
    expect(body('setVariables', vars(50))).toEqual([]);
    expect(body('setVariables', {})).toEqual([
      { field: 'steps[0].setVariables', description: 'step "s": set 1 to 50 variables' },
    ]);
    expect(body('setVariables', vars(51))).toEqual([
      { field: 'steps[0].setVariables', description: 'step "s": set 1 to 50 variables' },
    ]);
    expect(body('setVariables', { 'not-a-name': '1' })).toEqual([
      {
        field: 'steps[0].setVariables.not-a-name',
        description: 'step "s": variable names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$',
      },
    ]);
    expect(body('setVariables', { v: 1 })).toEqual([
      { field: 'steps[0].setVariables.v', description: 'step "s": must be a CEL expression (a non-empty string)' },
    ]);
  });

  it('log: a level among info, warn, error; no other field', () => {
    expect(body('log', { message: "'x'", level: 'debug' })).toEqual([
      { field: 'steps[0].log.level', description: 'step "s": must be one of info, warn, error' },
    ]);
    expect(body('log', { level: 'info' })).toEqual([
      { field: 'steps[0].log.message', description: 'step "s": must be a CEL expression (a non-empty string)' },
    ]);
  });

  it('ownership steps: the four ids are required CEL fields', () => {
    expect(body('createEntitlementOwner', { userId: "'u'", roleSlug: "'r'", appId: "'a'" })).toEqual([
      {
        field: 'steps[0].createEntitlementOwner.entitlementId',
        description: 'step "s": must be a CEL expression (a non-empty string)',
      },
    ]);
  });

  it('callWebhook: timeout 1..30000 ms, at most 20 headers, none the service sets, names case-insensitive', () => {
    expect(body('callWebhook', { ...hook, timeoutMs: 1 })).toEqual([]);
    expect(body('callWebhook', { ...hook, timeoutMs: 30_000 })).toEqual([]);
    expect(body('callWebhook', { ...hook, timeoutMs: 0 })).toEqual([
      { field: 'steps[0].callWebhook.timeoutMs', description: 'step "s": must be an integer from 1 to 30000' },
    ]);
    const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, "'v'"]));
    expect(body('callWebhook', { ...hook, headers: headers(20) })).toEqual([]);
    expect(body('callWebhook', { ...hook, headers: headers(21) })).toEqual([
      { field: 'steps[0].callWebhook.headers', description: 'step "s": at most 20 headers' },
    ]);
    for (const name of ['Idempotency-Key', 'webhook-signature', 'Proxy-Authorization', 'HOST', 'TE']) {
      expect([name, body('callWebhook', { ...hook, headers: { [name]: "'v'" } })]).toEqual([
        name,
        [
          {
            field: `steps[0].callWebhook.headers.${name}`,
            description: 'step "s": the service sets this header itself',
          },
        ],
      ]);
    }
    expect(body('callWebhook', { ...hook, headers: { 'X-Proxy': "'v'", Authorization: "'v'" } })).toEqual([]);
    expect(body('callWebhook', { ...hook, headers: { 'x-a': "'1'", 'X-A': "'2'" } })).toEqual([
      {
        field: 'steps[0].callWebhook.headers.X-A',
        description: 'step "s": header names are case-insensitive; this one is given twice',
      },
    ]);
    expect(body('callWebhook', { ...hook, headers: { ['h'.repeat(129)]: "'v'" } })).toEqual([
      { field: `steps[0].callWebhook.headers.${'h'.repeat(129)}`, description: 'step "s": not a valid header name' },
    ]);
  });

  it('callWebhook: body fields of 1..128 characters without control characters; the branch meant is the one reported', () => {
    const rule = 'step "s": field names are 1 to 128 characters without control characters';
    expect(body('callWebhook', { ...hook, body: { ['f'.repeat(128)]: '1' } })).toEqual([]);
    expect(body('callWebhook', { ...hook, body: { ['f'.repeat(129)]: '1' } })).toEqual([
      { field: `steps[0].callWebhook.body.${'f'.repeat(129)}`, description: rule },
    ]);
    expect(body('callWebhook', { ...hook, body: { 'a\nb': '1' } })).toEqual([
      { field: 'steps[0].callWebhook.body.a\nb', description: rule },
    ]);
    expect(body('callWebhook', { ...hook, body: { a: '' } })).toEqual([
      { field: 'steps[0].callWebhook.body.a', description: 'step "s": must be a CEL expression (a non-empty string)' },
    ]);
    expect(body('callWebhook', { ...hook, body: ' ' })).toEqual([
      { field: 'steps[0].callWebhook.body', description: 'step "s": must be a CEL expression (a non-empty string)' },
    ]);
  });

  it('callWebhook: a signature names a secret; unknown fields name the fields expected', () => {
    expect(body('callWebhook', { ...hook, signature: { secret: 'signing_key' } })).toEqual([]);
    expect(body('callWebhook', { ...hook, signature: { secret: 'Signing' } })).toEqual([
      {
        field: 'steps[0].callWebhook.signature.secret',
        description: 'step "s": must name a secret: ^[a-z][a-z0-9_]{0,62}$',
      },
    ]);
    expect(body('callWebhook', { ...hook, signature: 'signing_key' })).toEqual([
      {
        field: 'steps[0].callWebhook.signature',
        description: 'step "s": must be {"secret": "<name>"}: the named secret that signs the requests',
      },
    ]);
    // The signature's own message covers an extra field too.
    expect(body('callWebhook', { ...hook, signature: { secret: 'k', algorithm: 'v1' } })).toEqual([
      {
        field: 'steps[0].callWebhook.signature',
        description: 'step "s": must be {"secret": "<name>"}: the named secret that signs the requests',
      },
    ]);
    expect(body('callWebhook', { ...hook, method: 'PUT' })).toEqual([
      {
        field: 'steps[0].callWebhook.method',
        description: 'step "s": unknown field; expected url, body, headers, timeoutMs, signature',
      },
    ]);
  });

  it('fields without a message of their own say what they expect', () => {
    expect(body('callWebhook', { ...hook, headers: ['X-A'] })).toEqual([
      { field: 'steps[0].callWebhook.headers', description: 'step "s": must be a record' },
    ]);
    expect(body('waitForApproval', { timeout: null, onTimeout: ['approve'] })).toEqual([
      { field: 'steps[0].waitForApproval.onTimeout', description: 'step "s": must be one of reject, approve' },
    ]);
    expect(body('callWebhook', { body: {} })).toEqual([
      { field: 'steps[0].callWebhook.url', description: 'step "s": must be a CEL expression (a non-empty string)' },
    ]);
    expect(body('log', { message: "'x'", level: 3 })).toEqual([
      { field: 'steps[0].log.level', description: 'step "s": must be one of info, warn, error' },
    ]);
  });
});
