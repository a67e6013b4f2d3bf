/**
 * Body digest shared by both authentication methods: the JWT `htb_s256` claim is this value, and
 * it is handy in logs as a payload fingerprint that reveals nothing of the payload.
 */
import { createHash } from 'node:crypto';

/** SHA-256 of the raw body bytes, base64url without padding (the `htb_s256` claim value). */
export function bodySha256(body: Buffer | string): string {
  return createHash('sha256').update(body).digest('base64url');
}
