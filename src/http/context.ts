/** What every router gets: built once at start-up, passed to `createApp`. */
import type { Config } from '../config';
import type { Db } from '../store/db';
import type { Logger } from '../logger';
import type { PageTokens } from '../domain/pagination';
import type { AccessTokens } from '../auth/tokens';
import type { AutomationRuns } from '../domain/runs';
import type { Metrics } from './metrics';
import type { SecretBox } from '../crypto/secret-box';
import type { TokenGuard } from '../auth/token-guard';
import type { PayloadCodec } from '@temporalio/common';
import type { DeliveryLog } from '../delivery/delivery-log';
import type { ConsoleSessions } from '../auth/sessions';
import type { OidcSignIn } from '../auth/oidc';

export interface AppDeps {
  config: Config;
  db: Db;
  logger: Logger;
  pageTokens: PageTokens;
  tokens: AccessTokens;
  /** Starts and reads automation runs on Temporal. */
  runs: AutomationRuns;
  metrics: Metrics;
  /** Seals and opens secrets kept at rest (HMAC signing secrets). */
  secretBox: SecretBox;
  /** Flood guards of /auth/v1/token; unset = made from `config.tokenEndpoint`. */
  tokenGuard?: TokenGuard;
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
