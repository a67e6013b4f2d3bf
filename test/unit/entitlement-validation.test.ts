import {
  jsonDepthViolation,
  parseEntitlementWrite,
  parseUpdateMask,
  validateEntitlementWrite,
} from '../../src/domain/entitlement-validation';
import { WRITABLE_FIELDS } from '../../src/domain/schemas';
import { fieldPath } from '../../src/domain/validation';
import { isDuration } from '../../src/domain/entitlement-rules';
import { InvalidArgumentError } from '../../src/errors';

/** The field paths a write is refused for ([] when accepted). */
function violations(input: Record<string, unknown>): string[] {
  const result = validateEntitlementWrite({ displayName: 'Admin', ...input });
  return result.ok ? [] : result.violations.map((v) => v.field);
}

function accepted(input: Record<string, unknown>) {
  const result = validateEntitlementWrite({ displayName: 'Admin', ...input });
  if (!result.ok) throw new Error(`refused: ${JSON.stringify(result.violations)}`);
  return result.fields;
}

const manual = { manual: { instructions: 'do it', assignee: { users: { userIds: ['u1'] } } } };

describe('AppEntitlement write validation', () => {
  describe('fields and types', () => {
    it('fills every writable field with its default', () => {
      const fields = accepted({});
      expect(Object.keys(fields).sort()).toEqual([...WRITABLE_FIELDS].sort());
      expect(fields).toMatchObject({
        alias: '',
        purpose: 'APP_ENTITLEMENT_PURPOSE_VALUE_UNSPECIFIED',
        durationUnset: null,
        durationGrant: null,
        emergencyGrantEnabled: false,
        provisionerPolicy: null,
        complianceFrameworkValueIds: null,
        sourceConnectorIds: {},
        userEditedMask: null,
        annotations: {},
      });
    });

    it('requires a non-blank displayName', () => {
      expect(validateEntitlementWrite({})).toMatchObject({
        ok: false,
        violations: [{ field: 'displayName', description: 'is required' }],
      });
      expect(violations({ displayName: '  ' })).toEqual(['displayName']);
      expect(violations({ displayName: 7 })).toEqual(['displayName']);
      expect(violations({ displayName: null })).toEqual(['displayName']);
    });

    it('checks the type of every scalar field and treats null as unset', () => {
      expect(violations({ slug: 5 })).toEqual(['slug']);
      expect(violations({ alias: ['x'] })).toEqual(['alias']);
      expect(violations({ emergencyGrantEnabled: 'yes' })).toEqual(['emergencyGrantEnabled']);
      expect(violations({ userEditedMask: 1 })).toEqual(['userEditedMask']);
      expect(accepted({ slug: null, emergencyGrantEnabled: null }).slug).toBe('');
    });

    it('checks arrays of strings and string maps element by element', () => {
      expect(violations({ complianceFrameworkValueIds: ['a', 2] })).toEqual(['complianceFrameworkValueIds[1]']);
      expect(violations({ complianceFrameworkValueIds: 'a' })).toEqual(['complianceFrameworkValueIds']);
      expect(violations({ sourceConnectorIds: { c1: 'x', c2: 3 } })).toEqual(['sourceConnectorIds["c2"]']);
      expect(violations({ sourceConnectorIds: ['x'] })).toEqual(['sourceConnectorIds']);
      expect(accepted({ sourceConnectorIds: { 'any key': 'conn' } }).sourceConnectorIds).toEqual({ 'any key': 'conn' });
    });

    it('keeps unknown purpose values and refuses non-strings', () => {
      expect(accepted({ purpose: 'APP_ENTITLEMENT_PURPOSE_VALUE_OWNERSHIP' }).purpose).toBe(
        'APP_ENTITLEMENT_PURPOSE_VALUE_OWNERSHIP',
      );
      expect(accepted({ purpose: 'SOMETHING_NEW' }).purpose).toBe('SOMETHING_NEW');
      expect(violations({ purpose: 3 })).toEqual(['purpose']);
    });

    it('drops unknown and read-only fields', () => {
      const fields = accepted({ grantCount: '9', id: 'x', systemBuiltin: true, somethingElse: 1 }) as Record<
        string,
        unknown
      >;
      expect(fields.grantCount).toBeUndefined();
      expect(fields.id).toBeUndefined();
      expect(fields.somethingElse).toBeUndefined();
    });

    it('names every offending field at once', () => {
      expect(violations({ slug: 1, alias: 2 }).sort()).toEqual(['alias', 'slug']);
    });
  });

  describe('annotations', () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));

    it('rule 1: at most 16 entries', () => {
      expect(violations({ annotations: many(16) })).toEqual([]);
      expect(violations({ annotations: many(17) })).toEqual(['annotations']);
    });

    it('rule 2: keys of 1..128 characters matching ^[A-Za-z][A-Za-z0-9._/-]{0,127}$', () => {
      expect(violations({ annotations: { managed_by: 'terraform', 'a.b/c-d_e': 'x', Z: '' } })).toEqual([]);
      expect(violations({ annotations: { ['a'.repeat(128)]: 'x' } })).toEqual([]);
      expect(violations({ annotations: { ['a'.repeat(129)]: 'x' } })).toEqual([`annotations["${'a'.repeat(129)}"]`]);
      expect(violations({ annotations: { 'bad key': 'x' } })).toEqual(['annotations["bad key"]']);
      expect(violations({ annotations: { '1abc': 'x' } })).toEqual(['annotations["1abc"]']);
      expect(violations({ annotations: { '': 'x' } })).toEqual(['annotations[""]']);
      expect(violations({ annotations: { 'a:b': 'x' } })).toEqual(['annotations["a:b"]']);
    });

    it('rule 3: values of 0..256 URL-safe ASCII characters', () => {
      const urlSafe = "AZaz09-._~:/?#[]@!$&'()*+,;=%";
      expect(
        violations({ annotations: { a: '', b: 'x'.repeat(256), c: urlSafe, d: 'https://x.example/a?b=c#d' } }),
      ).toEqual([]);
      expect(violations({ annotations: { a: 'x'.repeat(257) } })).toEqual(['annotations["a"]']);
      for (const bad of ['has space', 'quote"', 'angle<', 'caf\u00e9', 'back\\slash', 'brace{', 'line\n']) {
        expect(violations({ annotations: { a: bad } })).toEqual(['annotations["a"]']);
      }
      expect(violations({ annotations: { a: 1 } })).toEqual(['annotations["a"]']);
      expect(violations({ annotations: { a: null } })).toEqual(['annotations["a"]']);
    });

    it('rule 4: at most 4096 bytes serialized', () => {
      // 13 entries of a 40-character key and a 256-character value: 13 * 301 + 1 = 3914 bytes.
      const within = Object.fromEntries(
        Array.from({ length: 13 }, (_, i) => [`k${String(i).padStart(39, '0')}`, 'v'.repeat(256)]),
      );
      expect(Buffer.byteLength(JSON.stringify(within))).toBeLessThanOrEqual(4096);
      expect(violations({ annotations: within })).toEqual([]);
      const over = Object.fromEntries(
        Array.from({ length: 16 }, (_, i) => [`k${String(i).padStart(39, '0')}`, 'v'.repeat(256)]),
      );
      expect(Buffer.byteLength(JSON.stringify(over))).toBeGreaterThan(4096);
      expect(violations({ annotations: over })).toEqual(['annotations']);
    });

    it('rule 5: keys starting with the reserved prefix c1. are refused', () => {
      expect(violations({ annotations: { 'c1.managed': 'x' } })).toEqual(['annotations["c1.managed"]']);
      expect(violations({ annotations: { c1: 'x', 'c1x.y': 'x', 'C1.y': 'x' } })).toEqual([]);
    });

    it('refuses a non-object', () => {
      expect(violations({ annotations: 'a=b' })).toEqual(['annotations']);
      expect(violations({ annotations: ['a'] })).toEqual(['annotations']);
    });
  });

  describe('max grant duration', () => {
    it.each(['3600s', '1.5s', '0s', '0.000000001s', '315576000000s', '315575999999.999999999s'])(
      'accepts %s',
      (value) => {
        expect(isDuration(value)).toBe(true);
        expect(accepted({ durationGrant: value }).durationGrant).toBe(value);
      },
    );

    it.each(['-1s', '1h', '3600', '1.1234567890s', '315576000001s', '315576000000.5s', 's', ' 1s', '1.s', '1e3s', ''])(
      'refuses %j',
      (value) => {
        expect(violations({ durationGrant: value })).toEqual(['durationGrant']);
      },
    );

    it('refuses a non-string duration', () => {
      expect(violations({ durationGrant: 3600 })).toEqual(['durationGrant']);
    });

    it('allows at most one of durationUnset / durationGrant', () => {
      expect(accepted({ durationUnset: {} }).durationUnset).toEqual({});
      expect(violations({ durationUnset: {}, durationGrant: '10s' })).toEqual(['durationGrant']);
      expect(violations({ durationUnset: null, durationGrant: '10s' })).toEqual([]);
      expect(violations({ durationUnset: 'yes' })).toEqual(['durationUnset']);
    });
  });

  describe('ProvisionPolicy', () => {
    const members: Record<string, unknown> = {
      connector: { defaultBehavior: { connectorId: 'c' } },
      manual: { instructions: 'ask', userIds: ['u'] },
      delegated: { appId: 'a', entitlementId: 'e', implicit: true },
      webhook: { webhookId: 'w' },
      multiStep: { provisionSteps: [{ unconfigured: {} }] },
      externalTicket: { appId: 'a', connectorId: 'c', externalTicketProvisionerConfigId: 'x', instructions: 'i' },
      unconfigured: {},
      action: { actionName: 'n', appId: 'a', connectorId: 'c', displayName: 'd' },
      devicePlacement: { vaultBoundaryId: 'v' },
    };

    it.each(Object.keys(members))('accepts %s alone, in both policies', (member) => {
      const policy = { [member]: members[member] };
      expect(accepted({ provisionerPolicy: policy, deprovisionerPolicy: policy }).provisionerPolicy).toEqual(policy);
    });

    it('refuses no member and two members', () => {
      expect(violations({ provisionerPolicy: {} })).toEqual(['provisionerPolicy']);
      expect(violations({ deprovisionerPolicy: { unconfigured: {}, webhook: { webhookId: 'w' } } })).toEqual([
        'deprovisionerPolicy',
      ]);
    });

    it('counts null members as unset', () => {
      expect(violations({ provisionerPolicy: { unconfigured: {}, manual: null, connector: null } })).toEqual([]);
      expect(violations({ provisionerPolicy: { manual: null } })).toEqual(['provisionerPolicy']);
    });

    it('accepts the deprecated manual.userIds and a null assignee', () => {
      expect(violations({ provisionerPolicy: { manual: { userIds: ['u1'], assignee: null } } })).toEqual([]);
    });

    it('checks member field types', () => {
      expect(violations({ provisionerPolicy: { manual: { instructions: 5 } } })).toEqual([
        'provisionerPolicy.manual.instructions',
      ]);
      expect(violations({ provisionerPolicy: { delegated: { implicit: 'yes' } } })).toEqual([
        'provisionerPolicy.delegated.implicit',
      ]);
      expect(violations({ provisionerPolicy: { webhook: 'w' } })).toEqual(['provisionerPolicy.webhook']);
      expect(violations({ provisionerPolicy: 'manual' })).toEqual(['provisionerPolicy']);
    });
  });

  describe('ConnectorProvision', () => {
    const account = (extra: Record<string, unknown>) => ({
      provisionerPolicy: {
        connector: { account: { connectorId: 'c', schemaId: 's', config: { any: { nested: [1] } }, ...extra } },
      },
    });

    it('accepts each member alone', () => {
      for (const connector of [{ defaultBehavior: { connectorId: 'c' } }, { deleteAccount: { connectorId: 'c' } }]) {
        expect(violations({ provisionerPolicy: { connector } })).toEqual([]);
      }
      expect(violations(account({ saveToVault: { vaultIds: ['v'] } }))).toEqual([]);
      expect(violations(account({ doNotSave: {} }))).toEqual([]);
    });

    it('refuses no member and two members', () => {
      expect(violations({ provisionerPolicy: { connector: {} } })).toEqual(['provisionerPolicy.connector']);
      expect(violations({ provisionerPolicy: { connector: { defaultBehavior: {}, deleteAccount: {} } } })).toEqual([
        'provisionerPolicy.connector',
      ]);
    });

    it('needs exactly one of saveToVault / doNotSave in account', () => {
      expect(violations(account({}))).toEqual(['provisionerPolicy.connector.account']);
      expect(violations(account({ saveToVault: {}, doNotSave: {} }))).toEqual(['provisionerPolicy.connector.account']);
      expect(violations(account({ saveToVault: { vaultIds: [1] } }))).toEqual([
        'provisionerPolicy.connector.account.saveToVault.vaultIds[0]',
      ]);
      expect(violations(account({ doNotSave: {}, config: 'x' }))).toEqual([
        'provisionerPolicy.connector.account.config',
      ]);
    });
  });

  describe('ProvisionerAssignment', () => {
    const withAssignee = (assignee: unknown) => ({ provisionerPolicy: { manual: { instructions: 'x', assignee } } });
    const assignees: Record<string, unknown> = {
      users: { userIds: ['u'], allowReassignment: true },
      appOwners: { fallbackUserIds: ['u'] },
      entitlementOwners: { fallbackUserIds: null, allowReassignment: false },
      manager: {},
      group: { appGroupId: 'g', appId: 'a', fallbackUserIds: ['u'] },
      expression: { expressions: ['subject.manager'], fallbackUserIds: [] },
    };

    it.each(Object.keys(assignees))('accepts %s alone', (member) => {
      expect(violations(withAssignee({ [member]: assignees[member] }))).toEqual([]);
    });

    it('refuses no member and two members', () => {
      expect(violations(withAssignee({}))).toEqual(['provisionerPolicy.manual.assignee']);
      expect(violations(withAssignee({ manager: {}, users: {} }))).toEqual(['provisionerPolicy.manual.assignee']);
    });

    it('checks member field types', () => {
      expect(violations(withAssignee({ users: { userIds: 'u' } }))).toEqual([
        'provisionerPolicy.manual.assignee.users.userIds',
      ]);
      expect(violations(withAssignee({ group: { allowReassignment: 1 } }))).toEqual([
        'provisionerPolicy.manual.assignee.group.allowReassignment',
      ]);
      expect(violations(withAssignee({ expression: { expressions: [true] } }))).toEqual([
        'provisionerPolicy.manual.assignee.expression.expressions[0]',
      ]);
    });
  });

  describe('multiStep', () => {
    function nested(levels: number): Record<string, unknown> {
      let policy: Record<string, unknown> = manual;
      for (let i = 0; i < levels; i += 1) policy = { multiStep: { provisionSteps: [policy] } };
      return policy;
    }

    it('validates every step recursively with its path', () => {
      const policy = {
        multiStep: { provisionSteps: [manual, { manual: { assignee: {} } }, { webhook: { webhookId: 'w' } }] },
      };
      expect(violations({ provisionerPolicy: policy })).toEqual([
        'provisionerPolicy.multiStep.provisionSteps[1].manual.assignee',
      ]);
      const deeper = { multiStep: { provisionSteps: [{ multiStep: { provisionSteps: [manual, {}] } }] } };
      expect(violations({ deprovisionerPolicy: deeper })).toEqual([
        'deprovisionerPolicy.multiStep.provisionSteps[0].multiStep.provisionSteps[1]',
      ]);
    });

    it('accepts empty and null step lists', () => {
      expect(violations({ provisionerPolicy: { multiStep: { provisionSteps: [] } } })).toEqual([]);
      expect(violations({ provisionerPolicy: { multiStep: { provisionSteps: null } } })).toEqual([]);
    });

    it('allows 8 nested levels and refuses 9', () => {
      expect(violations({ provisionerPolicy: nested(8) })).toEqual([]);
      const refused = violations({ provisionerPolicy: nested(9) });
      expect(refused).toEqual([`provisionerPolicy${'.multiStep.provisionSteps[0]'.repeat(8)}.multiStep`]);
    });

    it('refuses absurdly deep JSON anywhere without overflowing the stack', () => {
      let config: unknown = {};
      for (let i = 0; i < 100_000; i += 1) config = { a: config };
      const result = validateEntitlementWrite({
        displayName: 'x',
        provisionerPolicy: { connector: { account: { config, doNotSave: {} } } },
      });
      expect(result.ok).toBe(false);
      expect(result.ok ? '' : result.violations[0]!.field).toMatch(
        /^provisionerPolicy\.connector\.account\.config\["a"\](\.a)+$/,
      );
    });
  });

  describe('field paths', () => {
    it('writes indexes as [n] and map keys and odd names as ["key"]', () => {
      expect(fieldPath(['a', 'b', 2, 'c'])).toBe('a.b[2].c');
      expect(fieldPath(['annotations', 'ok'])).toBe('annotations["ok"]');
      expect(fieldPath(['odd name'])).toBe('["odd name"]');
      expect(fieldPath(['displayName'], 'appEntitlement')).toBe('appEntitlement.displayName');
      expect(fieldPath([])).toBe('(body)');
    });
    it('never echoes a large part of the body: long keys are cut, at most 20 violations', () => {
      const key = `bad ${'k'.repeat(10_000)}`;
      const [field] = violations({ annotations: { [key]: 'x' } });
      expect(field!.length).toBeLessThan(300);
      const annotations = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`bad ${i}`, 'x']));
      expect(violations({ annotations })).toHaveLength(20);
    });
  });
});

describe('update mask', () => {
  it('means every writable field when absent, empty or *', () => {
    expect(parseUpdateMask(undefined)).toEqual(WRITABLE_FIELDS);
    expect(parseUpdateMask('')).toEqual(WRITABLE_FIELDS);
    expect(parseUpdateMask('*')).toEqual(WRITABLE_FIELDS);
  });

  it('lists the masked writable fields and ignores read-only ones', () => {
    expect(parseUpdateMask('displayName, annotations')).toEqual(['displayName', 'annotations']);
    expect(parseUpdateMask('grantCount,slug')).toEqual(['slug']);
  });

  it('refuses unknown paths and non-strings with 400 naming updateMask', () => {
    for (const mask of ['displayName,bogus', 'display_name', 'provisionerPolicy.manual', 42]) {
      let error: unknown;
      try {
        parseUpdateMask(mask);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as InvalidArgumentError).violations.map((v) => v.field)).toEqual(['updateMask']);
    }
  });
});

describe('what a refusal says', () => {
  /** The violations of a refused write, field and description. */
  function refusal(input: Record<string, unknown>, prefix?: string) {
    const result = validateEntitlementWrite({ displayName: 'Admin', ...input }, prefix);
    return result.ok ? [] : result.violations;
  }

  function nested(levels: number): Record<string, unknown> {
    let policy: Record<string, unknown> = manual;
    for (let i = 0; i < levels; i += 1) policy = { multiStep: { provisionSteps: [policy] } };
    return policy;
  }

  it('a bad annotation key is described by the key rule it breaks, at the key', () => {
    expect(refusal({ annotations: { 'bad key': 'x' } })).toEqual([
      { field: 'annotations["bad key"]', description: 'key must match ^[A-Za-z][A-Za-z0-9._/-]{0,127}$' },
    ]);
    expect(refusal({ annotations: { 'c1.managed': 'x' } })).toEqual([
      { field: 'annotations["c1.managed"]', description: 'keys starting with "c1." are reserved' },
    ]);
  });

  it('a key of exactly 256 characters is shown whole; a longer one is cut to 256 and an ellipsis', () => {
    const exact = `-${'k'.repeat(255)}`;
    expect(refusal({ annotations: { [exact]: 'x' } }).map((v) => v.field)).toEqual([`annotations["${exact}"]`]);
    const long = `-${'k'.repeat(256)}`;
    expect(refusal({ annotations: { [long]: 'x' } }).map((v) => v.field)).toEqual([
      `annotations["${long.slice(0, 256)}…"]`,
    ]);
  });

  it('too deep a multiStep is named, with the limit, under either policy and in any step', () => {
    const description = 'multiStep may nest at most 8 levels';
    const under = (field: string) => `${field}${'.multiStep.provisionSteps[0]'.repeat(8)}.multiStep`;
    expect(refusal({ provisionerPolicy: nested(9) })).toEqual([{ field: under('provisionerPolicy'), description }]);
    expect(refusal({ deprovisionerPolicy: nested(9) })).toEqual([{ field: under('deprovisionerPolicy'), description }]);
    // The deep branch is the second step: every step is looked at, not only the first.
    const second = { multiStep: { provisionSteps: [manual, nested(8)] } };
    expect(refusal({ provisionerPolicy: second })).toEqual([
      {
        field: `provisionerPolicy.multiStep.provisionSteps[1]${'.multiStep.provisionSteps[0]'.repeat(7)}.multiStep`,
        description,
      },
    ]);
    // Under a prefix (the update body's `appEntitlement`), the path starts with it.
    expect(refusal({ provisionerPolicy: nested(9) }, 'appEntitlement')).toEqual([
      { field: `appEntitlement.${under('provisionerPolicy')}`, description },
    ]);
  });

  it('JSON nesting: an object 64 levels down is refused, 63 levels and a scalar at 64 are not; arrays count', () => {
    const objects = (levels: number, leaf: unknown = {}) => {
      let value: unknown = leaf;
      for (let i = 0; i < levels; i += 1) value = { a: value };
      return value;
    };
    const arrays = (levels: number) => {
      let value: unknown = {};
      for (let i = 0; i < levels; i += 1) value = [value];
      return value;
    };
    expect(jsonDepthViolation(objects(63))).toBeUndefined();
    expect(jsonDepthViolation(objects(64, 'scalar'))).toBeUndefined();
    expect(jsonDepthViolation(objects(64))).toEqual({
      field: Array(64).fill('a').join('.'),
      description: 'nested deeper than 64 levels',
    });
    expect(jsonDepthViolation(arrays(63))).toBeUndefined();
    expect(jsonDepthViolation(arrays(64))).toEqual({
      field: '[0]'.repeat(64),
      description: 'nested deeper than 64 levels',
    });
    expect(jsonDepthViolation(objects(64), 'appEntitlement')).toEqual({
      field: `appEntitlement.${Array(64).fill('a').join('.')}`,
      description: 'nested deeper than 64 levels',
    });
  });

  it('parseEntitlementWrite answers the fields, or throws the 400 naming every offending field under the prefix', () => {
    expect(parseEntitlementWrite({ displayName: 'Admin', alias: 'adm' })).toMatchObject({
      displayName: 'Admin',
      alias: 'adm',
      annotations: {},
    });
    let error: unknown;
    try {
      parseEntitlementWrite({ displayName: '', alias: 7 }, 'appEntitlement');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).violations.map((v) => v.field).sort()).toEqual([
      'appEntitlement.alias',
      'appEntitlement.displayName',
    ]);
    // Without a prefix (a create body), the fields are named from the root.
    expect(() => parseEntitlementWrite({ displayName: 'Admin', alias: 7 })).toThrow(
      expect.objectContaining({ violations: [expect.objectContaining({ field: 'alias' })] }),
    );
  });

  it('the update mask: null is absent; a refusal says what is wrong and names the unknown paths', () => {
    expect(parseUpdateMask(null)).toEqual(WRITABLE_FIELDS);
    const refused = (mask: unknown) => {
      try {
        parseUpdateMask(mask);
      } catch (err) {
        if (!(err instanceof InvalidArgumentError)) throw err;
        return err.violations;
      }
      return [];
    };
    expect(refused(42)).toEqual([
      { field: 'updateMask', description: 'must be a comma-separated string of field names' },
    ]);
    expect(refused('displayName, bogus,also_bad')).toEqual([
      { field: 'updateMask', description: 'unknown field path(s): bogus, also_bad' },
    ]);
  });
});
