/** What every router gets: built once at start-up (src/compose.ts), passed to `createApp`. */
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config';
import type { Db } from '../store/db';
import type { Logger } from '../logger';
import type { PageTokens } from '../domain/pagination';
import type { AutomationWriteRequests } from '../domain/api-schemas';
import type { AccessTokens } from '../auth/tokens';
import type { RunEngine } from '../domain/engine';
import type { Metrics } from './metrics';
import type { SecretBox } from '../crypto/secret-box';
import type { TokenGuard } from '../auth/token-guard';
import type { PayloadCodec } from '@temporalio/common';
import type { DeliveryLog } from '../delivery/delivery-log';
import type { ConsoleSessions } from '../auth/sessions';
import type { OidcSignIn } from '../auth/oidc';
import type { BulkLimits } from '../domain/bulk-actions';

/** What a delivery is answered with: status, headers beyond the standard ones, JSON body. */
export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Answers one delivery to `listenerId`; `path` names the request in logs. Every failure is an answer (a rejection would be a bug). */
export type WebhookEndpoint = (listenerId: string, req: IncomingMessage, path: string) => Promise<WebhookAnswer>;

export interface AppDeps {
  config: Config;
  db: Db;
  logger: Logger;
  pageTokens: PageTokens;
  tokens: AccessTokens;
  /** The run engine (Temporal): starts, reads and controls runs; a test's fake answers 503 where it has none. */
  engine: RunEngine;
  /** The bulk actions' limits (default BULK_LIMITS: 10,000 candidates with `where`, 100,000 runs); tests lower them. */
  bulkLimits?: BulkLimits;
  /** The webhook receiver: one per app, so that the fast path and the Koa route share its admission counts and listener cache. */
  webhookEndpoint: WebhookEndpoint;
  metrics: Metrics;
  /** The automation write bodies' schemas under this configuration (src/compose.ts builds them). */
  automationRequests: AutomationWriteRequests;
  /** Seals and opens secrets kept at rest (HMAC signing secrets). */
  secretBox: SecretBox;
  /** Flood guards of /auth/v1/token (src/compose.ts makes them from `config.tokenEndpoint`). */
  tokenGuard: TokenGuard;
  /** Bound of each /ready check in ms (default 2000); tests on a loaded machine raise it. */
  readinessTimeoutMs?: number;
  /** The webhook receiver's clock in epoch ms (default Date.now); tests pin it for boundary cases. */
  clock?: () => number;
  /** The Temporal payload codec served at /codec (absent: the codec endpoint answers 503). */
  payloadCodec?: PayloadCodec;
  /** The webhook delivery log (buffered writes); absent: deliveries are not logged. */
  deliveryLog?: DeliveryLog;
  /** The built console served at /console (default: dist/console of the project). */
  consoleDir?: string;
  /** Console sessions; unset = made from `config.console` (tests give one with their own clock). */
  sessions?: ConsoleSessions;
  /** OIDC sign-in; unset = made from `config.console.oidc` when set. */
  oidc?: OidcSignIn;
}
