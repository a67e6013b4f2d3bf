/**
 * A jest reporter (jest.config.js) that counts the PostgreSQL cases skipped because DATABASE_URL is
 * unset (they carry "needs DATABASE_URL" in their titles: test/helpers/databases.ts,
 * test/setup/postgres-skips.ts) and words the line that ends the run. jest prints its summary after
 * every reporter, so the line is handed to the global teardown (same process), which prints it last.
 */
const MARK = 'needs DATABASE_URL';

class PostgresSkipsReporter {
  onRunComplete(_contexts, results) {
    let skipped = 0;
    for (const file of results.testResults) {
      for (const test of file.testResults) {
        if ((test.status === 'pending' || test.status === 'skipped') && [...test.ancestorTitles, test.title].some((t) => t.includes(MARK))) skipped++;
      }
    }
    if (skipped === 0) return;
    process.env.TEST_POSTGRES_SKIPS_LINE = (
      `\n${skipped} PostgreSQL test${skipped === 1 ? '' : 's'} skipped (${MARK}). Run them with a PostgreSQL of your own: ` +
        'DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/<db> npm test (CI sets it).\n'
    );
  }
}

module.exports = PostgresSkipsReporter;
