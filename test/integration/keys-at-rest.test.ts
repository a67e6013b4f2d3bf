/**
 * Keys at rest: the access-token signing key and the page-token key are sealed in `service_secrets`
 * (a database dump holds no usable key), rows stored in clear by older versions are sealed on first
 * start without logging anyone out, the signing key rotates by `kid` (current and previous served at
 * /auth/v1/jwks, tokens of the previous key valid until they expire), DATA_DIR is made with 0700.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type KeyLike } from 'jose';
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import { startTestService } from '../helpers/app';
import { AccessTokens, SIGNING_KEY_SECRET } from '../../src/auth/tokens';
import { loadPageTokenKey, PAGE_TOKEN_KEY_SECRET } from '../../src/auth/service-keys';
import { SecretBox, ensurePrivateDir, loadSecretKey } from '../../src/auth/secret-box';
import { createClient } from '../../src/auth/clients';
import type { Db } from '../../src/store/db';

/** Every row of every table of the store, as text: what a backup or a replica would hold. */
async function dumpDatabase(db: Db): Promise<string> {
  const tables = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  expect(tables.map((t) => t.table_name)).toContain('service_secrets');
  const parts: string[] = [];
  for (const { table_name: table } of tables) {
    const rows = await db.query(`SELECT * FROM "${table}"`);
    parts.push(`${table}: ${JSON.stringify(rows)}`);
  }
  return parts.join('\n');
}

/** Fails when the dump holds anything usable as a private key. */
function expectNoPrivateKeyMaterial(dump: string): void {
  expect(dump).not.toMatch(/PRIVATE KEY/);
  expect(dump).not.toMatch(/\\?"d\\?"\s*:/); // a private JWK member, also inside JSON text
  expect(dump).not.toMatch(/\\?"kty\\?"/); // no JWK at all: the public keys are served, not stored in clear
}

async function legacyJwk(): Promise<JWK> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  return { ...(await exportJWK(pair.privateKey)), kid: 'legacy-kid', alg: 'ES256' };
}

/** A token as the service issued it before the upgrade, signed with the plaintext key. */
async function legacyToken(jwk: JWK): Promise<string> {
  return new SignJWT({ roles: ['admin'] })
    .setProtectedHeader({ alg: 'ES256', kid: jwk.kid!, typ: 'at+jwt' })
    .setIssuer('urn:automation-governance')
    .setAudience('urn:automation-governance:api')
    .setSubject('legacy-caller')
    .setIssuedAt()
    .setExpirationTime('600s')
    .sign((await importJWK(jwk, 'ES256')) as KeyLike);
}

for (const target of DATABASES) {
  describeOn(target)(`keys at rest (${target.label})`, () => {
    let db: Db;
    beforeEach(async () => {
      db = await openTestDb(target);
    });
    afterEach(async () => db.close());

    it('a dump of a fresh store holds no usable key', async () => {
      const box = new SecretBox(randomBytes(32));
      const tokens = await AccessTokens.load(db, box, 600);
      const pageKey = await loadPageTokenKey(db, box);
      await createClient(db, box, { displayName: 'c', roles: ['admin'] });
      const dump = await dumpDatabase(db);
      expectNoPrivateKeyMaterial(dump);
      expect(dump).not.toContain(pageKey.toString('base64url'));
      expect(dump).not.toContain(pageKey.toString('hex'));
      const rows = await db.query<{ name: string; value: string }>('SELECT name, value FROM service_secrets ORDER BY name');
      expect(rows.map((r) => r.name)).toEqual([SIGNING_KEY_SECRET, PAGE_TOKEN_KEY_SECRET].sort());
      for (const row of rows) expect(SecretBox.isSealed(row.value)).toBe(true);
      // ...and the keys still work after a restart with the same SECRET_KEY.
      await createClient(db, box, { displayName: 'caller', roles: ['admin'], clientId: 'caller' });
      const token = await tokens.issue('caller', ['admin']);
      const again = await AccessTokens.load(db, box, 600);
      expect(await again.verify(token)).toEqual({ clientId: 'caller', roles: ['admin'] });
      expect((await loadPageTokenKey(db, box)).equals(pageKey)).toBe(true);
      // A different SECRET_KEY cannot open them: a clear start-up error, not a silent new key.
      await expect(AccessTokens.load(db, new SecretBox(randomBytes(32)), 600)).rejects.toThrow(/cannot be opened with this SECRET_KEY/);
    });

    it('seals keys stored in clear by an older version on first start; their tokens and page tokens stay valid', async () => {
      const jwk = await legacyJwk();
      const pageKeyText = randomBytes(32).toString('base64url');
      await db.query('INSERT INTO service_secrets (name, value) VALUES ($1, $2), ($3, $4)', [
        SIGNING_KEY_SECRET,
        JSON.stringify(jwk),
        PAGE_TOKEN_KEY_SECRET,
        pageKeyText,
      ]);
      const issuedBefore = await legacyToken(jwk);

      const box = new SecretBox(randomBytes(32));
      const tokens = await AccessTokens.load(db, box, 600);
      const pageKey = await loadPageTokenKey(db, box);

      expect(pageKey.toString('base64url')).toBe(pageKeyText);
      await createClient(db, box, { displayName: 'legacy caller', roles: ['admin'], clientId: 'legacy-caller' });
      expect(await tokens.verify(issuedBefore)).toEqual({ clientId: 'legacy-caller', roles: ['admin'] });
      expect(tokens.currentKid).toBe('legacy-kid');
      const dump = await dumpDatabase(db);
      expectNoPrivateKeyMaterial(dump);
      expect(dump).not.toContain(jwk.d!);
      expect(dump).not.toContain(pageKeyText);
    });

    it('rotates the signing key by kid: both keys published, tokens of the previous key valid until a second rotation', async () => {
      const box = new SecretBox(randomBytes(32));
      const tokens = await AccessTokens.load(db, box, 600);
      const other = await AccessTokens.load(db, box, 600); // a second API process on the same store
      await createClient(db, box, { displayName: 'caller', roles: ['read_only'], clientId: 'caller' });
      const before = await tokens.issue('caller', ['read_only']);
      const firstKid = tokens.currentKid;

      const rotated = await tokens.rotate();
      expect(rotated.previousKid).toBe(firstKid);
      expect(rotated.kid).not.toBe(firstKid);
      expect(tokens.jwks().keys.map((k) => k.kid)).toEqual([rotated.kid, firstKid]);
      for (const key of tokens.jwks().keys) expect(key).not.toHaveProperty('d');
      const after = await tokens.issue('caller', ['read_only']);
      expect(await tokens.verify(before)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      expect(await tokens.verify(after)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      // The other process learns the new key when it meets its kid.
      expect(await other.verify(after)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      expect(other.jwks().keys.map((k) => k.kid)).toEqual([rotated.kid, firstKid]);

      // A second rotation within the token lifetime would cut tokens of the first key short: refused.
      await expect(tokens.rotate()).rejects.toThrow(/wait at least 600 s/);
      await tokens.rotate(new Date(Date.now() + 601_000));
      expect(await tokens.verify(before)).toBeUndefined();
      expect(await tokens.verify(after)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      expectNoPrivateKeyMaterial(await dumpDatabase(db));
    });
  });
}

describe('GET /auth/v1/jwks after a rotation', () => {
  it('serves the current and the previous public key', async () => {
    const service = await startTestService();
    try {
      const first = service.deps.tokens.currentKid;
      const { kid } = await service.deps.tokens.rotate();
      const res = await request(service.server).get('/auth/v1/jwks');
      expect(res.status).toBe(200);
      expect(res.body.keys.map((k: JWK) => k.kid)).toEqual([kid, first]);
      expect(JSON.stringify(res.body)).not.toMatch(/"d":/);
    } finally {
      await service.close();
    }
  });
});

describe('DATA_DIR', () => {
  it('is created with mode 0700, and the key file in it with 0600', () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'data-dir-'));
    try {
      const dataDir = path.join(parent, 'nested', 'data');
      expect(ensurePrivateDir(dataDir)).toEqual({ openToOthers: false });
      expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
      const fresh = path.join(parent, 'fresh');
      expect(loadSecretKey(undefined, fresh).source).toBe('generated');
      expect(fs.statSync(fresh).mode & 0o777).toBe(0o700);
      expect(fs.statSync(path.join(fresh, 'secret.key')).mode & 0o777).toBe(0o600);
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});
