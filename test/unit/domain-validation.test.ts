/**
 * The shared validation helpers of src/domain without a server: `parseOrThrow` (the 400 naming
 * every offending field, with the prefix of the object in the body) over the service's own request
 * schemas, and the automation's display name and description (src/domain/automation-validation.ts).
 * The step validation behind `validateSteps` is tested in step-validation.test.ts.
 */
import { validateDescription, validateDisplayName } from '../../src/domain/automation-validation';
import { CreateUserRequest, SearchEntitlementsFilter } from '../../src/domain/schemas';
import { parseOrThrow, violationsOf } from '../../src/domain/validation';
import { type FieldViolation, InvalidArgumentError } from '../../src/errors';

/** The violations `parseOrThrow` throws (a 400), or the parsed value. */
function parsed(
  schema: Parameters<typeof parseOrThrow>[0],
  input: unknown,
  prefix?: string,
): { value: unknown } | { violations: FieldViolation[] } {
  try {
    return { value: parseOrThrow(schema, input, prefix) };
  } catch (err) {
    if (!(err instanceof InvalidArgumentError)) throw err;
    return { violations: err.violations };
  }
}

describe('parseOrThrow', () => {
  it('answers the parsed value when the input fits', () => {
    expect(
      parsed(CreateUserRequest, { displayName: 'Ada', email: 'ada@example.com', type: 'USER_TYPE_HUMAN' }),
    ).toEqual({
      value: { displayName: 'Ada', email: 'ada@example.com', type: 'USER_TYPE_HUMAN' },
    });
  });

  it('throws a 400 naming every offending field with its message', () => {
    expect(parsed(CreateUserRequest, { displayName: ' ', email: 'nope', type: 'USER_TYPE_HUMAN' })).toEqual({
      violations: [
        { field: 'displayName', description: 'must not be empty' },
        { field: 'email', description: 'must be an email address' },
      ],
    });
    expect(parsed(SearchEntitlementsFilter, { appIds: ['a', 7] })).toEqual({
      violations: [{ field: 'appIds[1]', description: expect.any(String) }],
    });
  });

  it('violationsOf without a prefix names the fields from the body root', () => {
    const result = CreateUserRequest.safeParse({ displayName: 'Ada', type: 'robot' });
    expect(result.success ? [] : violationsOf(result.error.issues)).toEqual([
      { field: 'type', description: 'must be one of USER_TYPE_SERVICE, USER_TYPE_HUMAN' },
    ]);
  });

  it('names the fields under the prefix of the object in the body; without one, a bad body is "(body)"', () => {
    expect(parsed(CreateUserRequest, { email: 'ada@example.com', type: 'USER_TYPE_HUMAN' }, 'user')).toEqual({
      violations: [{ field: 'user.displayName', description: 'is required' }],
    });
    expect(parsed(SearchEntitlementsFilter, 'query=x')).toEqual({
      violations: [{ field: '(body)', description: expect.any(String) }],
    });
  });
});

/** What a string validator of src/domain returns for `value` at `field`, with the violations it reported. */
function validated(
  validate: (value: unknown, field: string, violations: FieldViolation[]) => string,
  value: unknown,
  field: string,
): { value: string; violations: FieldViolation[] } {
  const violations: FieldViolation[] = [];
  return { value: validate(value, field, violations), violations };
}

describe('automation display name', () => {
  const NAME_RULE = 'must be a non-empty string of at most 200 characters';

  const run = (value: unknown) => validated(validateDisplayName, value, 'displayName');

  it('is trimmed; up to 200 characters are accepted', () => {
    expect(run('  Offboard leavers  ')).toEqual({ value: 'Offboard leavers', violations: [] });
    expect(run('n'.repeat(200))).toEqual({ value: 'n'.repeat(200), violations: [] });
  });

  it.each([[undefined], [null], [42], [['a']], [''], ['   '], ['\t\n'], ['n'.repeat(201)]])(
    '%j is refused, naming the field',
    (value) => {
      expect(run(value)).toEqual({ value: '', violations: [{ field: 'displayName', description: NAME_RULE }] });
    },
  );

  it('the violation carries the field it was given', () => {
    expect(validated(validateDisplayName, '', 'automation.displayName').violations).toEqual([
      { field: 'automation.displayName', description: NAME_RULE },
    ]);
  });
});

describe('automation description', () => {
  const DESCRIPTION_RULE = 'must be a string of at most 4000 characters';

  const run = (value: unknown) => validated(validateDescription, value, 'description');

  it('absent or null is empty; a string of up to 4000 characters is kept as given', () => {
    expect(run(undefined)).toEqual({ value: '', violations: [] });
    expect(run(null)).toEqual({ value: '', violations: [] });
    expect(run('')).toEqual({ value: '', violations: [] });
    expect(run('  spaced  ')).toEqual({ value: '  spaced  ', violations: [] });
    expect(run('d'.repeat(4000))).toEqual({ value: 'd'.repeat(4000), violations: [] });
  });

  it.each([[42], [false], [{ text: 'x' }], ['d'.repeat(4001)]])('%j is refused, naming the field', (value) => {
    expect(run(value)).toEqual({ value: '', violations: [{ field: 'description', description: DESCRIPTION_RULE }] });
  });
});
