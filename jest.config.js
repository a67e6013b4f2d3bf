/**
 * Every test file runs on the embedded store (PGlite). With DATABASE_URL set (CI sets it), a second
 * project, "postgres", runs the receiver-side suites again with PostgreSQL as their default store
 * (test/setup/postgres.ts); the store suites themselves loop over both (test/helpers/databases.ts).
 * Without DATABASE_URL the PostgreSQL cases are reported as skipped, and counted on the last line
 * with every other skip (test/reporters/skips.js).
 * @type {import('jest').Config}
 */
const project = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  setupFiles: ['<rootDir>/test/setup/fast-check.ts'],
  // Every response of a test service is checked against its OpenAPI document (test/helpers/contract.ts).
  setupFilesAfterEnv: ['<rootDir>/test/setup/contract.ts'],
};

/** Suites that use the default store of startTestService/startStack, run on PostgreSQL too. */
const POSTGRES_SUITES = [
  'webhooks',
  'executions',
  'versions',
  'openapi',
  'attacks',
  'dry-run',
  'jwks-outage',
  'bulk-actions',
  'ensure-user',
  'access-steps',
].map((name) => `<rootDir>/test/integration/${name}.test.ts`);

module.exports = {
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 180000,
  maxWorkers: 2,
  // The last line of a run: every skipped case counted by its reason (the PostgreSQL cases without
  // DATABASE_URL among them, and how to run them).
  reporters: ['default', '<rootDir>/test/reporters/skips.js'],
  projects: [
    { ...project, displayName: 'pglite' },
    {
      // Without DATABASE_URL its cases are declared skipped ("needs DATABASE_URL"), not left out.
      ...project,
      displayName: 'postgres',
      testMatch: POSTGRES_SUITES,
      setupFiles: [...project.setupFiles, '<rootDir>/test/setup/postgres.ts'],
      setupFilesAfterEnv: [...project.setupFilesAfterEnv, '<rootDir>/test/setup/postgres-skips.ts'],
    },
  ],
};
