/**
 * Inbound webhooks: the intake (`receive`: listener → source address → body size → headers →
 * authentication → JSON → start the run), the authentication methods in a registry
 * (./authenticators), and the pure checks they are built from. No Koa: the HTTP layer only
 * translates the intake's outcome.
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
