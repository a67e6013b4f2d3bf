/**
 * Rotates the access-token signing key: `npm run rotate-signing-key`, with the service's own
 * DATABASE_URL / DATA_DIR and SECRET_KEY. The new key signs from now on; the previous one stays
 * published at /auth/v1/jwks and valid for the tokens it signed. Running API processes pick the
 * new key up within a minute. Refused while the last rotation is younger than the token lifetime.
 */
import path from 'node:path';
import { loadConfig } from '../src/config';
import { openDb } from '../src/store/db';
import { SecretBox, loadSecretKey } from '../src/auth/secret-box';
import { AccessTokens } from '../src/auth/tokens';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: path.join(config.dataDir, 'store') });
  try {
    const box = new SecretBox(loadSecretKey(config.secretKey, config.dataDir).key);
    const tokens = await AccessTokens.load(db, box, config.accessTokenTtlSeconds);
    const { kid, previousKid } = await tokens.rotate();
    console.log(`signing key rotated: current kid ${kid}, previous kid ${previousKid} (still accepted until its tokens expire)`);
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(`rotate-signing-key: ${(err as Error).message}`);
  process.exit(1);
});
