/**
 * Loaded (jest setupFiles) by the "postgres" project of jest.config.js: startTestService and
 * startStack then default to a fresh schema in the PostgreSQL of DATABASE_URL instead of PGlite.
 */
if (!process.env.DATABASE_URL) throw new Error('the postgres test project needs DATABASE_URL');
process.env.TEST_DEFAULT_STORE = 'postgres';
