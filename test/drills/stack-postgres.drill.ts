/**
 * `npm run stack:prod` without DATABASE_URL and PostgreSQL: the local server is administered as its
 * `postgres` OS user over the Unix socket (peer authentication); the roles the stack makes get random
 * passwords kept 0600 in the state directory; no existing role's password is ever changed (the
 * superuser's included). On a PostgreSQL of the drill's own with Debian's authentication rules
 * (local: peer, 127.0.0.1: scram-sha-256): the stack's own step (preparePostgres), then the whole
 * stack on it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { preparePostgres, startProdStack, type LocalPostgres } from '../../scripts/stack-prod';
import { OwnPostgres } from './postgres';

const SUPERUSER_PASSWORD = 'the-operators-own-superuser-password';

let pg: OwnPostgres;
let stateDir: string;
let local: LocalPostgres;

async function query<T>(url: string, sql: string): Promise<T[]> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

const superuserUrl = (): string => `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${pg.port}/postgres`;

async function storedPasswords(): Promise<Record<string, string>> {
  const rows = await query<{ rolname: string; rolpassword: string }>(
    superuserUrl(),
    `SELECT rolname, rolpassword FROM pg_authid WHERE rolname IN ('postgres', 'temporal', 'app')`,
  );
  return Object.fromEntries(rows.map((r) => [r.rolname, r.rolpassword]));
}

beforeAll(async () => {
  pg = await OwnPostgres.create();
  await query(pg.adminUrl, `ALTER ROLE postgres PASSWORD '${SUPERUSER_PASSWORD}'`);
  // Debian's rules: the socket by OS user (peer), TCP by password.
  fs.writeFileSync(
    path.join(pg.dir, 'data', 'pg_hba.conf'),
    'local all all peer\nhost all all 127.0.0.1/32 scram-sha-256\n',
  );
  pg.stop();
  pg.start();
  local = { port: pg.port, socketDir: pg.dir };
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-stack-pg-'));
}, 120_000);

afterAll(() => {
  pg?.destroy();
  if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
});

describe('stack:prod on the local PostgreSQL (no DATABASE_URL)', () => {
  it('makes the roles and databases over the socket; the superuser password is what it was; each role logs in with the password kept 0600', async () => {
    await expect(query(`postgres://postgres@127.0.0.1:${pg.port}/postgres`, 'SELECT 1')).rejects.toThrow();
    const before = await storedPasswords();
    expect(Object.keys(before)).toEqual(['postgres']);

    const prepared = await preparePostgres({ local, stateDir });

    const after = await storedPasswords();
    expect(after.postgres).toBe(before.postgres);
    expect(prepared.created).toEqual({ temporal: true, temporal_visibility: true, app: true });
    for (const [role, db] of [
      ['temporal', 'temporal'],
      ['temporal', 'temporal_visibility'],
      ['app', 'app'],
    ] as const) {
      const file = path.join(stateDir, 'postgres', `${role}.password`);
      expect([role, fs.statSync(file).mode & 0o777]).toEqual([role, 0o600]);
      const password = fs.readFileSync(file, 'utf8').trim();
      expect(password).toBe(prepared.passwords[role]);
      expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
      const [row] = await query<{ user: string; owner: string }>(
        `postgres://${role}:${password}@127.0.0.1:${pg.port}/${db}`,
        `SELECT current_user AS user, pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()`,
      );
      expect(row).toEqual({ user: role, owner: role });
    }
    // Nobody but the stack's user can read the passwords.
    expect(fs.statSync(path.join(stateDir, 'postgres')).mode & 0o777).toBe(0o700);
  });

  it("a second start changes no password (the stack's roles' included) and makes nothing", async () => {
    const before = await storedPasswords();
    const prepared = await preparePostgres({ local, stateDir });
    expect(await storedPasswords()).toEqual(before);
    expect(prepared.created).toEqual({ temporal: false, temporal_visibility: false, app: false });
    expect(prepared.passwords.app).toBe(
      fs.readFileSync(path.join(stateDir, 'postgres', 'app.password'), 'utf8').trim(),
    );
  });

  it('the whole stack starts on it (Temporal and the APIs log in by password over TCP) and leaves every password as it was', async () => {
    const before = await storedPasswords();
    const stack = await startProdStack({
      localPostgres: local,
      stateDir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn' },
      log: () => undefined,
    });
    try {
      expect((await fetch(`${stack.entryUrl}/health`)).status).toBe(200);
      const admin1 = stack.processes.get('api-1')!.env.ADMIN_PORT;
      // Ready = the store (role app) and Temporal (on role temporal's databases) both answer.
      expect((await fetch(`http://127.0.0.1:${admin1}/ready`)).status).toBe(200);
    } finally {
      await stack.stop();
    }
    expect(await storedPasswords()).toEqual(before);
  });

  it('a role that exists without its password in the state directory is refused with the fix, and left as it was', async () => {
    const before = await storedPasswords();
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-stack-pg-other-'));
    try {
      await expect(preparePostgres({ local, stateDir: other })).rejects.toThrow(
        `the PostgreSQL role "temporal" exists but its password is not in ${path.join(other, 'postgres', 'temporal.password')}`,
      );
      expect(await storedPasswords()).toEqual(before);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
