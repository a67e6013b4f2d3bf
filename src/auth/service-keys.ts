/** The page-token key: 32 random bytes made once, kept sealed in `service_secrets`. */
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../store/db';
import { getOrCreateServiceKey } from '../store/service-keys';
import type { SecretBox } from '../crypto/secret-box';

export const PAGE_TOKEN_KEY_SECRET = 'page_token_key';

export async function loadPageTokenKey(db: Queryable, box: SecretBox): Promise<Buffer> {
  return Buffer.from(
    await getOrCreateServiceKey(db, box, PAGE_TOKEN_KEY_SECRET, () => randomBytes(32).toString('base64url')),
    'base64url',
  );
}
