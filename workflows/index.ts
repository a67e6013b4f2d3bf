/** Workflows registered on the automation task queue (bundled from this file). */
export { automation, stateQuery, STEP_FAILED } from './automation';
