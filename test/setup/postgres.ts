/**
 * Loaded (jest setupFiles) by the "postgres" project of jest.config.js: startTestService and
 * startStack then default to a fresh schema in the PostgreSQL of DATABASE_URL instead of PGlite.
 * Without DATABASE_URL the project still runs, and test/setup/postgres-skips.ts declares every case
 * of it as skipped ("needs DATABASE_URL") instead.
 */
if (process.env.DATABASE_URL) process.env.TEST_DEFAULT_STORE = 'postgres';
