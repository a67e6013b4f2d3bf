/**
 * `filter`: a CEL bool over ctx.trigger; false: the event is recorded (so that its repeat answers
 * 409, like the repeat of an event that started a run) and no run starts. An error makes the run
 * fail at once, naming the field. Looked up only when the version has a filter or the listener has
 * filtered events on record, so automations without one pay nothing.
 */
import { evaluate } from '../cel';
import { isFilteredEvent, recordFilteredEvent } from '../store/flow-control';
import {
  defineFlowOption,
  describeValue,
  type Evaluated,
  expressionSchema,
  failed,
  START,
  validExpression,
} from './option';
import { z } from 'zod';

/** The filter's verdict over a payload; a non-bool result is an error. */
export function filterVerdict(filter: string, payload: unknown): Evaluated<boolean> {
  try {
    const value = evaluate(filter, { trigger: payload, steps: {} });
    if (typeof value !== 'boolean') return { ok: false, error: `must evaluate to a bool, not ${describeValue(value)}` };
    return { ok: true, value };
  } catch (err) {
    return failed(err);
  }
}

export const filter = defineFlowOption({
  name: 'filter',
  scope: 'version',
  schema: expressionSchema().meta({
    description: 'CEL bool over ctx.trigger; false: the event is recorded but no run starts.',
  }) as z.ZodType<string>,
  validate: validExpression,
  stored: (value) => (typeof value === 'string' ? value : null),
  async decide(settings, delivery) {
    const { db, engine, listenerId, eventId } = delivery;
    let decision = START;
    if (settings !== null) {
      const verdict = filterVerdict(settings, delivery.payload);
      if (!verdict.ok) decision = { verdict: 'start', run: { error: { field: 'filter', message: verdict.error } } };
      else if (!verdict.value) {
        // A repeat of an id that started a run (the filter changed since) or was filtered already is a 409.
        const existing = await engine.runOf(listenerId, eventId);
        if (existing !== undefined) return { verdict: 'duplicate', executionId: existing };
        if (!(await recordFilteredEvent(db, listenerId, eventId))) return { verdict: 'duplicate', executionId: null };
        return { verdict: 'filtered' };
      }
    }
    if ((settings !== null || delivery.hasFilteredEvents) && (await isFilteredEvent(db, listenerId, eventId))) {
      return { verdict: 'duplicate', executionId: null };
    }
    return decision;
  },
  dryRun: {
    schema: z.object({ matches: z.boolean().nullable(), error: z.string().nullable() }).nullable().meta({
      description: "The filter's verdict for the payload (false: the event would be filtered); null without a filter.",
    }),
    view(settings, payload) {
      if (settings === null) return null;
      const verdict = filterVerdict(settings, payload);
      return verdict.ok ? { matches: verdict.value, error: null } : { matches: null, error: verdict.error };
    },
  },
});
