/**
 * npm run test:mutation:security: StrykerJS on each security module, one run per module (its own
 * unit tests only), and a verdict per module: the run fails when any module scores under 85 %
 * (killed and timed-out mutants over all valid ones, uncovered included), or could not be measured.
 * Stryker's own `thresholds.break` is one figure for a whole run; a strong module would hide a weak
 * one. Slow and CPU-heavy: not part of CI. Each module's JSON report lands in
 * reports/mutation/security/<name>.json, and its survivors are listed at the end, read from those reports (how to
 * read them, and what to do with one: docs/testing.md#mutation-testing).
 *
 * Incremental: each module's results are kept in reports/mutation/security/<name>.incremental.json
 * and a later run mutates again only what changed (--full: every mutant). --reports-only runs
 * nothing: it reads the reports of earlier runs (each row dated by its report) and prints the same
 * verdicts and table, so that modules measured in separate runs end in one table.
 *
 *   npm run test:mutation:security [-- --only cidr,token-guard] [-- --concurrency 1] [-- --full] [-- --reports-only]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dumpMemoryImage } from '../src/store/db';

export const MIN_SCORE = 85;

interface SecurityModule {
  name: string;
  /** What it guards. */
  guards: string;
  /** Files to mutate. */
  mutate: string[];
  /** Unit test files (names without .test.ts) that run against each mutant. */
  tests: string[];
  /** Why it cannot be measured yet, if so (the run then fails for it). */
  unmeasured?: string;
  /** Its tests open a PGlite store: they load one migrated image instead of running initdb per mutant. */
  store?: boolean;
}

export const MODULES: SecurityModule[] = [
  {
    name: 'signature',
    guards: 'the HMAC signature',
    mutate: ['src/webhooks/authenticators/hmac.ts'],
    tests: ['webhooks-hmac', 'fuzz-verifiers'],
  },
  {
    name: 'standard-webhooks',
    guards: 'the Standard Webhooks signature',
    mutate: ['src/webhooks/standard-webhooks.ts'],
    tests: ['standard-webhooks', 'fuzz-verifiers'],
  },
  {
    name: 'timestamp',
    guards: 'the signed timestamp and the header grammar',
    mutate: ['src/webhooks/headers.ts'],
    tests: ['webhooks-headers', 'webhooks-hmac'],
  },
  {
    name: 'cidr',
    guards: 'source address ranges',
    mutate: ['src/net/cidr.ts'],
    tests: ['webhooks-cidr', 'webhooks-cidr-survivors', 'net-source-prefix'],
  },
  {
    name: 'jwt-claims',
    guards: 'JWT claims',
    mutate: ['src/webhooks/jwt.ts'],
    tests: ['webhooks-jwt', 'webhooks-jwt-survivors'],
  },
  // Its tests open a PGlite store (the limits are kept there).
  {
    name: 'token-guard',
    guards: 'API tokens',
    mutate: ['src/auth/token-guard.ts'],
    tests: ['auth-token-guard'],
    store: true,
  },
  {
    name: 'secret-grammar',
    guards: 'secret references in expressions and steps',
    mutate: ['src/cel/secret-form.ts', 'src/steps/secret-references.ts'],
    tests: ['cel-secret-form', 'cel-secret-form-survivors', 'steps-secret-references', 'secret-references'],
  },
  {
    name: 'outbound-policy',
    guards: 'where the service may call out to',
    mutate: ['src/outbound/policy.ts'],
    tests: ['outbound-policy', 'webhooks-jwks'],
  },
  {
    name: 'admission',
    guards: 'webhook admission (in-flight caps per listener and address)',
    mutate: ['src/webhooks/admission.ts'],
    tests: ['webhooks-admission', 'read-raw-body', 'webhooks-admission-survivors'],
  },
  // The lane's decisions, taken out of workflows/lane.ts (which sends the grants) to be unit-tested.
  {
    name: 'lane-admission',
    guards: "the lanes' admission (permits, queue order, queue bound)",
    mutate: ['workflows/lane-admission.ts'],
    tests: ['lane-admission'],
  },
  // The checks only (StrykerJS's file:line-line ranges): the id's hash and the token comparison,
  // sign-in, resolve (the id grammar, both lifetimes, the client's roles, the last-seen write) and
  // logout, the principal; the cookie, the Origin and the CSRF token. Left out: the purge of
  // expired rows (housekeeping: resolve refuses an expired row itself) and sessionsOf, which
  // picks the app's ConsoleSessions; their mutants each ran the store-backed tests (docs/testing.md#mutation-testing).
  {
    name: 'console-session',
    guards: "the console's sessions, session cookie, CSRF token and Origin checks",
    mutate: [
      'src/auth/sessions.ts:36-82',
      'src/auth/sessions.ts:84-114',
      'src/auth/sessions.ts:116-118',
      'src/auth/sessions.ts:126-145',
      'src/http/console-session.ts:39-106',
    ],
    tests: ['auth-sessions', 'console-session'],
    store: true,
  },
];

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? undefined : process.argv[index + 1];
}

interface Counts {
  killed: number;
  timedOut: number;
  survived: number;
  noCoverage: number;
  score: number;
  survivors: string[];
}

function countsOf(reportFile: string): Counts {
  const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as {
    files: Record<
      string,
      {
        mutants: {
          status: string;
          mutatorName: string;
          replacement?: string;
          location: { start: { line: number; column: number } };
        }[];
      }
    >;
  };
  const counts: Counts = { killed: 0, timedOut: 0, survived: 0, noCoverage: 0, score: 0, survivors: [] };
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const mutant of mutants) {
      if (mutant.status === 'Killed') counts.killed++;
      else if (mutant.status === 'Timeout') counts.timedOut++;
      else if (mutant.status === 'Survived' || mutant.status === 'NoCoverage') {
        if (mutant.status === 'Survived') counts.survived++;
        else counts.noCoverage++;
        counts.survivors.push(
          `${file}:${mutant.location.start.line}:${mutant.location.start.column} ${mutant.status} ${mutant.mutatorName}${mutant.replacement ? ` → ${mutant.replacement.replace(/\s+/g, ' ').slice(0, 80)}` : ''}`,
        );
      }
    }
  }
  const valid = counts.killed + counts.timedOut + counts.survived + counts.noCoverage;
  counts.score = valid === 0 ? 0 : (100 * (counts.killed + counts.timedOut)) / valid;
  return counts;
}

/**
 * The migrated PGlite image the store-backed tests load (TEST_PGLITE_IMAGE, as jest's global set-up
 * makes it for npm test): without it every mutant's run pays initdb and the migrations again.
 */
async function pgliteImage(reports: string): Promise<string> {
  const file = path.resolve(reports, 'pglite-image.tar');
  fs.writeFileSync(file, Buffer.from(await (await dumpMemoryImage()).arrayBuffer()));
  return file;
}

/** One StrykerJS run over a module with its own tests; answers its exit status. */
function runStryker(
  module: SecurityModule,
  reportFile: string,
  options: { concurrency: string; full: boolean; reports: string; image?: string },
): number | string | null {
  fs.rmSync(reportFile, { force: true });
  // Incremental: a later run of the module runs again only the mutants whose code or covering
  // tests changed (StrykerJS compares them with this file); --full runs every mutant.
  const incremental = options.full
    ? []
    : ['--incremental', '--incrementalFile', path.join(options.reports, `${module.name}.incremental.json`)];
  console.log(`\n==> ${module.name}: ${module.mutate.join(', ')} (tests: ${module.tests.join(', ')})`);
  const run = spawnSync(
    'npx',
    [
      'stryker',
      'run',
      '--mutate',
      module.mutate.join(','),
      '--checkers',
      '',
      '--concurrency',
      options.concurrency,
      '--timeoutMS',
      '3000',
      '--reporters',
      'clear-text,json,progress-append-only',
      ...incremental,
    ],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        MUTATION_TESTS: module.tests.join(','),
        STRYKER_JSON_REPORT: reportFile,
        ...(module.store && options.image ? { TEST_PGLITE_IMAGE: options.image } : {}),
      },
    },
  );
  return run.status ?? run.signal;
}

async function main(): Promise<number> {
  const only = argument('only')?.split(',');
  const concurrency = argument('concurrency') ?? '1';
  const full = process.argv.includes('--full');
  const reportsOnly = process.argv.includes('--reports-only');
  const unknown = only?.filter((name) => !MODULES.some((m) => m.name === name)) ?? [];
  if (unknown.length > 0) {
    console.error(`unknown module(s): ${unknown.join(', ')}; known: ${MODULES.map((m) => m.name).join(', ')}`);
    return 2;
  }
  const chosen = MODULES.filter((m) => !only || only.includes(m.name));
  const reports = path.join('reports', 'mutation', 'security');
  fs.mkdirSync(reports, { recursive: true });
  const image = !reportsOnly && chosen.some((m) => m.store) ? await pgliteImage(reports) : undefined;
  const verdicts: string[] = [];
  const rows: string[] = [];
  let failed = 0;
  for (const module of chosen) {
    if (module.unmeasured) {
      failed++;
      verdicts.push(`FAIL ${module.name} (${module.guards}): not measured: ${module.unmeasured}`);
      rows.push(`| \`${module.name}\` | not measured | | | | | |`);
      continue;
    }
    const reportFile = path.join(reports, `${module.name}.json`);
    const status = reportsOnly
      ? 'not run (--reports-only)'
      : runStryker(module, reportFile, { concurrency, full, reports, image });
    // (Stryker exits non-zero when the module is under thresholds.break: the report still counts.)
    if (!fs.existsSync(reportFile)) {
      failed++;
      verdicts.push(
        `FAIL ${module.name} (${module.guards}): no report (${reportsOnly ? 'none from an earlier run' : `Stryker exited with ${status}`})`,
      );
      rows.push(`| \`${module.name}\` | no report | | | | | |`);
      continue;
    }
    const counts = countsOf(reportFile);
    const measured = fs.statSync(reportFile).mtime.toISOString().slice(0, 10);
    const ok = counts.score >= MIN_SCORE;
    if (!ok) failed++;
    verdicts.push(
      `${ok ? 'ok  ' : 'FAIL'} ${module.name} (${module.guards}): ${counts.score.toFixed(1)} % on ${measured} ` +
        `(${counts.killed} killed, ${counts.timedOut} timed out, ${counts.survived} survived, ${counts.noCoverage} uncovered)` +
        counts.survivors.map((s) => `\n       ${s}`).join(''),
    );
    rows.push(
      `| \`${module.name}\` (${module.mutate.map((file) => `\`${file}\``).join(', ')}) | ${counts.score.toFixed(1)} % | ` +
        `${counts.killed} | ${counts.timedOut} | ${counts.survived} | ${counts.noCoverage} | ${measured} |`,
    );
  }
  console.log(
    `\nMutation scores of the security modules (at least ${MIN_SCORE} % each), ${new Date().toISOString().slice(0, 10)}:`,
  );
  for (const verdict of verdicts) console.log(`  ${verdict}`);
  console.log(`${chosen.length - failed} of ${chosen.length} modules at or above ${MIN_SCORE} %`);
  // The same figures as a Markdown table (one row per module, dated by its report), for a pull request or an issue.
  console.log(
    '\n| module | score | killed | timed out | survived | uncovered | measured |\n| --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const row of rows) console.log(row);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
