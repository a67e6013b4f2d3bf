/**
 * The console's browser tests (`npm run test:browser`): Debian's Chromium (/usr/bin/chromium, no
 * browser download) against a real `npm start` (embedded Temporal dev server, embedded store) on
 * ports of their own, signed in through local sign-in with the bootstrap client and through a real
 * OpenID provider (oidc-provider, started first as a server of its own: console/test/oidc-provider.ts).
 * Writes Playwright's JSON summary to test-artifacts/browser-results.json (.ci/run counts it).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defineConfig } from '@playwright/test';
import { APPROVERS_GROUP, OIDC_CLIENT } from './test/oidc-people';

const ROOT = path.resolve(__dirname, '..');
const PORT = Number(process.env.CONSOLE_TEST_PORT ?? 18480);
export const BASE_URL = `http://localhost:${PORT}`;
export const BOOTSTRAP = { clientId: 'console-browser-tests', clientSecret: 'browser-tests-secret-0123456789abcdef' };
export const OIDC_ISSUER = `http://127.0.0.1:${PORT + 3}`;

export default defineConfig({
  testDir: path.join(__dirname, 'test'),
  globalSetup: path.join(__dirname, 'test', 'global-setup.ts'),
  outputDir: path.join(ROOT, 'test-artifacts', 'playwright'),
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  reporter: [['list'], ['json', { outputFile: path.join(ROOT, 'test-artifacts', 'browser-results.json') }]],
  use: {
    baseURL: BASE_URL,
    browserName: 'chromium',
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
    viewport: { width: 1280, height: 860 },
    trace: 'retain-on-failure',
  },
  // In this order: the service reads the provider's discovery document when a person signs in.
  webServer: [
    {
      command: `node node_modules/tsx/dist/cli.mjs console/test/oidc-provider.ts ${BASE_URL}/console/auth/callback ${PORT + 3}`,
      cwd: ROOT,
      url: `${OIDC_ISSUER}/.well-known/openid-configuration`,
      timeout: 60_000,
      reuseExistingServer: false,
      stdout: 'ignore',
      stderr: 'pipe',
    },
    {
      command: 'node scripts/start.js',
      cwd: ROOT,
      url: `${BASE_URL}/ready`,
      timeout: 300_000,
      reuseExistingServer: false,
      stdout: 'ignore',
      stderr: 'pipe',
      env: {
        PORT: String(PORT),
        TEMPORAL_PORT: String(PORT + 1),
        TEMPORAL_UI_PORT: String(PORT + 2),
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'console-browser-')),
        BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
        BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
        LOG_LEVEL: 'warn',
        // Both sign-ins: OIDC (admin for the approvers' group) and the bootstrap client's.
        OIDC_ISSUER,
        OIDC_CLIENT_ID: OIDC_CLIENT.clientId,
        OIDC_CLIENT_SECRET: OIDC_CLIENT.clientSecret,
        OIDC_ALLOW_INSECURE: 'true',
        OIDC_ROLE_MAP: JSON.stringify({ [APPROVERS_GROUP]: 'admin' }),
        CONSOLE_LOCAL_SIGNIN: 'true',
      },
    },
  ],
});
