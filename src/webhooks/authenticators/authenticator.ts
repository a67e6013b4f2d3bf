/**
 * What one webhook authentication method is: the header that carries its credential, the fields
 * configured on the trigger (a zod schema), whether it has a signing secret, how a request is
 * verified, and how `npm run send` signs. Each method is one file in this folder holding an
 * `Authenticator`; `./index.ts` lists them (one line per method). The receiver, the trigger
 * validation, the secret lifecycle, the OpenAPI document and the sender CLI read only that list.
 */
import type { z } from 'zod';
import type { WebhookRejection } from '../../errors';

/** Configuration an authenticator may depend on (a subset of `Config`). */
export interface AuthenticatorConfig {
  /** The tenant base URL (the JWT `sub`; the prefix of listener URLs). */
  baseUrl: string;
  /** Allow `http://` and non-public JWKS URLs (development and tests only). */
  allowInsecureJwks: boolean;
}

/** The header carrying a method's credential, read at step 4 of the check order. */
export interface CredentialHeader<Input extends string = string, Output extends string = string> {
  /** HTTP header name, as documented (e.g. `Webhook-Signature`). */
  name: string;
  /** Field of the header-check input holding the raw value. */
  input: Input;
  /** Field of the checked headers holding the credential. */
  output: Output;
  /**
   * true: absent means 400 'missing_header', reported with the other missing headers; false: the
   * method answers an absent header itself, with a 401, after every 400 check (`readCredential`).
   */
  requiredHeader: boolean;
  /** OpenAPI description of the header. */
  description: string;
}

/** One verification: the trigger's method fields, its (opened) signing secret, the request. */
export interface VerifyRequest<Fields> {
  listenerId: string;
  /** The full listener URL (the JWT `aud`). */
  listenerUrl: string;
  /** The method's own trigger fields, as validated when the trigger was saved. */
  fields: Fields;
  /**
   * The signing secrets in clear that may have made the credential: the current one and, during a
   * rotation's grace period, the previous one; empty for methods without a secret.
   */
  secrets: readonly string[];
  /** The credential read from the request (see `CredentialHeader`). */
  credential: string | undefined;
  /** `Webhook-Timestamp` and `Webhook-Event-Id` exactly as sent, and the normalised event id. */
  timestampHeader: string;
  eventIdHeader: string;
  eventId: string;
  /** The raw body bytes. */
  body: Buffer;
  /**
   * The delivery's time in Unix seconds, as every check of it judges (the receiver's clock when its
   * headers arrived, as for the timestamp window): a JWT's `exp`, `nbf` and `iat` are judged at it.
   */
  nowSeconds: number;
}

/**
 * A verification's answer: undefined when the request is authentic, else the 401 refusal.
 * Returned, not thrown: a wrong credential is the expected answer to a bad delivery, and a thrown
 * one cost about 4 µs of CPU per refused delivery on the receiver's hot path (bench/lab-401.ts,
 * docs/performance.md#constants), in a flood of wrong signatures. Anything else (a bug) still throws.
 */
export type VerifyResult = WebhookRejection | undefined;

/**
 * Verifies one request. A method that needs no I/O answers synchronously (HMAC: no promise per
 * delivery); one that may fetch (a JWKS) answers a promise.
 */
export type Verify<Fields> = (request: VerifyRequest<Fields>) => VerifyResult | Promise<VerifyResult>;

/** What the sender CLI needs to sign one delivery. */
export interface SignRequest {
  url: string;
  body: Buffer;
  eventId: string;
  /** `Webhook-Timestamp` (Unix seconds, as sent). */
  timestamp: string;
}

/** Headers to add to one delivery. */
export type Signer = (request: SignRequest) => Promise<Record<string, string>>;

/** A string option of the sender CLI. */
export interface SenderOption {
  /** e.g. `<file>`: shown in the usage text. */
  value: string;
  description: string;
}

/** How `npm run send` signs for this method. */
export interface Sender {
  /** The option that selects this method (e.g. `secret` for `--secret`). */
  selector: string;
  /** Every option of this method, the selector included, in usage order. */
  options: Record<string, SenderOption>;
  /** Usage synopsis of the method's options, e.g. `--secret <signing secret>`. */
  synopsis: string;
  /** How the usage error names the method when no selector is given, e.g. `--secret (HMAC listener)`. */
  hint: string;
  /** Builds the signer from the method's option values; throws a `UsageError`-like Error for bad values. */
  signer(values: Record<string, string | undefined>, target: URL): Promise<Signer>;
}

export interface Authenticator<
  Fields extends Record<string, string> = Record<string, string>,
  Input extends string = string,
  Output extends string = string,
> {
  /** One sentence for the OpenAPI document: what the sender sends. */
  summary: string;
  credential: CredentialHeader<Input, Output>;
  /**
   * Reads the credential from its raw header value, after the 400 checks; a 401 `WebhookRejection`
   * when it is absent or malformed (for a `requiredHeader`, absence was already a 400).
   */
  readCredential(raw: string | undefined): string | undefined;
  /**
   * The method's own trigger fields (all strings; `''` stands for "not set", and is what other
   * methods' triggers show). Parsed with this schema when a trigger is saved.
   */
  fields: z.ZodType<Fields> & { shape: Record<string, z.ZodType> };
  /** Further save-time checks of parsed fields (policy that depends on configuration): violations by field name. */
  checkFields?(fields: Fields, config: AuthenticatorConfig): Array<{ field: string; description: string }>;
  /**
   * The signing secret, when the method has one: issued when a trigger gets this method and on
   * rotation, shown once, kept sealed. Absent: the method has no secret (a stored one is dropped).
   */
  secret?: { generate(): string; description: string };
  /** One verifier per process (it may keep caches, e.g. JWKS per listener). */
  createVerifier(config: AuthenticatorConfig): Verify<Fields>;
  sender: Sender;
}
