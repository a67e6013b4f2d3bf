/**
 * Sender CLI: signs one webhook event exactly as the listener expects it and POSTs it.
 *
 *   npm run send -- --url <listener url> --secret <signing secret> --data '{"a":1}'
 *   npm run send -- --url <listener url> --jwt-key key.pem --kid k1 --alg ES256 --data @event.json
 *
 * Prints the HTTP status and the response body; exits 0 for a 2xx answer, 1 otherwise.
 * Signing reuses src/webhooks (signHmac, bodySha256), the code the receiver verifies with.
 */
import { createPrivateKey, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { parseArgs } from 'node:util';
import { importPKCS8, SignJWT, type KeyLike } from 'jose';
import { bodySha256, signHmac } from '../src/webhooks/hmac';

const ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
type Algorithm = (typeof ALGORITHMS)[number];

/** Lifetime of the JWT: the receiver accepts `exp` up to 600 s ahead. */
const JWT_LIFETIME_SECONDS = 300;
const REQUEST_TIMEOUT_MS = 30_000;

const USAGE = `Send one signed event to an inbound webhook listener.

Usage:
  npm run send -- --url <listener url> --data <json | @file> --secret <signing secret>
  npm run send -- --url <listener url> --data <json | @file> --jwt-key <key.pem> --kid <kid> --alg <RS256|ES256|EdDSA> [--base-url <url>]

Options:
  --url <url>          the listener URL shown on the automation (BASE_URL/api/v1/webhooks/incoming/<listener id>)
  --data <json>        the JSON body, sent byte for byte; @path reads it from a file
  --secret <secret>    HMAC listeners: the signing secret, used exactly as given (not base64-decoded);
                       sends Webhook-Signature = base64url(HMAC-SHA256("<timestamp>.<event id>.<body>"))
  --jwt-key <file>     JWT listeners: PEM private key (PKCS#8; PKCS#1 and SEC1 are accepted too)
  --kid <kid>          JWT header kid: the key's id in the JWKS the listener fetches
  --alg <alg>          JWT algorithm: RS256, ES256 or EdDSA
  --base-url <url>     JWT sub claim: the tenant base URL (default: the origin of --url)
  --event-id <uuid>    Webhook-Event-Id (and JWT jti); default: a fresh UUID v4
  -h, --help           this text

Exit status: 0 when the listener answers 2xx, 1 otherwise (including usage errors).`;

export interface SendOptions {
  url: string;
  body: Buffer;
  eventId: string;
  secret?: string;
  jwt?: { key: KeyLike; kid: string; alg: Algorithm; baseUrl: string };
}

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      url: { type: 'string' },
      data: { type: 'string' },
      secret: { type: 'string' },
      'jwt-key': { type: 'string' },
      kid: { type: 'string' },
      alg: { type: 'string' },
      'base-url': { type: 'string' },
      'event-id': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const url = required(values.url, '--url');
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new UsageError(`--url: ${JSON.stringify(url)} is not an absolute URL`);
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new UsageError('--url must be an http or https URL');
  const body = readData(required(values.data, '--data'));
  const eventId = values['event-id'] ?? randomUUID();
  const options: SendOptions = { url, body, eventId };

  if (values['jwt-key'] !== undefined) {
    if (values.secret !== undefined) throw new UsageError('give either --secret (HMAC) or --jwt-key (JWT), not both');
    const alg = required(values.alg, '--alg (with --jwt-key)');
    if (!(ALGORITHMS as readonly string[]).includes(alg)) throw new UsageError(`--alg must be one of ${ALGORITHMS.join(', ')}`);
    const kid = required(values.kid, '--kid (with --jwt-key)');
    const pem = readFile(values['jwt-key'], '--jwt-key');
    options.jwt = { key: await importKey(pem, alg as Algorithm), kid, alg: alg as Algorithm, baseUrl: values['base-url'] ?? target.origin };
  } else if (values.secret !== undefined) {
    for (const flag of ['kid', 'alg', 'base-url'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} is only for JWT (--jwt-key)`);
    }
    options.secret = values.secret;
  } else {
    throw new UsageError('give --secret (HMAC listener) or --jwt-key with --kid and --alg (JWT listener)');
  }

  const response = await send(options);
  process.stdout.write(`${response.status}${response.statusText ? ` ${response.statusText}` : ''}\n`);
  if (response.body !== '') process.stdout.write(`${response.body}\n`);
  return response.status >= 200 && response.status < 300 ? 0 : 1;
}

/** Builds the headers (HMAC signature or JWT) and POSTs the body with node:http(s); redirects are not followed. */
export async function send(options: SendOptions): Promise<{ status: number; statusText: string; body: string }> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Content-Length': String(options.body.length),
    'Webhook-Timestamp': timestamp,
    'Webhook-Event-Id': options.eventId,
  };
  if (options.secret !== undefined) headers['Webhook-Signature'] = signHmac(options.secret, timestamp, options.eventId, options.body);
  if (options.jwt) headers.Authorization = `Bearer ${await webhookJwt(options, Number(timestamp))}`;
  const target = new URL(options.url);
  const request = target.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'POST', headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The webhook JWT: sub = base URL, aud = listener URL, exp = now + 300, jti = event id, htm, htb_s256. */
async function webhookJwt(options: SendOptions, now: number): Promise<string> {
  const jwt = options.jwt!;
  return new SignJWT({ htm: 'POST', htb_s256: bodySha256(options.body) })
    .setProtectedHeader({ alg: jwt.alg, kid: jwt.kid, typ: 'JWT' })
    .setSubject(jwt.baseUrl)
    .setAudience(options.url)
    .setIssuedAt(now)
    .setExpirationTime(now + JWT_LIFETIME_SECONDS)
    .setJti(options.eventId)
    .sign(jwt.key);
}

/** PKCS#8 through jose; other PEM encodings (PKCS#1 RSA, SEC1 EC) through node:crypto. */
async function importKey(pem: Buffer, alg: Algorithm): Promise<KeyLike> {
  const text = pem.toString('utf8');
  try {
    return await importPKCS8(text, alg);
  } catch (err) {
    try {
      const key = createPrivateKey(text);
      if (key.type === 'private') return key;
    } catch {
      // fall through to the original error
    }
    throw new UsageError(`--jwt-key: not a PEM private key usable for ${alg} (${(err as Error).message})`);
  }
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new UsageError(`${name} is required (see --help)`);
  return value;
}

function readData(data: string): Buffer {
  return data.startsWith('@') ? readFile(data.slice(1), '--data') : Buffer.from(data, 'utf8');
}

function readFile(path: string, flag: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (err) {
    throw new UsageError(`${flag}: cannot read ${JSON.stringify(path)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const usage = err instanceof UsageError || (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS');
      const code = (err as { code?: unknown }).code;
      process.stderr.write(`send: ${(err as Error).message}${typeof code === 'string' && !usage ? ` (${code})` : ''}\n`);
      if (usage) process.stderr.write('run with --help for usage\n');
      process.exitCode = 1;
    },
  );
}
