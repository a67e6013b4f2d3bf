/**
 * Console sessions (src/auth/sessions.ts) on a real PGlite store, with a clock the test holds: what
 * the store keeps of a session (the hash of its id, never the id), the shape of the ids a cookie may
 * carry, the idle and absolute lifetimes to the millisecond, the last-seen write at most once a
 * minute, the purge of expired rows, the roles of a local sign-in following its API client, and the
 * constant-time token comparison the CSRF check uses. test/integration/console-sessions.test.ts
 * checks the same through HTTP; this one is what StrykerJS runs (docs/testing.md#mutation-testing).
 */
import { createHash, randomBytes } from 'node:crypto';
import { ConsoleSessions, hashSessionId, sameToken, TOUCH_INTERVAL_MS } from '../../src/auth/sessions';
import { createClient, deleteClient } from '../../src/auth/clients';
import { SecretBox } from '../../src/crypto/secret-box';
import { insertSession } from '../../src/store/console-sessions';
import type { Db } from '../../src/store/db';
import { openTestDb, PGLITE } from '../helpers/databases';

const START = Date.parse('2026-01-01T00:00:00Z');
const IDLE_S = 1800;
const MAX_S = 43200;
const PURGE_MS = 5 * 60_000;
const PERSON = { id: 'p-1', name: 'Ada Lovelace', email: 'ada@example.test' };
const PERSON_ACTOR = 'person:https://idp.example#ada';

let db: Db;
let box: SecretBox;
let now = START;

interface Row {
  id_hash: string;
  csrf_token: string;
  last_seen_at: Date;
  expires_at: Date;
}

async function rows(): Promise<Row[]> {
  return db.query<Row>(
    'SELECT id_hash, csrf_token, last_seen_at, expires_at FROM console_sessions ORDER BY created_at',
  );
}

async function rowOf(idHash: string): Promise<Row | undefined> {
  return (await rows()).find((row) => row.id_hash === idHash);
}

/** A session row for a cookie id of our choosing (the service makes only 43-character ids). */
async function insertWithId(
  id: string,
  at: number,
  expiresAt: number,
  actor = PERSON_ACTOR,
  roles: string[] = ['read_only'],
): Promise<void> {
  await insertSession(db, {
    idHash: hashSessionId(id),
    csrfToken: 'csrf-' + id,
    actor,
    person: PERSON,
    roles,
    now: new Date(at),
    expiresAt: new Date(expiresAt),
  });
}

function sessions(limits = { idleSeconds: IDLE_S, maxSeconds: MAX_S }): ConsoleSessions {
  return new ConsoleSessions(db, limits, () => now);
}

describe('hashSessionId and sameToken', () => {
  it('names a session by the SHA-256 of its id in base64url', () => {
    expect(hashSessionId('abc')).toBe(createHash('sha256').update('abc').digest('base64url'));
    expect(hashSessionId('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
  });

  it('compares tokens: equal only when every byte and the length are', () => {
    expect(sameToken('s3cr3t-token', 's3cr3t-token')).toBe(true);
    expect(sameToken('s3cr3t-tokem', 's3cr3t-token')).toBe(false);
    expect(sameToken('s3cr3t-toke', 's3cr3t-token')).toBe(false);
    expect(sameToken('s3cr3t-token!', 's3cr3t-token')).toBe(false);
    expect(sameToken('', 's3cr3t-token')).toBe(false);
  });
});

// Only these open the store, so that a mutant of hashSessionId or sameToken runs without loading one.
describe('on a PGlite store', () => {
  beforeAll(async () => {
    db = await openTestDb(PGLITE);
    box = new SecretBox(randomBytes(32));
  });

  afterAll(async () => {
    await db.close();
  });

  beforeEach(async () => {
    now = START;
    await db.query('DELETE FROM console_sessions');
  });

  describe('ConsoleSessions.create', () => {
    it('answers a random id and CSRF token, and the store keeps only the hash of the id', async () => {
      const { id, session } = await sessions().create({ actor: PERSON_ACTOR, person: PERSON, roles: ['admin'] });
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.csrfToken).not.toBe(id);
      expect(session.idHash).toBe(hashSessionId(id));
      const stored = await rows();
      expect(stored).toHaveLength(1);
      expect(stored[0]!.id_hash).toBe(session.idHash);
      expect(stored[0]!.csrf_token).toBe(session.csrfToken);
      expect(JSON.stringify(await db.query('SELECT * FROM console_sessions'))).not.toContain(id);
      const other = await sessions().create({ actor: PERSON_ACTOR, person: PERSON, roles: ['admin'] });
      expect(other.id).not.toBe(id);
      expect(other.session.csrfToken).not.toBe(session.csrfToken);
    });

    it('acts as a person with their name and email, or as an API client with its id', async () => {
      const person = await sessions().create({ actor: PERSON_ACTOR, person: PERSON, roles: ['admin'] });
      expect(person.session.principal).toEqual({
        clientId: '',
        roles: ['admin'],
        actor: PERSON_ACTOR,
        person: { name: 'Ada Lovelace', email: 'ada@example.test' },
      });
      expect(person.session.person).toEqual({ ...PERSON, roles: ['admin'] });
      const client = await sessions().create({
        actor: 'client:c-42',
        person: { id: 'c-42', name: 'ci', email: '' },
        roles: ['read_only'],
      });
      expect(client.session.principal).toEqual({ clientId: 'c-42', roles: ['read_only'], actor: 'client:c-42' });
    });

    it('expires first at the idle timeout, or at the absolute lifetime when that is shorter', async () => {
      const idle = await sessions().create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      expect((await rowOf(idle.session.idHash))!.expires_at.getTime()).toBe(START + IDLE_S * 1000);
      expect((await rowOf(idle.session.idHash))!.last_seen_at.getTime()).toBe(START);
      const short = await sessions({ idleSeconds: 600, maxSeconds: 300 }).create({
        actor: PERSON_ACTOR,
        person: PERSON,
        roles: [],
      });
      expect((await rowOf(short.session.idHash))!.expires_at.getTime()).toBe(START + 300 * 1000);
    });

    it('purges the expired sessions when someone signs in', async () => {
      await insertWithId('e'.repeat(43), START - 10_000, START);
      await insertWithId('l'.repeat(43), START - 10_000, START + 1);
      await sessions().create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      const left = (await rows()).map((row) => row.id_hash);
      expect(left).toHaveLength(2);
      expect(left).toContain(hashSessionId('l'.repeat(43)));
      expect(left).not.toContain(hashSessionId('e'.repeat(43)));
    });
  });

  describe('ConsoleSessions.resolve', () => {
    it('finds a live session by its id, and no other', async () => {
      const store = sessions();
      const { id, session } = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: ['admin'] });
      expect(await store.resolve(id)).toEqual(session);
      expect(await store.resolve(session.idHash)).toBeUndefined();
      expect(await store.resolve(id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A'))).toBeUndefined();
    });

    it('takes ids of 20 to 100 characters of the base64url alphabet, and nothing else, even when stored', async () => {
      const store = sessions();
      for (const id of ['a'.repeat(20), 'Z'.repeat(100), 'a-b_c-d_e-f_g-h_i-j_09']) {
        await insertWithId(id, START, START + 60_000);
        expect((await store.resolve(id))?.idHash).toBe(hashSessionId(id));
      }
      for (const id of [
        'a'.repeat(19),
        'b'.repeat(101),
        'c'.repeat(30) + '.',
        'd'.repeat(30) + '=',
        '!' + 'e'.repeat(30),
        'f'.repeat(30) + '!',
        'g'.repeat(15) + ' ' + 'g'.repeat(15),
      ]) {
        await insertWithId(id, START, START + 60_000);
        expect(await store.resolve(id)).toBeUndefined();
      }
    });

    it('ends a session at its idle expiry to the millisecond, and deletes it', async () => {
      const store = sessions();
      const { id, session } = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      now = START + IDLE_S * 1000 - 1;
      expect((await store.resolve(id))?.idHash).toBe(session.idHash);
      // That read was more than a minute after sign-in: it moved the idle expiry.
      now = START + IDLE_S * 1000 - 1 + IDLE_S * 1000;
      expect(await store.resolve(id)).toBeUndefined();
      expect(await rowOf(session.idHash)).toBeUndefined();
    });

    it('ends a session at its stored expiry itself, between two purges, and deletes it', async () => {
      const store = sessions();
      await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      // That sign-in purged at START: reads up to five minutes later do not purge, so the expiry
      // check of resolve is what refuses the row.
      const id = 'i'.repeat(43);
      await insertWithId(id, START, START + 60_000);
      now = START + 59_999;
      expect((await store.resolve(id))?.idHash).toBe(hashSessionId(id));
      now = START + 60_000;
      expect(await store.resolve(id)).toBeUndefined();
      expect(await rowOf(hashSessionId(id))).toBeUndefined();
    });

    it('ends a session at its absolute lifetime however active it is, and deletes it', async () => {
      const store = sessions({ idleSeconds: 600, maxSeconds: 1000 });
      const { id, session } = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      for (const at of [300_000, 600_000, 900_000, 999_999]) {
        now = START + at;
        expect((await store.resolve(id))?.idHash).toBe(session.idHash);
      }
      // The touch at 900 s moved the idle expiry to the absolute end, not past it.
      expect((await rowOf(session.idHash))!.expires_at.getTime()).toBe(START + 1_000_000);
      now = START + 1_000_000;
      expect(await store.resolve(id)).toBeUndefined();
      expect(await rowOf(session.idHash)).toBeUndefined();
    });

    it('ends a session whose absolute lifetime is over even though its stored expiry is later', async () => {
      const id = 'x'.repeat(43);
      await insertWithId(id, START, START + 10 * MAX_S * 1000);
      // Seen 10 s before the end: the reads below write nothing (a touch would bring the expiry in).
      await db.query('UPDATE console_sessions SET last_seen_at = $2 WHERE id_hash = $1', [
        hashSessionId(id),
        new Date(START + MAX_S * 1000 - 10_000),
      ]);
      now = START + MAX_S * 1000 - 1;
      expect((await sessions().resolve(id))?.idHash).toBe(hashSessionId(id));
      expect((await rowOf(hashSessionId(id)))!.expires_at.getTime()).toBe(START + 10 * MAX_S * 1000);
      now = START + MAX_S * 1000;
      expect(await sessions().resolve(id)).toBeUndefined();
      expect(await rowOf(hashSessionId(id))).toBeUndefined();
    });

    it('writes the last-seen time and the idle expiry once they are a minute old, not before', async () => {
      const store = sessions();
      const { id, session } = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      expect(TOUCH_INTERVAL_MS).toBe(60_000);
      now = START + TOUCH_INTERVAL_MS - 1;
      await store.resolve(id);
      let row = (await rowOf(session.idHash))!;
      expect(row.last_seen_at.getTime()).toBe(START);
      expect(row.expires_at.getTime()).toBe(START + IDLE_S * 1000);
      now = START + TOUCH_INTERVAL_MS;
      await store.resolve(id);
      row = (await rowOf(session.idHash))!;
      expect(row.last_seen_at.getTime()).toBe(START + TOUCH_INTERVAL_MS);
      expect(row.expires_at.getTime()).toBe(START + TOUCH_INTERVAL_MS + IDLE_S * 1000);
    });

    it('purges expired sessions on the first read and then at most every five minutes', async () => {
      const store = sessions();
      const live = 'l'.repeat(43);
      await insertWithId(live, START, START + 3600_000);
      await insertWithId('e1'.repeat(20), START - 1000, START);
      await store.resolve(live);
      expect(await rowOf(hashSessionId('e1'.repeat(20)))).toBeUndefined();
      await insertWithId('e2'.repeat(20), START - 1000, START);
      now = START + PURGE_MS - 1;
      await store.resolve(live);
      expect((await rowOf(hashSessionId('e2'.repeat(20))))?.id_hash).toBe(hashSessionId('e2'.repeat(20)));
      now = START + PURGE_MS;
      await store.resolve(live);
      expect(await rowOf(hashSessionId('e2'.repeat(20)))).toBeUndefined();
    });

    it('keeps only the known roles a session was stored with', async () => {
      const id = 'r'.repeat(43);
      await insertWithId(id, START, START + 60_000, PERSON_ACTOR, ['admin', 'root', 'read_only']);
      const session = await sessions().resolve(id);
      expect(session?.principal.roles).toEqual(['admin', 'read_only']);
      expect(session?.person.roles).toEqual(['admin', 'read_only']);
      const odd = 'o'.repeat(43);
      await insertSession(db, {
        idHash: hashSessionId(odd),
        csrfToken: 'x',
        actor: PERSON_ACTOR,
        person: PERSON,
        roles: 'admin' as unknown as string[],
        now: new Date(START),
        expiresAt: new Date(START + 60_000),
      });
      expect((await sessions().resolve(odd))?.principal.roles).toEqual([]);
    });

    it("acts with the current roles of a local sign-in's API client, and ends with the client", async () => {
      const { client } = await createClient(db, box, { displayName: 'sessions test', roles: ['read_only'] });
      const store = sessions();
      const { id, session } = await store.create({
        actor: `client:${client.clientId}`,
        person: { id: client.clientId, name: 'sessions test', email: '' },
        roles: ['super_admin'],
      });
      const resolved = await store.resolve(id);
      expect(resolved?.principal).toEqual({
        clientId: client.clientId,
        roles: ['read_only'],
        actor: `client:${client.clientId}`,
      });
      // Only the known roles of the client's row count, as for the roles a session was stored with.
      await db.query('UPDATE api_clients SET roles = $2 WHERE id = $1', [client.id, JSON.stringify(['root', 'admin'])]);
      expect((await store.resolve(id))?.principal.roles).toEqual(['admin']);
      await deleteClient(db, client.id);
      expect(await store.resolve(id)).toBeUndefined();
      expect(await rowOf(session.idHash)).toBeUndefined();
    });

    it('ends a session on logout', async () => {
      const store = sessions();
      const { id, session } = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      const other = await store.create({ actor: PERSON_ACTOR, person: PERSON, roles: [] });
      await store.end(session.idHash);
      expect(await store.resolve(id)).toBeUndefined();
      expect((await store.resolve(other.id))?.idHash).toBe(other.session.idHash);
    });
  });
});
