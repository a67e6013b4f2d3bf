/**
 * The flow-option registry (src/flow): what a rerun's input carries for the published version's
 * flow control (the filter does not apply to a run a person asked for; the concurrency limit does),
 * and how stored values and write bodies are read through the options.
 */
import {
  FLOW_FIELDS,
  FLOW_OPTIONS,
  flowControlOf,
  laneWorkflowId,
  runFlowOf,
  START,
  validateFlowField,
  type FlowDelivery,
  type FlowOption,
} from '../../src/flow';
import type { FieldViolation } from '../../src/errors';

describe('flow registry', () => {
  it('gives a rerun the lane of its concurrency key, and ignores the filter', () => {
    const stored = { filter: 'false', concurrency: { limit: 2, key: 'ctx.trigger.user' }, rateLimit: null };
    expect(runFlowOf(stored, { automationId: 'a1', payload: { user: 'u7' }, requested: false })).toEqual({
      queue: { key: 'u7', lane: laneWorkflowId('a1', 'u7'), limit: 2, requested: false },
    });
  });

  it('makes a rerun fail at once when its concurrency key cannot be evaluated, and carries nothing without a limit', () => {
    const stored = { concurrency: { limit: 1, key: 'ctx.trigger.user' } };
    expect(runFlowOf(stored, { automationId: 'a1', payload: {}, requested: false })).toEqual({
      error: { field: 'concurrency.key', message: expect.stringContaining('user') },
    });
    expect(runFlowOf({ filter: 'true' }, { automationId: 'a1', payload: {}, requested: false })).toBeUndefined();
    expect(runFlowOf(undefined, { automationId: 'a1', payload: {}, requested: false })).toBeUndefined();
  });

  it('reads a stored value with every option present (null when unset), in the decision order', () => {
    expect(FLOW_FIELDS).toEqual(['filter', 'rateLimit', 'concurrency']);
    expect(flowControlOf({ filter: 'ctx.trigger.ok' })).toEqual({
      filter: 'ctx.trigger.ok',
      rateLimit: null,
      concurrency: null,
    });
    expect(flowControlOf(null)).toEqual({ filter: null, rateLimit: null, concurrency: null });
  });

  it("validates an option's field with the domain's messages under the request's path", () => {
    const violations: FieldViolation[] = [];
    expect(validateFlowField('rateLimit', { limit: 0, period: '90m', extra: 1 }, 'automation.', violations)).toEqual({
      limit: 1,
      period: '1s',
      key: null,
    });
    expect(violations).toEqual([
      { field: 'automation.rateLimit.extra', description: 'is not a known field' },
      { field: 'automation.rateLimit.limit', description: 'must be an integer from 1 to 10000' },
      { field: 'automation.rateLimit.period', description: 'must be whole seconds from "1s" to "86400s", e.g. "60s"' },
    ]);
  });

  it('every option, unset, starts a delivery of a listener without filtered events and asks neither the store nor the engine (decideDelivery skips them then)', async () => {
    const untouchable = (name: string): never =>
      new Proxy(
        {},
        {
          get: (_target, key) =>
            key === 'then' ? undefined : () => Promise.reject(new Error(`${name}.${String(key)} was used`)),
        },
      ) as never;
    const delivery: FlowDelivery = {
      db: untouchable('db'),
      engine: untouchable('engine'),
      automationId: 'a1',
      automationName: 'A',
      listenerId: 'l1',
      eventId: 'e1',
      receivedAt: new Date(0).toISOString(),
      payload: {},
      hasFilteredEvents: false,
      runFails: false,
      laneQueueLimit: 3,
    };
    for (const option of FLOW_OPTIONS as readonly FlowOption[]) {
      expect([option.name, await option.decide(null, delivery)]).toEqual([option.name, START]);
    }
    // With filtered events on record, the unset filter still asks the store (a repeat of a filtered id is a 409).
    const filter = (FLOW_OPTIONS as readonly FlowOption[]).find((option) => option.name === 'filter')!;
    await expect(filter.decide(null, { ...delivery, hasFilteredEvents: true })).rejects.toThrow('db.');
  });
});
