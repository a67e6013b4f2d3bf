/**
 * What the service shows of a stored automation (`automationView`) against the OpenAPI document's
 * strict response schema (fast-check over bodies the service accepts), so the document never
 * hides a field of a response; and the document's step shape (exactly one kind, retry only where
 * the kind takes one). Step bodies need no agreement test: each kind's schema is its validator.
 */
import { validateFlowControl } from '../../src/flow';
import fc from 'fast-check';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../src/http/routes';
import { validateDescription, validateDisplayName, validateSteps } from '../../src/domain/automation-validation';
import { validateTrigger } from '../../src/triggers';
import { automationView } from '../../src/domain/automations';
import type { AutomationRecord } from '../../src/store/automations';
import type { FieldViolation } from '../../src/errors';

const BASE_URL = 'https://tenant.example.test';
const ID = 'https://openapi.test/components.json';

let requestSchema: ValidateFunction;
let responseSchema: ValidateFunction;

beforeAll(() => {
  const doc = buildOpenApiDocument({ baseUrl: BASE_URL }) as { components: { schemas: Record<string, unknown> } };
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  ajv.addFormat('int64', { type: 'string', validate: (value: string) => /^-?[0-9]+$/.test(value) });
  ajv.addSchema(
    JSON.parse(
      JSON.stringify({ $id: ID, $defs: doc.components.schemas }).replaceAll('"#/components/schemas/', `"${ID}#/$defs/`),
    ),
  );
  requestSchema = ajv.compile({ $ref: `${ID}#/$defs/CreateAutomationRequest` });
  responseSchema = ajv.compile({ $ref: `${ID}#/$defs/Automation` });
});

const cel = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      'ctx.trigger.x',
      'ctx.trigger["a b"]',
      "'owner'",
      'has(ctx.trigger.k)',
      'ctx.steps.s.v',
      '1 + 2 == 3',
      "'https://hooks.example/' + ctx.trigger.id",
      '{"a": 1}',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('1 +', '', ' ') },
);
const maybeNull = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
/** Absent in most bodies (each of the flow-control fields), so that valid bodies stay common. */
const rarely = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
const duration = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('60s', '0.5s', '3600s', '1.5s') },
  { weight: 1, arbitrary: fc.constantFrom('0s', '-1s', 'soon') },
);
const retry = fc.record(
  {
    maximumAttempts: maybeNull(fc.integer({ min: 0, max: 25 })),
    initialInterval: maybeNull(duration),
    maximumInterval: maybeNull(duration),
    backoffCoefficient: maybeNull(fc.double({ min: 0.5, max: 12, noNaN: true })),
  },
  { requiredKeys: [] },
);
const ownership = fc.record({ userId: cel, roleSlug: cel, appId: cel, entitlementId: cel });
const kinds = fc.oneof(
  fc.record({
    setVariables: fc.dictionary(fc.stringMatching(/^[a-z_][a-z0-9_]{0,6}$|^9x$/), cel, { minKeys: 0, maxKeys: 3 }),
  }),
  fc.record({ wait: fc.record({ duration }) }),
  fc.record({ createEntitlementOwner: ownership }),
  fc.record({ deleteEntitlementOwner: ownership }),
  fc.record({
    callWebhook: fc.record(
      {
        url: cel,
        body: fc.oneof(cel, fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), cel, { maxKeys: 3 })),
        headers: maybeNull(
          fc.dictionary(fc.constantFrom('X-Token', 'x-id', 'Content-Type', 'bad header'), cel, { maxKeys: 2 }),
        ),
        timeoutMs: maybeNull(fc.oneof(fc.integer({ min: 0, max: 40_000 }), fc.constant(1.5))),
      },
      { requiredKeys: ['url', 'body'] },
    ),
  }),
  fc.record({ fail: fc.record({ message: cel }) }),
  fc.record({ notify: fc.record({ webhook: fc.constantFrom('team_hook', 'Bad-Name'), text: cel }) }),
);
const step = fc
  .tuple(
    fc.record(
      {
        id: fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$|^1x$/),
        when: maybe(maybeNull(cel)),
        retry: maybe(maybeNull(retry)),
      },
      { requiredKeys: ['id'] },
    ),
    kinds,
    fc.option(fc.constantFrom('wait', 'fail', 'setVariables'), { nil: undefined }),
  )
  .map(([head, kind, nullKind]) => ({
    ...head,
    ...(nullKind && !(nullKind in kind) ? { [nullKind]: null } : {}),
    ...kind,
  }));
const cidrs = maybeNull(
  fc.array(
    fc.oneof(
      { weight: 5, arbitrary: fc.oneof(fc.ipV4(), fc.ipV6(), fc.constant('10.0.0.0/8')) },
      fc.constantFrom('1.2.3.4/40', 'nope'),
    ),
    {
      maxLength: 3,
    },
  ),
);
const trigger = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      incomingWebhook: fc.record(
        {
          authMethod: fc.constant('HMAC'),
          jwksUrl: maybe(maybeNull(fc.constant(''))),
          allowedCidrs: cidrs,
          enabled: maybeNull(fc.boolean()),
        },
        { requiredKeys: ['authMethod'] },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      incomingWebhook: fc.record(
        {
          authMethod: fc.constant('JWT'),
          jwksUrl: fc.constant('https://idp.example/jwks.json'),
          allowedCidrs: cidrs,
          enabled: maybeNull(fc.boolean()),
        },
        { requiredKeys: ['authMethod', 'jwksUrl'] },
      ),
    }),
  },
  fc.record({
    incomingWebhook: fc.record(
      {
        authMethod: fc.constantFrom('HMAC', 'JWT', 'OTHER'),
        jwksUrl: maybeNull(
          fc.oneof(
            fc.constant(''),
            fc.constantFrom('https://idp.example/jwks.json', 'http://idp.example/jwks.json', 'https://10.0.0.1/jwks'),
          ),
        ),
        allowedCidrs: cidrs,
        enabled: maybeNull(fc.boolean()),
      },
      { requiredKeys: ['authMethod'] },
    ),
  }),
);
const automation = fc.record(
  {
    displayName: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('Offboard', 'x', 'Sync é') },
      fc.constantFrom(' ', ''),
      fc.string({ maxLength: 210 }),
    ),
    description: maybeNull(fc.string({ maxLength: 50 })),
    trigger,
    steps: maybeNull(fc.uniqueArray(step, { maxLength: 4, selector: (value) => value.id })),
    filter: rarely(maybeNull(cel)),
    concurrency: rarely(
      maybeNull(
        fc.record({ limit: fc.constantFrom(1, 2, 100, 0, 101, 1.5), key: maybeNull(cel) }, { requiredKeys: ['limit'] }),
      ),
    ),
    rateLimit: rarely(
      maybeNull(
        fc.record(
          {
            limit: fc.constantFrom(1, 10_000, 0, 10_001),
            period: fc.constantFrom('1s', '60s', '86400s', '0s', '86401s', '1m', '1.5s'),
            key: maybeNull(cel),
          },
          { requiredKeys: ['limit', 'period'] },
        ),
      ),
    ),
  },
  { requiredKeys: ['displayName', 'trigger'] },
);

/** What POST /api/v1/automations does before storing: the hand-written validation. */
function validate(body: Record<string, unknown>): { violations: FieldViolation[]; record: AutomationRecord } {
  const violations: FieldViolation[] = [];
  const displayName = validateDisplayName(body.displayName, 'displayName', violations);
  const description = validateDescription(body.description, 'description', violations);
  const trigger = validateTrigger(body.trigger, { baseUrl: BASE_URL, allowInsecureJwks: false }, violations);
  const steps = validateSteps(body.steps ?? [], violations);
  const flow = validateFlowControl(body, '', violations);
  const now = new Date().toISOString();
  const record = {
    id: 'aut_1',
    displayName,
    description,
    published: false,
    version: 1,
    trigger,
    listenerId: 'lst_1',
    steps,
    flow,
    sealedSigningSecret: null,
    createdAt: now,
    updatedAt: now,
  } as unknown as AutomationRecord;
  return { violations, record };
}

describe('automation schemas of the OpenAPI document', () => {
  it('describe exactly what the service shows of every automation it accepts', () => {
    let accepted = 0;
    fc.assert(
      fc.property(automation, (body) => {
        const { violations, record } = validate(body);
        if (violations.length > 0) return;
        accepted += 1;
        for (const view of [
          automationView(record, BASE_URL),
          automationView({ ...record, publishedVersion: null }, BASE_URL),
        ]) {
          if (!responseSchema(view))
            throw new Error(
              `view does not match the document: ${JSON.stringify(responseSchema.errors)}\n${JSON.stringify(view)}`,
            );
        }
      }),
      { numRuns: 400 },
    );
    // The generator is meant to reach valid bodies often, not only refusals.
    expect(accepted).toBeGreaterThan(40);
  });

  it('refuse a step with two kinds, or without any', () => {
    const base = { displayName: 'x', trigger: { incomingWebhook: { authMethod: 'HMAC' } } };
    expect(requestSchema({ ...base, steps: [{ id: 'a', wait: { duration: '1s' }, fail: { message: "'x'" } }] })).toBe(
      false,
    );
    expect(requestSchema({ ...base, steps: [{ id: 'a' }] })).toBe(false);
    expect(requestSchema({ ...base, steps: [{ id: 'a', wait: { duration: '1s' }, fail: null }] })).toBe(true);
    expect(
      requestSchema({ ...base, steps: [{ id: 'a', wait: { duration: '1s' }, retry: { maximumAttempts: 2 } }] }),
    ).toBe(false);
    expect(requestSchema({ displayName: 'x', trigger: { incomingWebhook: { authMethod: 'JWT' } } })).toBe(false);
  });
});
