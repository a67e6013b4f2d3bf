/** The activity of a schedule's action (workflows/scheduled-run.ts): src/domain/schedules.ts does the work. */
import type { Db } from '../src/store/db';
import type { RunEngine } from '../src/domain/engine';
import { prepareScheduledRun } from '../src/domain/schedules';
import type { ScheduleActivities } from '../src/contract/activities';

export function createScheduleActivities(deps: { db: Db; engine: RunEngine }): ScheduleActivities {
  return {
    prepareScheduledRun: (input) => prepareScheduledRun(deps.db, deps.engine, input),
  };
}
