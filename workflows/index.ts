/** Workflows registered on the automation task queue (bundled from this file). */
export { automation } from './automation';
export { lane } from './lane';
export { bulkAction } from './bulk-action';
export { grant } from './grant';
export { scheduledRun } from './scheduled-run';
