/**
 * The webhook authentication methods: one line per method. A new method is one file in this
 * folder (an `Authenticator`) and one line here; everything else reads this registry.
 */
import type { Authenticator } from './authenticator';
import { hmacAuthenticator } from './hmac';
import { jwtAuthenticator } from './jwt';

export const AUTHENTICATORS = {
  HMAC: hmacAuthenticator,
  JWT: jwtAuthenticator,
} as const;

/** `'HMAC' | 'JWT'`: the methods a trigger may name. */
export type AuthMethod = keyof typeof AUTHENTICATORS;

type Registered = (typeof AUTHENTICATORS)[AuthMethod];

/** The methods, in registry order (for messages, schemas and usage texts). */
export const AUTH_METHODS = Object.keys(AUTHENTICATORS) as [AuthMethod, ...AuthMethod[]];

/** Names of the raw header fields of the header check (`signature`, `authorization`). */
export type CredentialInput = Registered['credential']['input'];
/** Names of the checked credential fields (`signature`, `token`). */
export type CredentialOutput = Registered['credential']['output'];
/** The trigger fields of every method (`jwksUrl`), each `''` on triggers of other methods. */
export type TriggerFieldName = { [M in AuthMethod]: keyof (typeof AUTHENTICATORS)[M]['fields']['shape'] }[AuthMethod] &
  string;
export type TriggerFields = Record<TriggerFieldName, string>;

export function isAuthMethod(value: unknown): value is AuthMethod {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(AUTHENTICATORS, value);
}

/** The registry entry of a method, typed loosely for code that handles every method alike. */
export function authenticatorOf(method: AuthMethod): Authenticator {
  return AUTHENTICATORS[method] as unknown as Authenticator;
}

/** Every method's trigger field names, each with the method that owns it. */
export function triggerFieldOwners(): Array<{ field: TriggerFieldName; method: AuthMethod }> {
  return AUTH_METHODS.flatMap((method) =>
    Object.keys(authenticatorOf(method).fields.shape).map((field) => ({ field: field as TriggerFieldName, method })),
  );
}

/** The methods that have a signing secret. */
export function methodsWithSecret(): AuthMethod[] {
  return AUTH_METHODS.filter((method) => authenticatorOf(method).secret !== undefined);
}

export type {
  Authenticator,
  AuthenticatorConfig,
  Signer,
  SignRequest,
  Verify,
  VerifyRequest,
  VerifyResult,
} from './authenticator';
