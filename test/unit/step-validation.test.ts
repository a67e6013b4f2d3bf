/**
 * Validation of steps on save by their kinds' schemas (src/steps/validate.ts): zod's issues become
 * violations naming the field and the step, and the one walker compiles every field the schema
 * marks as CEL, with the outbound-secrets grammar where a field may read secrets.
 */
import { validateSteps } from '../../src/domain/automation-validation';
import { type FieldViolation } from '../../src/errors';

function check(steps: unknown[]): { violations: FieldViolation[]; steps: unknown[] } {
  const violations: FieldViolation[] = [];
  const validated = validateSteps(steps, violations);
  return { violations, steps: validated };
}

describe('notify steps', () => {
  it('accept a secret name and a CEL text, stored as given', () => {
    const result = check([{ id: 'tell', notify: { webhook: 'team_hook', text: "'Offboarded ' + ctx.trigger.who" } }]);
    expect(result).toEqual({
      violations: [],
      steps: [{ id: 'tell', notify: { webhook: 'team_hook', text: "'Offboarded ' + ctx.trigger.who" } }],
    });
  });

  it.each([
    [
      { webhook: 'Team-Hook', text: "'x'" },
      'steps[0].notify.webhook',
      'step "tell": must name a secret: ^[a-z][a-z0-9_]{0,62}$',
    ],
    [{ text: "'x'" }, 'steps[0].notify.webhook', 'step "tell": must name a secret: ^[a-z][a-z0-9_]{0,62}$'],
    [
      { webhook: 'team_hook', text: '' },
      'steps[0].notify.text',
      'step "tell": must be a CEL expression (a non-empty string)',
    ],
    [{ webhook: 'team_hook', text: "'a' +" }, 'steps[0].notify.text', /^step "tell": syntax error/],
    [{ webhook: 'team_hook', text: 'secrets.team_hook' }, 'steps[0].notify.text', /only in callWebhook header values/],
    [
      { webhook: 'team_hook', text: "'x'", channel: '#ops' },
      'steps[0].notify.channel',
      'step "tell": unknown field; expected webhook, text',
    ],
  ])('refuse %j naming the field', (body, field, description) => {
    const { violations } = check([{ id: 'tell', notify: body }]);
    expect(violations).toHaveLength(1);
    expect(violations[0]!.field).toBe(field);
    if (typeof description === 'string') expect(violations[0]!.description).toBe(description);
    else expect(violations[0]!.description).toMatch(description);
  });
});

describe('the schema is the validator', () => {
  it('compiles every CEL field the schema marks, nested in maps and unions', () => {
    const { violations } = check([
      {
        id: 'hook',
        callWebhook: {
          url: "'https://x.example'",
          body: { a: 'ctx.trigger.a', b: 'nope(' },
          headers: { 'X-A': '1 +' },
        },
      },
      { id: 'hook2', callWebhook: { url: "'https://x.example'", body: 'ctx.trigger ==' } },
      { id: 'vars', setVariables: { ok: '1', bad: 'other.name' } },
    ]);
    expect(violations.map((v) => v.field)).toEqual([
      'steps[0].callWebhook.body.b',
      'steps[0].callWebhook.headers.X-A',
      'steps[1].callWebhook.body',
      'steps[2].setVariables.bad',
    ]);
  });

  it('applies the secret grammar to header values that read secrets, and only there', () => {
    const ok = check([
      {
        id: 'h',
        callWebhook: {
          url: "'https://x.example'",
          body: {},
          headers: { Authorization: "'Bearer ' + secrets.crm_token" },
        },
      },
    ]);
    expect(ok.violations).toEqual([]);
    const { violations } = check([
      {
        id: 'h',
        callWebhook: {
          url: "'https://x.example'",
          body: {},
          headers: { Authorization: 'ctx.trigger.k + secrets.crm_token' },
        },
      },
    ]);
    expect(violations).toEqual([
      {
        field: 'steps[0].callWebhook.headers.Authorization',
        description: expect.stringMatching(/^step "h": .*may not read ctx/),
      },
    ]);
  });

  it('answers the schema rules once, with the messages of before: bounds, reserved headers, key patterns, nulls dropped', () => {
    const hook = { url: "'https://x.example'", body: {} };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...hook, timeoutMs: 30_001 }, 'steps[0].callWebhook.timeoutMs', 'must be an integer from 1 to 30000'],
      [{ ...hook, timeoutMs: 1.5 }, 'steps[0].callWebhook.timeoutMs', 'must be an integer from 1 to 30000'],
      [
        { ...hook, headers: { 'Content-Type': "'a'" } },
        'steps[0].callWebhook.headers.Content-Type',
        'the service sets this header itself',
      ],
      [
        { ...hook, headers: { 'Bad Header': "'a'" } },
        'steps[0].callWebhook.headers.Bad Header',
        'not a valid header name',
      ],
      [
        { ...hook, body: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, '1'])) },
        'steps[0].callWebhook.body',
        'at most 50 fields',
      ],
      [
        { ...hook, body: 42 },
        'steps[0].callWebhook.body',
        'must be a map of field name → CEL expression, or one CEL expression giving a map',
      ],
    ];
    for (const [body, field, description] of cases) {
      expect([body, check([{ id: 'hook', callWebhook: body }]).violations]).toEqual([
        body,
        [{ field, description: `step "hook": ${description}` }],
      ]);
    }
    const { steps } = check([
      { id: 'hook', callWebhook: { ...hook, headers: null, timeoutMs: null, signature: null } },
      { id: 'note', log: { message: "'x'", level: null } },
    ]);
    expect(steps).toEqual([
      { id: 'hook', callWebhook: hook },
      { id: 'note', log: { message: "'x'" } },
    ]);
  });
});
