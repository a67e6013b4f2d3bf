// ESLint flat config. Workflow code must stay deterministic: no Node built-ins, no store, HTTP or
// activity implementations (types only), nothing that does I/O or reads clocks.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

module.exports = tseslint.config(
  { ignores: ['node_modules/', '.temporal/', '.data/', 'dist/', 'coverage/', 'test-artifacts/', '.stryker-tmp/', 'reports/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Workflow code and the step registry it runs are bundled into the workflow sandbox.
    files: ['workflows/**/*.ts', 'src/steps/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code must be deterministic: no Node built-ins' })),
          patterns: [
            { group: ['**/src/store/**', '**/src/http/**', '**/store/**', '**/http/**', 'pg', '@electric-sql/*', 'koa', '@koa/*'], message: 'no store or HTTP code in workflows' },
            { group: ['**/cel', '**/cel/**', '**/webhooks', '**/webhooks/**'], allowTypeImports: true, message: 'the CEL runtime and webhook code use Node built-ins: evaluate through activities' },
            { group: ['**/activities', '**/activities/**'], allowTypeImports: true, message: 'import activities as types only' },
            { group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity'], message: 'workflows import @temporalio/workflow only' },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'use sleep() from @temporalio/workflow' }, { name: 'fetch', message: 'no I/O in workflows' }],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setTimeout: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
