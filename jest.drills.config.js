/**
 * The production drills (`npm run drills`): the whole production shape (scripts/stack-prod.ts) on a
 * PostgreSQL of their own, with faults injected. Separate from `npm test`; CI runs both.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test/drills'],
  testMatch: ['**/*.drill.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testTimeout: 40 * 60_000,
  maxWorkers: 1,
};
