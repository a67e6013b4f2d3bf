/** Workflows registered on the automation task queue (bundled from this file). */
export { automation, decideUpdate, stateQuery, STEP_FAILED } from './automation';
export { lane } from './lane';
export { bulkAction } from './bulk-action';
