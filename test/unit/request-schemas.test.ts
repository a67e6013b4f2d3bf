/**
 * The request schemas are the validators of their bodies (src/http/operation.ts parses them where
 * the handler reads the body): each rule that used to be written by hand in src/domain answers the
 * same 400, with the same field path and message, and the parsed value is what the domain reads.
 */
import { z } from 'zod';
import { MAX_VIOLATIONS, parseOrThrow, ruledByViolations, setAside } from '../../src/domain/validation';
import * as api from '../../src/domain/api-schemas';
import * as secrets from '../../src/domain/secret-schemas';
import * as gov from '../../src/domain/schemas';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/webhooks/body';
import { type FieldViolation, InvalidArgumentError } from '../../src/errors';

/** The violations `parseOrThrow` throws (a 400), or the parsed value. */
function parsed(
  schema: Parameters<typeof parseOrThrow>[0],
  input: unknown,
): { value: unknown } | { violations: FieldViolation[] } {
  try {
    return { value: parseOrThrow(schema, input) };
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    return { violations: err.violations };
  }
}

const refused = (field: string, description: string) => ({ violations: [{ field, description }] });

describe('run control bodies', () => {
  const COMMENT = 'must be a string of at most 2000 characters';
  const REASON = 'is required: a non-empty string of at most 1000 characters';

  it('a decision comment is an optional string of at most 2000 characters', () => {
    expect(parsed(api.DecisionRequest, {})).toEqual({ value: {} });
    expect(parsed(api.DecisionRequest, { comment: null })).toEqual({ value: { comment: null } });
    expect(parsed(api.DecisionRequest, { comment: 'x'.repeat(2000) })).toEqual({
      value: { comment: 'x'.repeat(2000) },
    });
    expect(parsed(api.DecisionRequest, { comment: 'x'.repeat(2001) })).toEqual(refused('comment', COMMENT));
    expect(parsed(api.DecisionRequest, { comment: 7 })).toEqual(refused('comment', COMMENT));
  });

  it('a terminate reason is required, not white space only, at most 1000 characters: one violation each', () => {
    expect(parsed(api.TerminateRequest, { reason: ' done ' })).toEqual({ value: { reason: ' done ' } });
    for (const reason of [undefined, null, 7, '', '   ', '\t\n', 'x'.repeat(1001), ' '.repeat(1001)]) {
      expect([reason, parsed(api.TerminateRequest, { reason })]).toEqual([reason, refused('reason', REASON)]);
    }
  });

  it('fromFailedStep of a rerun is a boolean, or absent', () => {
    expect(parsed(api.RerunRequest, {})).toEqual({ value: {} });
    expect(parsed(api.RerunRequest, { fromFailedStep: true })).toEqual({ value: { fromFailedStep: true } });
    expect(parsed(api.RerunRequest, { fromFailedStep: 'yes' })).toEqual(refused('fromFailedStep', 'must be a boolean'));
  });
});

describe('API client create', () => {
  const ROLES = 'must be a non-empty list of super_admin, admin, read_only';

  it('names roles as one field whatever is wrong in it, and displayName by its rule', () => {
    expect(parsed(api.CreateClientRequest, { roles: ['admin', 'admin'] })).toEqual({
      value: { roles: ['admin', 'admin'] },
    });
    for (const roles of [undefined, 'admin', [], ['admin', 'root'], [7]]) {
      expect([roles, parsed(api.CreateClientRequest, { roles })]).toEqual([roles, refused('roles', ROLES)]);
    }
    expect(parsed(api.CreateClientRequest, { displayName: 'x'.repeat(201), roles: ['admin'] })).toEqual(
      refused('displayName', 'must be a string of at most 200 characters'),
    );
    expect(parsed(api.CreateClientRequest, { displayName: 7, roles: ['admin'] })).toEqual(
      refused('displayName', 'must be a string of at most 200 characters'),
    );
  });
});

describe('automation rotate-secret and dry run', () => {
  it('gracePeriod is seconds, at most 7 days; no other field is taken', () => {
    expect(parsed(api.RotateSecretRequest, {})).toEqual({ value: {} });
    expect(parsed(api.RotateSecretRequest, { gracePeriod: '0s' })).toEqual({ value: { gracePeriod: '0s' } });
    expect(parsed(api.RotateSecretRequest, { gracePeriod: '1.5s' })).toEqual({ value: { gracePeriod: '1.5s' } });
    expect(parsed(api.RotateSecretRequest, { gracePeriod: '604800s' })).toEqual({ value: { gracePeriod: '604800s' } });
    const FORMAT = 'must be a duration in seconds such as "86400s" (0s revokes the old secret at once)';
    for (const gracePeriod of ['1h', 86400, null, '-1s'])
      expect(parsed(api.RotateSecretRequest, { gracePeriod })).toEqual(refused('gracePeriod', FORMAT));
    expect(parsed(api.RotateSecretRequest, { gracePeriod: '604801s' })).toEqual(
      refused('gracePeriod', 'must be at most 604800s (7 days)'),
    );
    expect(parsed(api.RotateSecretRequest, { grace: '1s' })).toEqual(
      refused('grace', 'is not a field of this request (only gracePeriod)'),
    );
  });

  it('payload is required (null is a payload) and at most a webhook body of JSON', () => {
    expect(parsed(api.DryRunRequest, { payload: null })).toEqual({ value: { payload: null } });
    expect(parsed(api.DryRunRequest, {})).toEqual(
      refused('payload', 'is required: a sample webhook body (any JSON), read as ctx.trigger'),
    );
    const big = 'x'.repeat(MAX_WEBHOOK_BODY_BYTES);
    expect(parsed(api.DryRunRequest, { payload: big })).toEqual(
      refused('payload', `must be at most ${MAX_WEBHOOK_BODY_BYTES} bytes of JSON, like a webhook body`),
    );
    expect(parsed(api.DryRunRequest, { payload: big.slice(2) })).toEqual({ value: { payload: big.slice(2) } });
  });
});

describe('outbound secret bodies', () => {
  const good = { name: 'crm_token', value: 'v', allowedOrigins: ['HTTPS://CRM.example:443/', 'https://crm.example'] };

  it('a create is parsed with its origins normalised and folded', () => {
    expect(parsed(secrets.CreateSecretRequest, good)).toEqual({
      value: { name: 'crm_token', value: 'v', allowedOrigins: ['https://crm.example'] },
    });
  });

  it('names each rule of the name and the value, without quoting the value', () => {
    const NAME = 'must match ^[a-z][a-z0-9_]{0,62}$ (it is read as secrets.<name>)';
    for (const name of [undefined, 7, 'Crm', 'a'.repeat(64)])
      expect(parsed(secrets.CreateSecretRequest, { ...good, name })).toEqual(refused('name', NAME));
    expect(parsed(secrets.CreateSecretRequest, { ...good, name: 'in' })).toEqual(
      refused('name', '"in" is a CEL keyword: secrets.in cannot be read'),
    );
    for (const value of [undefined, 42, ''])
      expect(parsed(secrets.CreateSecretRequest, { ...good, value })).toEqual(
        refused('value', 'is required: a non-empty string'),
      );
    expect(parsed(secrets.CreateSecretRequest, { ...good, value: 'x'.repeat(4097) })).toEqual(
      refused('value', 'must be at most 4096 characters'),
    );
    expect(parsed(secrets.CreateSecretRequest, { ...good, value: 'a\r\nB: c' })).toEqual(
      refused('value', 'must hold only tabs and printable Latin-1 characters (no line breaks): it is sent in a header'),
    );
    expect(parsed(secrets.CreateSecretRequest, { ...good, value: 'whsec_!!' })).toEqual(
      refused('value', 'a whsec_ value must be base64 after the prefix (it is decoded to sign calls)'),
    );
    expect(parsed(secrets.CreateSecretRequest, { ...good, extra: 1 })).toEqual(
      refused('extra', 'is not a field of this request (only name, value, allowedOrigins)'),
    );
    expect(parsed(secrets.CreateSecretRequest, { ...good, allowedOrigins: [], extra: 1, more: 2 })).toEqual({
      violations: [
        {
          field: 'allowedOrigins',
          description: 'is required: a list of 1 to 20 origins scheme://host[:port] the secret may be sent to',
        },
        { field: 'extra', description: 'is not a field of this request (only name, value, allowedOrigins)' },
        { field: 'more', description: 'is not a field of this request (only name, value, allowedOrigins)' },
      ],
    });
  });

  it('allowedOrigins: the list as one field, each origin by its index and its own problem', () => {
    const LIST = 'is required: a list of 1 to 20 origins scheme://host[:port] the secret may be sent to';
    const many = Array.from({ length: 21 }, (_, i) => `https://h${i}.example`);
    for (const allowedOrigins of [undefined, null, [], 'https://crm.example', many]) {
      expect(parsed(secrets.CreateSecretRequest, { ...good, allowedOrigins })).toEqual(refused('allowedOrigins', LIST));
    }
    expect(
      parsed(secrets.CreateSecretRequest, {
        ...good,
        allowedOrigins: ['https://ok.example', 'https://crm.example/path', 7],
      }),
    ).toEqual({
      violations: [
        {
          field: 'allowedOrigins[1]',
          description: 'must be an origin only: scheme://host[:port], no path, query or fragment',
        },
        { field: 'allowedOrigins[2]', description: 'must be a string scheme://host[:port]' },
      ],
    });
    expect(parsed(secrets.CreateSecretRequest, { ...good, allowedOrigins: ['https://user:pw@crm.example'] })).toEqual(
      refused('allowedOrigins[0]', 'must not carry credentials'),
    );
  });

  it('a replace needs value or allowedOrigins; gracePeriod goes with a value only', () => {
    expect(parsed(secrets.ReplaceSecretRequest, { value: 'v' })).toEqual({ value: { value: 'v' } });
    expect(parsed(secrets.ReplaceSecretRequest, { value: 'v', gracePeriod: '60s' })).toEqual({
      value: { value: 'v', gracePeriod: '60s' },
    });
    expect(parsed(secrets.ReplaceSecretRequest, {})).toEqual(
      refused(
        'value',
        'is required unless allowedOrigins is given: the new value (or give allowedOrigins to change where the secret may go)',
      ),
    );
    const ALONE = 'applies to a new value only: give value with it';
    expect(
      parsed(secrets.ReplaceSecretRequest, { gracePeriod: '60s', allowedOrigins: ['https://crm.example'] }),
    ).toEqual(refused('gracePeriod', ALONE));
    expect(
      parsed(secrets.ReplaceSecretRequest, { gracePeriod: 'soon', allowedOrigins: ['https://crm.example'] }),
    ).toEqual(refused('gracePeriod', ALONE));
    expect(parsed(secrets.ReplaceSecretRequest, { gracePeriod: '60s', allowedOrigins: [7] })).toEqual({
      violations: [
        { field: 'allowedOrigins[0]', description: 'must be a string scheme://host[:port]' },
        { field: 'gracePeriod', description: ALONE },
      ],
    });
    const GRACE =
      'must be a duration in seconds such as "86400s", at most "604800s" (7 days); "0s" drops the old value at once';
    expect(parsed(secrets.ReplaceSecretRequest, { value: 'v', gracePeriod: '604801s' })).toEqual(
      refused('gracePeriod', GRACE),
    );
    expect(parsed(secrets.ReplaceSecretRequest, { value: 'v', gracePeriod: 60 })).toEqual(
      refused('gracePeriod', GRACE),
    );
    expect(parsed(secrets.ReplaceSecretRequest, { value: 'v', name: 'other' })).toEqual(
      refused('name', 'is not a field of this request (only value, gracePeriod, allowedOrigins)'),
    );
  });
});

describe('codec payloads', () => {
  it('each metadata value and data is base64, named by its path in the body', () => {
    expect(parsed(api.CodecPayloads, { payloads: [{ metadata: { encoding: 'YmluYXJ5' }, data: 'e30=' }] })).toEqual({
      value: { payloads: [{ metadata: { encoding: 'YmluYXJ5' }, data: 'e30=' }] },
    });
    expect(parsed(api.CodecPayloads, { payloads: [{ data: 'e30=' }, { data: 'not base64!' }] })).toEqual(
      refused('payloads[1].data', 'must be base64'),
    );
    expect(parsed(api.CodecPayloads, { payloads: [{ metadata: { encoding: '%%' } }] })).toEqual(
      refused('payloads[0].metadata.encoding', 'must be base64'),
    );
  });
});

describe('entitlement search', () => {
  it('checks the filter; the paging fields (and their aliases) are never refused and reach readPageRequest as sent', () => {
    expect(parsed(gov.SearchEntitlementsRequest, { query: 'x', page_size: 'many', pageToken: 7 })).toEqual({
      value: { query: 'x', page_size: 'many', pageToken: 7 },
    });
    expect(parsed(gov.SearchEntitlementsRequest, { appIds: ['a', 7] })).toEqual({
      violations: [{ field: 'appIds[1]', description: expect.any(String) }],
    });
    expect(parsed(gov.SearchEntitlementsRequest, { query: 7 })).toEqual({
      violations: [{ field: 'query', description: expect.any(String) }],
    });
  });
});

describe('automation create and update', () => {
  const HMAC = { incomingWebhook: { authMethod: 'HMAC' } };
  const NAME = 'must be a non-empty string of at most 200 characters';
  const EXACTLY_ONE =
    'a step sets exactly one of setVariables, wait, createEntitlementOwner, deleteEntitlementOwner, ensureUser, grantEntitlements, revokeEntitlements, callWebhook, fail, log, waitForApproval, notify';
  /** A create body with one problem in each part, as the domain names them: its field path (the step's as `steps[n]…`) and message. */
  const EVERYTHING_WRONG = {
    displayName: ' ',
    description: 7,
    trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'http://idp.example/jwks', allowedCidrs: ['nope'] } },
    steps: [{ id: 'a', log: { message: "'x'" }, bogus: 1 }, { id: 'a', log: { message: 'x' } }, { id: 'b' }],
    rateLimit: { limit: 0, period: '1s', other: true },
    filter: 'ctx.(',
  };
  const EVERYTHING_REFUSED = [
    { field: 'displayName', description: NAME },
    { field: 'description', description: 'must be a string of at most 4000 characters' },
    { field: 'trigger.incomingWebhook.jwksUrl', description: 'JWKS URL must use https' },
    { field: 'trigger.incomingWebhook.allowedCidrs[0]', description: 'not an IPv4 or IPv6 address' },
    { field: 'steps[0].bogus', description: 'step "a": unknown field' },
    { field: 'steps[1].id', description: 'step id "a" is used twice' },
    {
      field: 'steps[1].log.message',
      description:
        'step "a": unknown name "x" at line 1, column 1: only ctx is defined (ctx.trigger.<field>, ctx.steps.<id>.<field>)',
    },
    { field: 'steps[2]', description: `step "b": no step kind; ${EXACTLY_ONE}` },
    { field: 'filter', description: 'syntax error at line 1, column 4: found . but expecting end of input' },
    { field: 'rateLimit.other', description: 'is not a known field' },
    { field: 'rateLimit.limit', description: 'must be an integer from 1 to 10000' },
  ];

  it('a create lists every violation in one 400, each with the field path and message the domain gives', () => {
    expect(parsed(api.CreateAutomationRequest, EVERYTHING_WRONG)).toEqual({ violations: EVERYTHING_REFUSED });
  });

  it('names the unknown fields of strict objects that zod leaves out of its output (a flow option, a step)', () => {
    const body = {
      displayName: 'x',
      trigger: HMAC,
      steps: [{ id: 's', wait: { duration: '1s' }, extra: 1 }],
      concurrency: { limit: 1, zz: 1 },
    };
    expect(parsed(api.CreateAutomationRequest, body)).toEqual({
      violations: [
        { field: 'steps[0].extra', description: 'step "s": unknown field' },
        { field: 'concurrency.zz', description: 'is not a known field' },
      ],
    });
  });

  it('answers the draft as stored: name trimmed, trigger filled in, nulls dropped, every flow option present', () => {
    expect(
      parsed(api.CreateAutomationRequest, {
        displayName: ' Offboard ',
        trigger: HMAC,
        steps: [{ id: 's', log: { message: "'hi'" }, when: null }],
        extra: 1,
      }),
    ).toEqual({
      value: {
        displayName: 'Offboard',
        description: '',
        trigger: { authMethod: 'HMAC', jwksUrl: '', allowedCidrs: [], enabled: true },
        steps: [{ id: 's', log: { message: "'hi'" } }],
        flow: { filter: null, rateLimit: null, concurrency: null },
      },
    });
  });

  it('checks a JWKS URL by the configuration the schemas are made with', () => {
    const body = {
      displayName: 'x',
      trigger: { incomingWebhook: { authMethod: 'JWT', jwksUrl: 'http://127.0.0.1:9/jwks' } },
    };
    const development = api.automationWriteRequests({ baseUrl: 'http://localhost', allowInsecureJwks: true });
    expect(parsed(development.create, body)).toMatchObject({
      value: { trigger: { authMethod: 'JWT', jwksUrl: 'http://127.0.0.1:9/jwks' } },
    });
    expect(parsed(api.CreateAutomationRequest, body)).toEqual(
      refused('trigger.incomingWebhook.jwksUrl', 'JWKS URL must use https'),
    );
  });

  it('an update: the first problem of its shape alone, then every violation of the masked fields (trigger and steps named from their own root)', () => {
    expect(parsed(api.UpdateAutomationRequest, { automation: 'x' })).toEqual(
      refused('automation', 'is required and must be an object'),
    );
    expect(parsed(api.UpdateAutomationRequest, { automation: { displayName: '' }, updateMask: 7 })).toEqual(
      refused('updateMask', 'must be a comma-separated list of field paths'),
    );
    expect(
      parsed(api.UpdateAutomationRequest, { automation: { displayName: '' }, updateMask: 'displayName,owner' }),
    ).toEqual(
      refused(
        'updateMask',
        'unknown field path "owner"; allowed: displayName, description, trigger, steps, filter, rateLimit, concurrency',
      ),
    );
    const { steps, rateLimit, trigger } = EVERYTHING_WRONG;
    expect(
      parsed(api.UpdateAutomationRequest, {
        automation: { displayName: ' ', description: 7, steps, rateLimit, trigger },
        updateMask: 'displayName,steps,rateLimit',
      }),
    ).toEqual({
      violations: [
        { field: 'automation.displayName', description: NAME },
        ...EVERYTHING_REFUSED.filter((violation) => violation.field.startsWith('steps')),
        { field: 'automation.rateLimit.other', description: 'is not a known field' },
        { field: 'automation.rateLimit.limit', description: 'must be an integer from 1 to 10000' },
      ],
    });
  });

  it('an update answers the masked fields as stored; without a mask, the fields the body carries', () => {
    expect(
      parsed(api.UpdateAutomationRequest, {
        automation: { displayName: ' New ', filter: null },
        updateMask: ['displayName', 'filter'],
      }),
    ).toEqual({
      value: { mask: new Set(['displayName', 'filter']), fields: { displayName: 'New' }, flow: { filter: null } },
    });
    expect(parsed(api.UpdateAutomationRequest, { automation: { description: 'd', unknown: 1 } })).toEqual({
      value: { mask: new Set(['description']), fields: { description: 'd' }, flow: {} },
    });
  });

  it(`reports at most ${MAX_VIOLATIONS} violations, as for every body (the domain listed them all)`, () => {
    const steps = Array.from({ length: MAX_VIOLATIONS + 5 }, (_, index) => ({ id: `s${index}` }));
    const result = parsed(api.CreateAutomationRequest, { displayName: 'x', trigger: HMAC, steps });
    expect('violations' in result && result.violations.map((violation) => violation.field)).toEqual(
      steps.slice(0, MAX_VIOLATIONS).map((_, index) => `steps[${index}]`),
    );
  });

  it('where the rule is silent, the shape the document shows still refuses the body (the document binds)', () => {
    // A rule that only looks at `name`: the shape's bound on `count` is the only thing against {count: 9}.
    const shape = setAside(z.strictObject({ name: z.string(), count: z.number().max(5) }));
    const schema = ruledByViolations(shape, (value, violations) => {
      if (typeof (value as { name?: unknown }).name !== 'string')
        violations.push({ field: 'name', description: 'is required' });
      return value;
    });
    expect(parsed(schema, { name: 'a', count: 3 })).toEqual({ value: { name: 'a', count: 3 } });
    const result = parsed(schema, { name: 'a', count: 9 });
    expect('violations' in result && result.violations.map((violation) => violation.field)).toEqual(['count']);
    // When the rule speaks, its words win: the shape's own issues are not added to them.
    const both = parsed(schema, { count: 9 });
    expect('violations' in both && both.violations).toEqual([{ field: 'name', description: 'is required' }]);
  });
});

describe('a bulk action request: from a preview, or by a filter', () => {
  const filter = { automationId: 'a-1' };
  const REQUIRED_REASON = 'is required: why the runs are acted on';
  const REQUIRED_ACTION = 'is required: cancel, terminate or rerun';

  it('with a previewId it acts on the preview: action and reason required, never a dry run again', () => {
    expect(parsed(api.BulkActionRequest, { previewId: 'p', action: 'cancel', reason: 'r' })).toEqual({
      value: { kind: 'preview', previewId: 'p', action: 'cancel', reason: 'r' },
    });
    expect(parsed(api.BulkActionRequest, { previewId: 'p', reason: 'r' })).toEqual(refused('action', REQUIRED_ACTION));
    expect(parsed(api.BulkActionRequest, { previewId: 'p', action: 'cancel' })).toEqual(
      refused('reason', REQUIRED_REASON),
    );
    expect(parsed(api.BulkActionRequest, { previewId: 'p', action: 'cancel', reason: 'r', dryRun: true })).toEqual(
      refused('previewId', 'is for acting on a dry run: send it without dryRun'),
    );
    expect(parsed(api.BulkActionRequest, { previewId: 7, action: 'cancel', reason: 'r' })).toEqual(
      refused('previewId', 'must be the previewId of a dry run'),
    );
  });

  it('without one it matches by its filter: a dry run needs no action, an action does', () => {
    expect(parsed(api.BulkActionRequest, { filter, reason: 'r', dryRun: true })).toEqual({
      value: { kind: 'dryRun', filter, reason: 'r', action: null },
    });
    expect(parsed(api.BulkActionRequest, { filter, reason: 'r', action: 'rerun', previewId: null })).toEqual({
      value: { kind: 'filter', filter, reason: 'r', action: 'rerun' },
    });
    expect(parsed(api.BulkActionRequest, { filter, reason: 'r' })).toEqual(refused('action', REQUIRED_ACTION));
    expect(parsed(api.BulkActionRequest, { filter, reason: 'r', dryRun: false })).toEqual(
      refused('action', REQUIRED_ACTION),
    );
    expect(parsed(api.BulkActionRequest, { action: 'cancel', reason: 'r' })).toEqual(
      refused('filter.automationId', 'is required: the automation whose runs are matched'),
    );
    expect(parsed(api.BulkActionRequest, { action: 'cancel', filter, reason: null })).toEqual(
      refused('reason', REQUIRED_REASON),
    );
    expect(parsed(api.BulkActionRequest, { action: 'explode', filter, reason: 'r' })).toEqual(
      refused('action', 'must be one of cancel, terminate, rerun'),
    );
  });

  it("the filter's own rules: where compiles, startedBefore is later than startedAfter", () => {
    const where = parsed(api.BulkActionRequest, {
      action: 'cancel',
      reason: 'r',
      filter: { ...filter, where: 'ctx.trigger.(' },
    });
    expect(where).toMatchObject({ violations: [{ field: 'filter.where' }] });
    expect(
      parsed(api.BulkActionRequest, {
        action: 'cancel',
        reason: 'r',
        filter: { ...filter, startedAfter: '2026-01-02T00:00:00Z', startedBefore: '2026-01-01T00:00:00Z' },
      }),
    ).toEqual(refused('filter.startedBefore', 'must be later than startedAfter'));
    expect(
      parsed(api.BulkActionRequest, {
        action: 'cancel',
        reason: 'r',
        filter: { ...filter, startedAfter: '2026-01-01T00:00:00Z', startedBefore: '2026-01-02T00:00:00Z' },
      }),
    ).toMatchObject({ value: { kind: 'filter' } });
  });
});
