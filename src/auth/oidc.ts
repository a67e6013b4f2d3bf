/**
 * Sign-in for people through the organisation's OpenID provider: the authorization-code flow with
 * PKCE (S256), `state` and `nonce`, by `openid-client` (a certified relying party), from the
 * issuer's discovery document. A sign-in under way is kept in the store (hashed state → nonce, PKCE
 * verifier, the browser it started in) and used once; the callback checks the ID token
 * (signature, issuer, audience, nonce, expiry) and maps the person's groups to roles through
 * OIDC_ROLE_MAP. The actor is `person:<issuer>#<subject>`.
 */
import { createHash } from 'node:crypto';
import type { Configuration } from 'openid-client';
import type { OidcConfig } from '../config';
import type { Queryable } from '../store/db';
import { insertPendingLogin, purgeExpiredLogins, takePendingLogin } from '../store/console-sessions';
import { randomToken } from '../ids';
import { ConfigError } from '../errors';
import { isRole, type Role } from './roles';

/** How long a sign-in may take at the provider. */
const LOGIN_TTL_MS = 10 * 60_000;

/**
 * At most this many sign-ins under way are kept (across the API processes); beyond it the ones
 * started longest ago are dropped. With the per-source limit on starts (src/http/routes/console.ts)
 * and the expiry, the table stays small whatever arrives.
 */
export const MAX_PENDING_LOGINS = 10_000;

export interface OidcPerson {
  actor: string;
  id: string;
  name: string;
  email: string;
  roles: Role[];
  /** The groups the provider named (for the refusal page of a person with no mapped role). */
  groups: string[];
}

/** Why a callback is refused: shown on the page the person lands on (never a token). */
export class OidcSignInError extends Error {
  override name = 'OidcSignInError';
  constructor(
    message: string,
    /** 403: the person is known but gets no role; 400: the sign-in itself failed. */
    readonly status: 400 | 403,
    /** The person refused for want of a role (for the audit trail). */
    readonly person?: { actor: string; name: string; email: string; groups: string[] },
  ) {
    super(message);
  }
}

export interface OidcOptions {
  /** `$BASE_URL/console/auth/callback`. */
  redirectUri: string;
  allowInsecure: boolean;
  /** Seconds the local clock is taken to be off (tests move it to see an expired ID token). */
  clockSkewSeconds?: number;
  /** The sign-ins under way kept at most (default MAX_PENDING_LOGINS). */
  maxPendingLogins?: number;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/** OIDC_ROLE_MAP checked: every value a role (a typo is a start-up error, not a silent no-role). */
export function roleMapOf(config: OidcConfig): Record<string, Role> {
  const map: Record<string, Role> = {};
  for (const [group, role] of Object.entries(config.roleMap)) {
    if (!isRole(role))
      throw new ConfigError(`OIDC_ROLE_MAP: the role of "${group}" must be one of super_admin, admin, read_only`);
    map[group] = role;
  }
  return map;
}

/** The groups in a claim: an array of strings, or one string (a single group, commas and all). */
function groupsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((group): group is string => typeof group === 'string') : [];
}

/** ` (ID token claim "<name>")` when the refusal names a claim somewhere in its causes, else ''. */
function claimOf(err: unknown): string {
  for (
    let cause: unknown = err, depth = 0;
    cause && typeof cause === 'object' && depth < 4;
    cause = (cause as { cause?: unknown }).cause, depth++
  ) {
    const claim = (cause as { claim?: unknown }).claim ?? (cause as { cause?: { claim?: unknown } }).cause?.claim;
    if (typeof claim === 'string') return ` (ID token claim "${claim}")`;
    // A claim the ID token lacks is named in the message only (oauth4webapi: `JWT "nonce" (nonce) claim missing`).
    const missing = /^JWT "([\w-]+)" \([^)]*\) claim missing$/.exec(String((cause as { message?: unknown }).message));
    if (missing) return ` (ID token claim "${missing[1]}" missing)`;
  }
  return '';
}

export class OidcSignIn {
  private configuration: Promise<Configuration> | undefined;
  private readonly roleMap: Record<string, Role>;

  constructor(
    private readonly db: Queryable,
    private readonly config: OidcConfig,
    private readonly options: OidcOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.roleMap = roleMapOf(config);
  }

  /** The provider's configuration from its discovery document (fetched once; again after a failure). */
  private async discover(): Promise<Configuration> {
    this.configuration ??= (async () => {
      const client = await import('openid-client');
      const metadata = this.options.clockSkewSeconds ? { [client.clockSkew]: this.options.clockSkewSeconds } : {};
      return client.discovery(
        new URL(this.config.issuer),
        this.config.clientId,
        metadata,
        client.ClientSecretBasic(this.config.clientSecret),
        this.options.allowInsecure ? { execute: [client.allowInsecureRequests] } : undefined,
      );
    })();
    try {
      return await this.configuration;
    } catch (err) {
      this.configuration = undefined;
      throw err;
    }
  }

  /**
   * Starts a sign-in: answers the provider's authorization URL and the browser binding (a random
   * value for a short-lived cookie: the callback must come back to the browser that started it).
   */
  async start(returnTo = '/console'): Promise<{ url: string; browser: string }> {
    const client = await import('openid-client');
    const configuration = await this.discover();
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const browser = randomToken(32);
    const now = this.now();
    await purgeExpiredLogins(this.db, new Date(now));
    await insertPendingLogin(
      this.db,
      sha256(state),
      { browserHash: sha256(browser), nonce, codeVerifier, returnTo },
      new Date(now + LOGIN_TTL_MS),
      this.options.maxPendingLogins ?? MAX_PENDING_LOGINS,
    );
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.options.redirectUri,
      scope: `openid profile email${this.config.rolesClaim === 'groups' ? ' groups' : ''}`,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, browser };
  }

  /**
   * Completes a sign-in from the callback's URL (`callbackUrl`: the redirect URI with the
   * provider's query) in the browser holding `browser`. Throws OidcSignInError saying why not.
   * The browser binding is checked before the state is used: a callback without the cookie of the
   * browser that started the sign-in (or with another) leaves it under way, so it cannot burn the
   * person's own sign-in.
   */
  async complete(callbackUrl: URL, browser: string | undefined): Promise<OidcPerson & { returnTo: string }> {
    const client = await import('openid-client');
    const state = callbackUrl.searchParams.get('state');
    if (!state) throw new OidcSignInError('the sign-in answer carries no state: start again from the console', 400);
    const elsewhere = new OidcSignInError(
      'this sign-in was started in another browser: start again from the console',
      400,
    );
    if (!browser) throw elsewhere;
    const pending = await takePendingLogin(this.db, sha256(state), sha256(browser), new Date(this.now()));
    if (pending === 'other browser') throw elsewhere;
    if (!pending)
      throw new OidcSignInError('this sign-in is unknown, already used or expired: start again from the console', 400);
    const providerError = callbackUrl.searchParams.get('error');
    if (providerError)
      throw new OidcSignInError(`the identity provider refused the sign-in (${providerError.slice(0, 100)})`, 400);
    const configuration = await this.discover();
    let claims: Record<string, unknown>;
    let accessToken: string;
    try {
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: pending.codeVerifier,
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      claims = (tokens.claims() ?? {}) as Record<string, unknown>;
      accessToken = tokens.access_token;
    } catch (err) {
      const which = claimOf(err);
      throw new OidcSignInError(
        `the identity provider's answer was not accepted: ${(err as Error).message}${which}`,
        400,
      );
    }
    const subject = String(claims.sub ?? '');
    let raw = claims[this.config.rolesClaim];
    if (raw === undefined) {
      // Some providers put groups in the userinfo answer only.
      try {
        raw = (await client.fetchUserInfo(configuration, accessToken, subject))[this.config.rolesClaim];
      } catch {
        raw = undefined;
      }
    }
    const groups = groupsOf(raw);
    const roles = [
      ...new Set(groups.map((group) => this.roleMap[group]).filter((role): role is Role => role !== undefined)),
    ];
    const actor = `person:${String(claims.iss)}#${subject}`;
    const email = typeof claims.email === 'string' ? claims.email : '';
    const name = [claims.name, claims.preferred_username, email, subject].find(
      (value): value is string => typeof value === 'string' && value !== '',
    )!;
    if (roles.length === 0) {
      throw new OidcSignInError(
        `${name} is signed in at the identity provider, but none of their groups (claim "${this.config.rolesClaim}") is given a role in OIDC_ROLE_MAP: ask an administrator to map one of them`,
        403,
        { actor, name, email, groups },
      );
    }
    return { actor, id: actor, name, email, roles, groups, returnTo: pending.returnTo };
  }
}
