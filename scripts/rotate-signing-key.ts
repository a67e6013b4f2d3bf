/**
 * Rotates the access-token signing key: `npm run rotate-signing-key`, with the service's own
 * DATABASE_URL / DATA_DIR and SECRET_KEY. The new key signs from now on; the previous one stays
 * published at /auth/v1/jwks and valid for the tokens it signed (keys replaced within the last
 * token lifetime are all kept, so rotations may follow each other at any pace). With `--revoke`
 * every replaced key is dropped: tokens signed before stop verifying (a leaked key). Running API
 * processes pick the new key up within a minute.
 */
import path from 'node:path';
import { loadConfig } from '../src/config';
import { openDb } from '../src/store/db';
import { SecretBox, loadSecretKey } from '../src/crypto/secret-box';
import { AccessTokens } from '../src/auth/tokens';
import { bindSealedValues } from '../src/store/sealing';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: path.join(config.dataDir, 'store') });
  try {
    const box = new SecretBox(loadSecretKey(config.secretKey, config.dataDir).key);
    await bindSealedValues(db, box);
    const tokens = await AccessTokens.load(db, box, config.accessTokenTtlSeconds);
    const args = process.argv.slice(2);
    const unknown = args.filter((arg) => arg !== '--revoke');
    if (unknown.length > 0)
      throw new Error(`unknown argument ${unknown[0]} (usage: npm run rotate-signing-key [-- --revoke])`);
    const revoke = args.includes('--revoke');
    const { kid, previousKid, retiredKids } = await tokens.rotate(new Date(), { revoke });
    console.log(
      revoke
        ? `signing key rotated: current kid ${kid}; every earlier key revoked (${previousKid} included): tokens they signed are refused`
        : `signing key rotated: current kid ${kid}, still accepted until their tokens expire: ${retiredKids.join(', ')}`,
    );
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(`rotate-signing-key: ${(err as Error).message}`);
  process.exit(1);
});
