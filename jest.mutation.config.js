/**
 * The unit tests StrykerJS runs against each mutant (stryker.config.mjs): no Temporal server, no
 * global setup, only the files that cover the mutated modules.
 * @type {import('jest').Config}
 */
const ALL = [
  '**/webhooks-*.test.ts',
  '**/fuzz-verifiers.test.ts',
  '**/standard-webhooks.test.ts',
  '**/cel.test.ts',
  '**/cel-*.test.ts',
  '**/auth-*.test.ts',
  '**/pagination.test.ts',
  '**/domain-validation.test.ts',
  '**/entitlement-validation.test.ts',
  '**/automation-dry-run.test.ts',
  '**/secret-references.test.ts',
  '**/steps-*.test.ts',
  '**/step-validation.test.ts',
  '**/automation-view-schema.test.ts',
  '**/outbound-policy.test.ts',
  '**/read-raw-body.test.ts',
  '**/lane-admission.test.ts',
  '**/console-session.test.ts',
];

module.exports = {
  testEnvironment: 'node',
  // The src/auth tests open a PGlite store (initdb: seconds on a loaded machine, no image here).
  testTimeout: 60000,
  roots: ['<rootDir>/test/unit'],
  // MUTATION_TESTS="webhooks-hmac,webhooks-headers" narrows a run (with --mutate) to those files.
  testMatch: process.env.MUTATION_TESTS
    ? process.env.MUTATION_TESTS.split(',').map((name) => `**/${name}.test.ts`)
    : ALL,
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  setupFiles: ['<rootDir>/test/setup/fast-check.ts'],
};
