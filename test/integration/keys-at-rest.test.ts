/**
 * Keys at rest: the access-token signing key and the page-token key are sealed in `service_secrets`
 * (a database dump holds no usable key), rows stored in clear by older versions are sealed on first
 * start without logging anyone out, the signing key rotates by `kid` (current and previous served at
 * /auth/v1/jwks, tokens of the previous key valid until they expire), DATA_DIR is made with 0700.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCipheriv, randomBytes } from 'node:crypto';
import request from 'supertest';
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK, type KeyLike } from 'jose';
import { DATABASES, openTestDb, describeOn } from '../helpers/databases';
import { startTestService } from '../helpers/test-service';
import { AccessTokens, SIGNING_KEY_SECRET } from '../../src/auth/tokens';
import { loadPageTokenKey, PAGE_TOKEN_KEY_SECRET } from '../../src/auth/service-keys';
import { SecretBox, ensurePrivateDir, loadSecretKey, sealContext } from '../../src/crypto/secret-box';
import { bindSealedValues, sealedValuesBound } from '../../src/store/sealing';
import { getOrCreateServiceKey } from '../../src/store/service-keys';
import { ListenerCache } from '../../src/delivery/listener-cache';
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
      const rows = await db.query<{ name: string; value: string }>(
        'SELECT name, value FROM service_secrets ORDER BY name',
      );
      expect(rows.map((r) => r.name)).toEqual([SIGNING_KEY_SECRET, PAGE_TOKEN_KEY_SECRET].sort());
      for (const row of rows) expect(SecretBox.isSealed(row.value)).toBe(true);
      // ...and the keys still work after a restart with the same SECRET_KEY.
      await createClient(db, box, { displayName: 'caller', roles: ['admin'], clientId: 'caller' });
      const token = await tokens.issue('caller', ['admin']);
      const again = await AccessTokens.load(db, box, 600);
      expect(await again.verify(token)).toEqual({ clientId: 'caller', roles: ['admin'] });
      expect((await loadPageTokenKey(db, box)).equals(pageKey)).toBe(true);
      // A different SECRET_KEY cannot open them: a clear start-up error, not a silent new key.
      await expect(AccessTokens.load(db, new SecretBox(randomBytes(32)), 600)).rejects.toThrow(
        /cannot be opened with this SECRET_KEY/,
      );
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
      await db.query('UPDATE secret_sealing SET context_bound_at = NULL'); // a store from before the sealing migration
      const issuedBefore = await legacyToken(jwk);

      const box = new SecretBox(randomBytes(32));
      expect(await bindSealedValues(db, box)).toEqual({ resealed: 2 }); // what every process does at start
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

    it('rotates the signing key by kid: replaced keys stay published and valid for one token lifetime, a second rotation within it included', async () => {
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

      // A second rotation within the token lifetime (a leaked key retired at once) keeps both earlier keys.
      const second = await tokens.rotate();
      expect(second.retiredKids).toEqual([rotated.kid, firstKid]);
      expect(tokens.jwks().keys.map((k) => k.kid)).toEqual([second.kid, rotated.kid, firstKid]);
      const third = await tokens.issue('caller', ['read_only']);
      for (const token of [before, after, third])
        expect(await tokens.verify(token)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      // Keys retired more than a token lifetime ago are dropped (every token they signed has expired).
      const later = await tokens.rotate(new Date(Date.now() + 601_000));
      expect(later.retiredKids).toEqual([second.kid]);
      expect(await tokens.verify(before)).toBeUndefined();
      expect(await tokens.verify(after)).toBeUndefined();
      expect(await tokens.verify(third)).toEqual({ clientId: 'caller', roles: ['read_only'] });
      expectNoPrivateKeyMaterial(await dumpDatabase(db));
    });

    it('a revoking rotation drops every earlier key at once, in this process and (on its next reload) in the others', async () => {
      const box = new SecretBox(randomBytes(32));
      const tokens = await AccessTokens.load(db, box, 600);
      const other = await AccessTokens.load(db, box, 600);
      await createClient(db, box, { displayName: 'revoked caller', roles: ['read_only'], clientId: 'revoked-caller' });
      await tokens.rotate();
      const leaked = await tokens.issue('revoked-caller', ['read_only']);
      expect(await other.verify(leaked)).toEqual({ clientId: 'revoked-caller', roles: ['read_only'] });
      const revoked = await tokens.rotate(new Date(), { revoke: true });
      expect(revoked.retiredKids).toEqual([]);
      expect(tokens.jwks().keys.map((k) => k.kid)).toEqual([revoked.kid]);
      expect(await tokens.verify(leaked)).toBeUndefined();
      await other.reload();
      expect(await other.verify(leaked)).toBeUndefined();
      expect(await other.verify(await tokens.issue('revoked-caller', ['read_only']))).toEqual({
        clientId: 'revoked-caller',
        roles: ['read_only'],
      });
    });

    it('reads a key ring stored in the one-previous-key form: its previous key still verifies', async () => {
      const box = new SecretBox(randomBytes(32));
      const first = await AccessTokens.load(db, box, 600);
      await createClient(db, box, { displayName: 'old ring caller', roles: ['admin'], clientId: 'old-ring-caller' });
      const oldToken = await first.issue('old-ring-caller', ['admin']);
      const oldKid = first.currentKid;
      // What the previous version wrote after a rotation: {current, previous, rotatedAt}.
      const rows = await db.query<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [
        SIGNING_KEY_SECRET,
      ]);
      const ring = JSON.parse(box.open(rows[0]!.value, sealContext('service_secret', SIGNING_KEY_SECRET))) as {
        current?: JWK;
        retired?: Array<{ jwk: JWK }>;
      };
      const fresh = {
        ...(await exportJWK((await generateKeyPair('ES256', { extractable: true })).privateKey)),
        kid: 'one-previous-current',
        alg: 'ES256',
      };
      const { d: _d, ...previous } = ring.current!;
      const legacy = JSON.stringify({ current: fresh, previous, rotatedAt: new Date().toISOString() });
      await db.query('UPDATE service_secrets SET value = $2 WHERE name = $1', [
        SIGNING_KEY_SECRET,
        box.seal(legacy, sealContext('service_secret', SIGNING_KEY_SECRET)),
      ]);
      const loaded = await AccessTokens.load(db, box, 600);
      expect(loaded.currentKid).toBe('one-previous-current');
      expect(loaded.jwks().keys.map((k) => k.kid)).toEqual(['one-previous-current', oldKid]);
      expect(await loaded.verify(oldToken)).toEqual({ clientId: 'old-ring-caller', roles: ['admin'] });
    });
  });
}

for (const target of DATABASES) {
  describeOn(target)(`sealed values bound to their rows (${target.label})`, () => {
    let db: Db;
    beforeEach(async () => {
      db = await openTestDb(target);
    });
    afterEach(async () => db.close());

    it('migrates values sealed without a binding (v1) and clear service secrets once; then a moved, clear or unbound value is refused', async () => {
      const key = randomBytes(32);
      const box = new SecretBox(key);
      const service = await startTestService({ db, deps: { secretBox: box } });
      try {
        const superToken = await service.tokenFor('super_admin');
        const make = async (name: string) =>
          (
            await request(service.server)
              .post('/api/v1/automations')
              .set('Authorization', `Bearer ${superToken}`)
              .send({ displayName: name, trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: [] })
          ).body as {
            automation: { id: string };
            signingSecret: string;
          };
        const [a, b] = [await make('a'), await make('b')];
        await request(service.server)
          .post('/api/v1/secrets')
          .set('Authorization', `Bearer ${superToken}`)
          .send({ name: 'crm', value: 'sk_crm_value', allowedOrigins: ['https://crm.example'] })
          .expect(200);

        // The store as an earlier version left it: v1 values without a binding, a service secret in clear.
        const legacySeal = (plain: string): string => {
          const iv = randomBytes(12);
          const cipher = createCipheriv('aes-256-gcm', key, iv);
          const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
          return [
            'v1',
            iv.toString('base64url'),
            ct.toString('base64url'),
            cipher.getAuthTag().toString('base64url'),
          ].join('.');
        };
        await db.query('UPDATE automations SET signing_secret = $2 WHERE id = $1', [
          a.automation.id,
          legacySeal(a.signingSecret),
        ]);
        await db.query("UPDATE outbound_secrets SET sealed_value = $1 WHERE name = 'crm'", [
          legacySeal('sk_crm_value'),
        ]);
        // A rotation's previous value, kept for signatures during its grace period: sealed the old way too.
        await db.query(
          "UPDATE outbound_secrets SET previous_sealed_value = $1, previous_expires_at = now() + interval '1 hour' WHERE name = 'crm'",
          [legacySeal('sk_crm_previous')],
        );
        await db.query("INSERT INTO service_secrets (name, value) VALUES ('legacy_clear', 'clear-value')");
        await db.query('UPDATE secret_sealing SET context_bound_at = NULL');
        expect(await sealedValuesBound(db)).toBe(false);
        // The wrong key changes nothing.
        await expect(bindSealedValues(db, new SecretBox(randomBytes(32)))).rejects.toThrow(
          /cannot be opened with this SECRET_KEY/,
        );
        expect(await sealedValuesBound(db)).toBe(false);

        expect(await bindSealedValues(db, box)).toEqual({ resealed: 4 });
        expect(await sealedValuesBound(db)).toBe(true);
        expect(await bindSealedValues(db, box)).toEqual({ resealed: 0 });
        const [rowA] = await db.query<{ signing_secret: string }>(
          'SELECT signing_secret FROM automations WHERE id = $1',
          [a.automation.id],
        );
        expect(box.open(rowA!.signing_secret, sealContext('automation_signing_secret', a.automation.id))).toBe(
          a.signingSecret,
        );
        const [crm] = await db.query<{ sealed_value: string; previous_sealed_value: string }>(
          "SELECT sealed_value, previous_sealed_value FROM outbound_secrets WHERE name = 'crm'",
        );
        expect(box.open(crm!.sealed_value, sealContext('outbound_secret', 'crm'))).toBe('sk_crm_value');
        expect(box.open(crm!.previous_sealed_value, sealContext('outbound_secret', 'crm'))).toBe('sk_crm_previous');
        expect(await getOrCreateServiceKey(db, box, 'legacy_clear', () => 'unused')).toBe('clear-value');

        // A sealed value moved to another row, or to another purpose, does not open.
        expect(() =>
          box.open(rowA!.signing_secret, sealContext('automation_signing_secret', b.automation.id)),
        ).toThrow();
        expect(() => box.open(crm!.sealed_value, sealContext('service_secret', 'crm'))).toThrow();
        await db.query('UPDATE automations SET signing_secret = $2 WHERE id = $1', [
          b.automation.id,
          rowA!.signing_secret,
        ]);
        const moved = await db.query<{ listener_id: string }>('SELECT listener_id FROM automations WHERE id = $1', [
          b.automation.id,
        ]);
        const cache = new ListenerCache(db, box);
        try {
          await expect(cache.lookup(moved[0]!.listener_id)).rejects.toThrow();
        } finally {
          await cache.close();
        }
        // After the migration a service secret in clear, or sealed without its binding, is refused.
        await db.query("INSERT INTO service_secrets (name, value) VALUES ('planted', 'planted-in-clear')");
        await expect(getOrCreateServiceKey(db, box, 'planted', () => 'unused')).rejects.toThrow(
          /stored in clear: refused/,
        );
        await db.query("UPDATE service_secrets SET value = $1 WHERE name = 'planted'", [legacySeal('planted-v1')]);
        await expect(getOrCreateServiceKey(db, box, 'planted', () => 'unused')).rejects.toThrow(
          /without its row binding: refused/,
        );
        await db.query('UPDATE service_secrets SET value = $1 WHERE name = $2', [
          (
            await db.query<{ value: string }>('SELECT value FROM service_secrets WHERE name = $1', [SIGNING_KEY_SECRET])
          )[0]!.value,
          'planted',
        ]);
        await expect(getOrCreateServiceKey(db, box, 'planted', () => 'unused')).rejects.toThrow(
          /cannot be opened with this SECRET_KEY/,
        );
      } finally {
        await service.close();
      }
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
