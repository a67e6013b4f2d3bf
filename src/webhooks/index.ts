/**
 * Inbound webhooks, pure: the authentication methods in a registry (./authenticators) and the
 * checks the intake (src/delivery/intake.ts) is built from. No Koa, no store.
 */
export * from './errors';
export * from './digest';
export { signHmac, verifyHmac, verifyHmacWithAny } from './authenticators/hmac';
export { bearerToken } from './authenticators/jwt';
export * from './authenticators';
export * from './headers';
export * from '../net/cidr';
export * from './jwks';
export { JwtVerifier, JWT_ALGORITHMS, MAX_JWT_LIFETIME_SECONDS, REQUIRED_CLAIMS } from './jwt';
export type { JwtCheck, JwtVerifierOptions } from './jwt';
export * from './body';
