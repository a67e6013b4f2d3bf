/**
 * Mutation testing (npm run test:mutation): StrykerJS mutates the modules that unit tests cover
 * without a server (webhook verification, CIDR, admission, CEL, tokens and secrets, validation and
 * pagination, the step schemas) and runs the unit tests against each mutant. Slow: not part of CI.
 * The HTML report lands in reports/mutation/.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import process from 'node:process';

export default {
  packageManager: 'npm',
  testRunner: 'jest',
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  jest: { projectType: 'custom', configFile: 'jest.mutation.config.js', enableFindRelatedTests: false },
  // PGlite (the src/auth tests' store) loads through a dynamic import: jest needs the VM modules flag.
  testRunnerNodeArgs: ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning'],
  coverageAnalysis: 'perTest',
  // Static mutants (module-level constants) re-run every test and took two thirds of the time.
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 5000,
  dryRunTimeoutMinutes: 30,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  // npm run test:mutation:security writes one report per module (STRYKER_JSON_REPORT).
  jsonReporter: { fileName: process.env.STRYKER_JSON_REPORT ?? 'reports/mutation/mutation.json' },
  ignorePatterns: ['.temporal', '.data', 'dist', 'reports', 'bench', 'deploy', '.stryker-tmp'],
  // A whole run fails under 85 %; npm run test:mutation:security holds each security module to it.
  thresholds: { high: 90, low: 85, break: 85 },
  mutate: [
    'src/webhooks/headers.ts',
    'src/net/cidr.ts',
    'src/webhooks/admission.ts',
    'src/webhooks/jwt.ts',
    'src/webhooks/authenticators/*.ts',
    'src/webhooks/standard-webhooks.ts',
    'src/outbound/policy.ts',
    'src/cel/*.ts',
    'src/auth/*.ts',
    'src/crypto/*.ts',
    'src/domain/validation.ts',
    'src/domain/pagination.ts',
    'src/domain/entitlement-validation.ts',
    'src/domain/automation-validation.ts',
    'src/steps/*.ts',
  ],
};
