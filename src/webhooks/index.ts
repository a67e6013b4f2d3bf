/**
 * Pure verification of inbound webhooks: headers, source address, HMAC, JWT and body. No Koa, no
 * Temporal: the HTTP layer calls these in the order of API.md and renders `WebhookRejection`.
 */
export * from './errors';
export * from './digest';
export { signHmac, verifyHmac, verifyHmacWithAny } from './hmac';
export * from './headers';
export * from './cidr';
export * from './jwks';
export { JwtVerifier, JWT_ALGORITHMS, MAX_JWT_LIFETIME_SECONDS, REQUIRED_CLAIMS } from './jwt';
export type { JwtCheck, JwtVerifierOptions } from './jwt';
export * from './body';
