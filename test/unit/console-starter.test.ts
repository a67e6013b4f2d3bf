/** A new automation's starter steps (console/src/starter.ts) run on every kind of JSON payload. */
import { dryRunSteps } from '../../src/domain/automation-dry-run';
import { validateSteps } from '../../src/domain/automation-validation';
import { STARTER_STEPS } from '../../console/src/starter';

describe('the console starter steps', () => {
  it('are valid steps', () => {
    const violations: unknown[] = [];
    validateSteps(STARTER_STEPS, violations as never);
    expect(violations).toEqual([]);
  });

  it.each([
    [{ user: 'u-1', groups: ['a'] }, 'received an object with 2 fields'],
    [{}, 'received an object with 0 fields'],
    [[1, 2, 3], 'received a list of 3'],
    ['text', 'received a string'],
    [3, 'received a value'],
    [true, 'received a value'],
    [null, 'received a value'],
  ])('dry-runs on %j as %j', async (payload, message) => {
    const [step] = (await dryRunSteps(STARTER_STEPS, payload, { allowInsecureOutbound: false })).steps;
    expect([step?.status, step?.error, step?.output]).toEqual(['WOULD_RUN', null, { level: 'info', message }]);
  });
});
