// ESLint flat config. Workflow code must stay deterministic: no Node built-ins, no store, HTTP or
// activity implementations (types only), nothing that does I/O or reads clocks.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');
const importPlugin = require('eslint-plugin-import');
const jestPlugin = require('eslint-plugin-jest');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

// The layers, bottom to top (docs/architecture.md draws them). A module may import modules of a
// LOWER layer only: never one above it, never another folder of its own layer (so no two folders
// can import each other). Type-only imports count too. A folder may import its own files.
const LAYERS = [
  // ground floor: no imports from the project beyond this list
  [
    'src/config.ts',
    'src/ids.ts',
    'src/json.ts',
    'src/logger.ts',
    'src/log-pretty.ts',
    'src/errors.ts',
    'src/duration.ts',
    'src/banner.ts',
    'src/node-child.ts',
    'src/memory-trim.ts',
  ],
  // CEL, sealing at rest (SecretBox), IP addresses and CIDR ranges, tracing (OpenTelemetry)
  ['src/cel', 'src/crypto', 'src/net', 'src/tracing'],
  // the outbound policy: where the service may call out to (JWKS fetches, callWebhook)
  ['src/outbound'],
  ['src/steps'],
  // the run contract: shapes shared by the API, the workflow and the activities; the activity signatures; the lane port
  ['src/contract'],
  // pure verification of inbound webhooks (the authenticator registry, JWKS through the outbound policy)
  ['src/webhooks'],
  // the trigger kinds: incomingWebhook (through src/webhooks), schedule, event
  ['src/triggers'],
  // ALL SQL
  ['src/store'],
  ['src/auth'],
  // flow control between runs: the registry of flow options (filter, concurrency, rateLimit)
  ['src/flow'],
  // services and ports
  ['src/domain'],
  // the delivery intake, the listener cache and the delivery log
  ['src/delivery'],
  // the workflow code (deterministic) and the activities that implement the contract's signatures
  ['workflows', 'activities'],
  // the Temporal adapter: implements the domain's ports, builds the worker
  ['src/temporal'],
  ['src/http'],
  // the composition root, then the process
  ['src/compose.ts'],
  ['src/main.ts'],
];
// Consumers outside the layers: src/ may import none of them.
const OUTSIDE = ['scripts', 'bench', 'test'];
// Of src/, only the process imports the workflow code and the activities (it hands createActivities
// to the worker): the layers between refer to the workflows by name (src/contract/workflows.ts),
// so no import in src/ climbs to the folders beside it.
const COMPOSED_BY_MAIN = ['workflows', 'activities'];
const COMPOSER = 'src/main.ts';

function layerZones() {
  const zones = [];
  LAYERS.forEach((layer, index) => {
    const groundTarget = index === 0;
    for (const target of layer) {
      // the ground floor's files may import one another (logger → log-pretty)
      const siblings = groundTarget ? [] : layer.filter((other) => other !== target);
      for (const from of [...LAYERS.slice(index + 1).flat(), ...siblings, ...OUTSIDE]) {
        zones.push({
          target: `./${target}${target.endsWith('.ts') ? '' : '/**'}`,
          from: `./${from}`,
          message: `layers (docs/architecture.md): ${target} may import only layers below it`,
        });
      }
    }
  });
  const above = LAYERS.slice(LAYERS.findIndex((layer) => layer.includes(COMPOSED_BY_MAIN[0])) + 1).flat();
  for (const target of above.filter((folder) => folder !== COMPOSER)) {
    for (const from of COMPOSED_BY_MAIN) {
      zones.push({
        target: `./${target}${target.endsWith('.ts') ? '' : '/**'}`,
        from: `./${from}`,
        message: `layers (docs/architecture.md): only ${COMPOSER} imports ${from}/; name the workflows through src/contract/workflows.ts`,
      });
    }
  }
  return zones;
}

module.exports = tseslint.config(
  {
    ignores: [
      'node_modules/',
      '.temporal/',
      '.data/',
      'dist/',
      'coverage/',
      'test-artifacts/',
      '.stryker-tmp/',
      'reports/',
      'console/src/api/schema.d.ts',
      'console/test-results/',
      'console/playwright-report/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    files: ['src/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts'],
    plugins: { import: importPlugin },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: { 'import/no-restricted-paths': ['error', { zones: layerZones() }] },
  },
  {
    // Workflow code and the step registry it runs are bundled into the workflow sandbox.
    files: ['workflows/**/*.ts', 'src/steps/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'workflow code must be deterministic: no Node built-ins',
          })),
          patterns: [
            {
              group: [
                '**/src/store/**',
                '**/src/http/**',
                '**/store/**',
                '**/http/**',
                'pg',
                '@electric-sql/*',
                'koa',
                '@koa/*',
              ],
              message: 'no store or HTTP code in workflows',
            },
            {
              group: ['**/cel', '**/cel/**', '**/webhooks', '**/webhooks/**'],
              allowTypeImports: true,
              message: 'the CEL runtime and webhook code use Node built-ins: evaluate through activities',
            },
            {
              group: ['**/activities', '**/activities/**'],
              allowTypeImports: true,
              message: 'import activities as types only',
            },
            {
              group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
              message: 'workflows import @temporalio/workflow only',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' },
        { name: 'fetch', message: 'no I/O in workflows' },
      ],
    },
  },
  {
    // Tests fail loudly: no stray .only, no undeclared skip, no expect() that asserts nothing, and no
    // wait whose answer is thrown away (poll returns what it waited for: assert on it, or use until).
    files: ['test/**/*.ts'],
    plugins: { jest: jestPlugin },
    rules: {
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
      'jest/valid-expect': 'error',
      'jest/no-restricted-matchers': [
        'error',
        { toBeDefined: 'assert the value the test knows, not that there is one' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "ExpressionStatement > AwaitExpression > CallExpression[callee.name='poll']",
          message: "poll's answer is what it waited for: assert on it, or wait with until(condition, what)",
        },
        {
          selector: "CallExpression[callee.property.name='catch'][callee.object.callee.name=/^(poll|until)$/]",
          message: 'a wait that times out must fail the test: do not catch it',
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setTimeout: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
