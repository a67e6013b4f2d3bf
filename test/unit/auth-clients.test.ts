/**
 * API clients (src/auth/clients.ts) on a real PGlite store: the secret is stored hashed (keyed hash
 * when generated, scrypt when chosen), authentication needs both id and secret, every refusal costs
 * the same scrypt (an unknown id as a known one), a legacy scrypt hash
 * of a generated secret is replaced on success, listing pages by id, and the bootstrap client.
 */
import { randomBytes } from 'node:crypto';
import {
  authenticateClient,
  clientSecretKey,
  createClient,
  deleteClient,
  ensureBootstrapClient,
  getClient,
  listClients,
} from '../../src/auth/clients';
import { SecretBox } from '../../src/crypto/secret-box';
import { hashChosenSecret, kdf, type SlowGate } from '../../src/auth/client-secret-hashes';
import type { Db } from '../../src/store/db';
import { openTestDb, PGLITE } from '../helpers/databases';

let db: Db;
const box = new SecretBox(randomBytes(32));

beforeAll(async () => {
  db = await openTestDb(PGLITE);
});

beforeEach(async () => {
  // Every test starts from an empty client table (cheaper than a new database each).
  await db.query('DELETE FROM bootstrap_clients');
  await db.query('DELETE FROM api_clients');
});

afterAll(async () => {
  await db.close();
});

async function storedHash(clientId: string): Promise<string> {
  const rows = await db.query<{ secret_hash: string }>('SELECT secret_hash FROM api_clients WHERE client_id = $1', [
    clientId,
  ]);
  return rows[0]!.secret_hash;
}

function countingGate(): { gate: SlowGate; calls: () => number } {
  let calls = 0;
  return { gate: (work) => ((calls += 1), work()), calls: () => calls };
}

describe('createClient and authenticateClient', () => {
  it('a generated secret: shown once, stored as a keyed hash, authenticates without the slow gate', async () => {
    const { client, clientSecret } = await createClient(db, box, { displayName: 'ci', roles: ['admin', 'read_only'] });
    expect(clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(client).toEqual({
      id: expect.any(String),
      clientId: expect.stringMatching(/^cli_[A-Za-z0-9_-]{16}$/),
      displayName: 'ci',
      roles: ['admin', 'read_only'],
      createdAt: expect.any(String),
    });
    expect(Number.isNaN(Date.parse(client.createdAt))).toBe(false);
    const hash = await storedHash(client.clientId);
    expect(hash).toMatch(/^hmac-sha256\$/);
    expect(hash).not.toContain(clientSecret);

    const { gate, calls } = countingGate();
    await expect(authenticateClient(db, box, client.clientId, clientSecret, gate)).resolves.toEqual(client);
    expect(calls()).toBe(0);
  });

  it("refuses a wrong secret, another client's secret, an unknown id, and the hash itself", async () => {
    const a = await createClient(db, box, { displayName: 'a', roles: ['admin'] });
    const b = await createClient(db, box, { displayName: 'b', roles: ['admin'] });
    await expect(authenticateClient(db, box, a.client.clientId, b.clientSecret)).resolves.toBeUndefined();
    // The last character changed (to 'A', or to 'B' when it is an 'A' already: 1 secret in 64 ends so).
    const wrong = `${a.clientSecret.slice(0, -1)}${a.clientSecret.endsWith('A') ? 'B' : 'A'}`;
    expect(wrong).not.toBe(a.clientSecret);
    await expect(authenticateClient(db, box, a.client.clientId, wrong)).resolves.toBeUndefined();
    await expect(authenticateClient(db, box, a.client.clientId, '')).resolves.toBeUndefined();
    await expect(authenticateClient(db, box, 'cli_nobody', a.clientSecret)).resolves.toBeUndefined();
    await expect(
      authenticateClient(db, box, a.client.clientId, await storedHash(a.client.clientId)),
    ).resolves.toBeUndefined();
  });

  it('the keyed hash depends on the secret key: another key does not authenticate', async () => {
    const { client, clientSecret } = await createClient(db, box, { displayName: 'ci', roles: ['admin'] });
    await expect(
      authenticateClient(db, new SecretBox(randomBytes(32)), client.clientId, clientSecret),
    ).resolves.toBeUndefined();
    expect(clientSecretKey(box)).toEqual(box.deriveKey('client-secret-hmac'));
  });

  it('every refusal runs one scrypt of the same parameters, through the gate: an unknown id as a known one', async () => {
    await createClient(db, box, {
      displayName: 'bootstrap',
      roles: ['super_admin'],
      clientId: 'boot',
      clientSecret: 'an operator chose this bootstrap secret',
    });
    const generated = await createClient(db, box, { displayName: 'ci', roles: ['admin'] });
    const runs = jest.spyOn(kdf, 'scrypt');
    try {
      /** The scrypt runs of one attempt (salt length, key length, cost parameters) and the gate's passes. */
      const cost = async (clientId: string, secret: string, expected: 'refused' | 'accepted') => {
        runs.mockClear();
        const { gate, calls } = countingGate();
        const client = await authenticateClient(db, box, clientId, secret, gate);
        expect([clientId, client === undefined ? 'refused' : 'accepted']).toEqual([clientId, expected]);
        const scrypts = runs.mock.calls.map(([, salt, keyLength, options]) => ({
          salt: salt.length,
          keyLength,
          options,
        }));
        return { scrypts, gated: calls() };
      };
      const oneScrypt = { scrypts: [{ salt: 16, keyLength: 32, options: { N: 16384, r: 8, p: 1 } }], gated: 1 };
      // The wrong secret of the client whose secret was chosen (scrypt), of a generated one (keyed
      // hash), and an unknown id: the same work, so the time of the refusal tells none of them apart.
      expect(await cost('boot', 'a wrong guess', 'refused')).toEqual(oneScrypt);
      expect(await cost(generated.client.clientId, 'a wrong guess', 'refused')).toEqual(oneScrypt);
      expect(await cost('cli_nobody', 'a wrong guess', 'refused')).toEqual(oneScrypt);
      expect(await cost('boot', generated.clientSecret, 'refused')).toEqual(oneScrypt);
      // Successes: scrypt for the chosen secret, nothing slow for the generated one.
      expect(await cost('boot', 'an operator chose this bootstrap secret', 'accepted')).toEqual(oneScrypt);
      expect(await cost(generated.client.clientId, generated.clientSecret, 'accepted')).toEqual({
        scrypts: [],
        gated: 0,
      });
    } finally {
      runs.mockRestore();
    }
  });

  it('a chosen secret and client id: stored with scrypt, verified through the gate, never rewritten', async () => {
    const chosen = 'an operator chose this one';
    const { client, clientSecret } = await createClient(db, box, {
      displayName: 'op',
      roles: ['super_admin'],
      clientId: 'ops',
      clientSecret: chosen,
    });
    expect(client.clientId).toBe('ops');
    expect(clientSecret).toBe(chosen);
    const hash = await storedHash('ops');
    expect(hash).toMatch(/^scrypt\$/);
    const { gate, calls } = countingGate();
    await expect(authenticateClient(db, box, 'ops', chosen, gate)).resolves.toEqual(client);
    expect(calls()).toBe(1);
    await expect(authenticateClient(db, box, 'ops', 'wrong', gate)).resolves.toBeUndefined();
    expect(await storedHash('ops')).toBe(hash);
  });

  it('a chosen secret that looks generated is hashed with scrypt too; on success it becomes a keyed hash', async () => {
    const chosen = randomBytes(32).toString('base64url');
    await createClient(db, box, { displayName: 'legacy', roles: ['admin'], clientId: 'legacy', clientSecret: chosen });
    expect(await storedHash('legacy')).toMatch(/^scrypt\$/);
    // A wrong secret changes nothing.
    await expect(authenticateClient(db, box, 'legacy', randomBytes(32).toString('base64url'))).resolves.toBeUndefined();
    expect(await storedHash('legacy')).toMatch(/^scrypt\$/);
    await expect(authenticateClient(db, box, 'legacy', chosen)).resolves.toMatchObject({ clientId: 'legacy' });
    expect(await storedHash('legacy')).toMatch(/^hmac-sha256\$/);
    const { gate, calls } = countingGate();
    await expect(authenticateClient(db, box, 'legacy', chosen, gate)).resolves.toMatchObject({ clientId: 'legacy' });
    expect(calls()).toBe(0);
  });

  it('keeps only known roles from the stored row', async () => {
    const { client } = await createClient(db, box, { displayName: 'x', roles: ['admin'] });
    await db.query(`UPDATE api_clients SET roles = '["admin","root"]'::jsonb WHERE id = $1`, [client.id]);
    expect((await getClient(db, client.id))?.roles).toEqual(['admin']);
    await db.query(`UPDATE api_clients SET roles = '"admin"'::jsonb WHERE id = $1`, [client.id]);
    expect((await getClient(db, client.id))?.roles).toEqual([]);
  });
});

describe('listClients, getClient, deleteClient', () => {
  it('lists by id in pages; gets and deletes by id', async () => {
    const made = [];
    for (const name of ['one', 'two', 'three'])
      made.push((await createClient(db, box, { displayName: name, roles: ['read_only'] })).client);
    const byId = [...made].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(await listClients(db, undefined, 10)).toEqual(byId);
    expect(await listClients(db, undefined, 2)).toEqual(byId.slice(0, 2));
    expect(await listClients(db, byId[1]!.id, 2)).toEqual(byId.slice(2));
    expect(await listClients(db, byId[2]!.id, 2)).toEqual([]);
    expect(await getClient(db, made[0]!.id)).toEqual(made[0]);
    expect(await getClient(db, 'nope')).toBeUndefined();
    expect(await deleteClient(db, made[0]!.id)).toBe(true);
    expect(await deleteClient(db, made[0]!.id)).toBe(false);
    expect(await getClient(db, made[0]!.id)).toBeUndefined();
    expect(await listClients(db, undefined, 10)).toHaveLength(2);
  });
});

describe('ensureBootstrapClient', () => {
  it('without configuration and without clients, makes one super_admin client and returns its secret once', async () => {
    const result = await ensureBootstrapClient(db, box, undefined);
    if (result.kind !== 'created') throw new Error(`expected created, got ${result.kind}`);
    await expect(authenticateClient(db, box, result.clientId, result.clientSecret)).resolves.toMatchObject({
      roles: ['super_admin'],
      displayName: 'bootstrap',
    });
    await expect(ensureBootstrapClient(db, box, undefined)).resolves.toEqual({ kind: 'existing' });
    expect(await listClients(db, undefined, 10)).toHaveLength(1);
  });

  it('with configuration, makes exactly that client; a second start changes nothing', async () => {
    const bootstrap = { clientId: 'boot', clientSecret: 'boot secret' };
    await expect(ensureBootstrapClient(db, box, bootstrap)).resolves.toEqual({ kind: 'configured', clientId: 'boot' });
    await expect(authenticateClient(db, box, 'boot', 'boot secret')).resolves.toMatchObject({ roles: ['super_admin'] });
    const hash = await storedHash('boot');
    await expect(ensureBootstrapClient(db, box, bootstrap)).resolves.toEqual({ kind: 'configured', clientId: 'boot' });
    expect(await storedHash('boot')).toBe(hash);
    expect(await listClients(db, undefined, 10)).toHaveLength(1);
  });

  it('a changed configured secret, or lost super_admin role, is set back', async () => {
    await ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 'first' });
    await ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 'second' });
    await expect(authenticateClient(db, box, 'boot', 'first')).resolves.toBeUndefined();
    await expect(authenticateClient(db, box, 'boot', 'second')).resolves.toMatchObject({ roles: ['super_admin'] });

    await db.query(`UPDATE api_clients SET roles = '["read_only"]'::jsonb WHERE client_id = 'boot'`);
    await ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 'second' });
    await expect(authenticateClient(db, box, 'boot', 'second')).resolves.toMatchObject({ roles: ['super_admin'] });
  });

  it('a configured client that exists already (made before the record existed) is recorded, so deleting it is final', async () => {
    await createClient(db, box, { displayName: 'old', roles: ['super_admin'], clientId: 'boot', clientSecret: 'x' });
    await expect(ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 'x' })).resolves.toEqual({
      kind: 'configured',
      clientId: 'boot',
    });
    const rows = await db.query<{ id: string }>(`SELECT id FROM api_clients WHERE client_id = 'boot'`);
    await deleteClient(db, rows[0]!.id);
    await expect(ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 'x' })).resolves.toEqual({
      kind: 'deleted',
      clientId: 'boot',
    });
  });

  it('a configured client deleted through the API is not made again', async () => {
    const bootstrap = { clientId: 'boot', clientSecret: 'boot secret' };
    await ensureBootstrapClient(db, box, bootstrap);
    const rows = await db.query<{ id: string }>(`SELECT id FROM api_clients WHERE client_id = 'boot'`);
    expect(await deleteClient(db, rows[0]!.id)).toBe(true);
    await expect(ensureBootstrapClient(db, box, bootstrap)).resolves.toEqual({ kind: 'deleted', clientId: 'boot' });
    expect(await listClients(db, undefined, 10)).toEqual([]);
    await expect(authenticateClient(db, box, 'boot', 'boot secret')).resolves.toBeUndefined();
  });

  it('with configuration, other clients do not stop the configured one from being made', async () => {
    await createClient(db, box, { displayName: 'other', roles: ['admin'] });
    await expect(ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 's' })).resolves.toEqual({
      kind: 'configured',
      clientId: 'boot',
    });
    expect(await listClients(db, undefined, 10)).toHaveLength(2);
  });

  it('hashChosenSecret output is what a configured client is stored with', async () => {
    await ensureBootstrapClient(db, box, { clientId: 'boot', clientSecret: 's' });
    expect(await storedHash('boot')).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(typeof (await hashChosenSecret('s'))).toBe('string');
  });
});
