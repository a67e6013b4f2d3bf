/**
 * Sender CLI: signs one webhook event exactly as the listener expects it and POSTs it.
 *
 *   npm run send -- --url <listener url> --secret <signing secret> --data '{"a":1}'
 *   npm run send -- --url <listener url> --jwt-key key.pem --kid k1 --alg ES256 --data @event.json
 *
 * Prints the HTTP status and the response body; exits 0 for a 2xx answer, 1 otherwise.
 * Each authentication method's options and signing come from its authenticator
 * (src/webhooks/authenticators), the code the receiver verifies with.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AUTH_METHODS, authenticatorOf, type AuthMethod, type Signer } from '../src/webhooks/authenticators';
import { SenderUsageError } from '../src/errors';

const REQUEST_TIMEOUT_MS = 30_000;

const COMMON_OPTIONS: Record<string, { value: string; description: string }> = {
  url: {
    value: '<url>',
    description: 'the listener URL shown on the automation (BASE_URL/api/v1/webhooks/incoming/<listener id>)',
  },
  data: { value: '<json>', description: 'the JSON body, sent byte for byte; @path reads it from a file' },
};
const TRAILING_OPTIONS: Record<string, { value: string; description: string }> = {
  'event-id': { value: '<uuid>', description: 'Webhook-Event-Id (and JWT jti); default: a fresh UUID v4' },
};

function optionLines(options: Record<string, { value: string; description: string }>): string[] {
  return Object.entries(options).map(
    ([name, option]) =>
      `  ${`--${name} ${option.value}`.padEnd(21)}${option.description.split('\n').join(`\n${' '.repeat(23)}`)}`,
  );
}

const USAGE = [
  'Send one signed event to an inbound webhook listener.',
  '',
  'Usage:',
  ...AUTH_METHODS.map(
    (method) =>
      `  npm run send -- --url <listener url> --data <json | @file> ${authenticatorOf(method).sender.synopsis}`,
  ),
  '',
  'Options:',
  ...optionLines(COMMON_OPTIONS),
  ...AUTH_METHODS.flatMap((method) => optionLines(authenticatorOf(method).sender.options)),
  ...optionLines(TRAILING_OPTIONS),
  `  ${'-h, --help'.padEnd(21)}this text`,
  '',
  'Exit status: 0 when the listener answers 2xx, 1 otherwise (including usage errors).',
].join('\n');

export interface SendOptions {
  url: string;
  body: Buffer;
  eventId: string;
  /** Adds the authentication headers of the listener's method. */
  sign: Signer;
}

class UsageError extends SenderUsageError {}

/** The method's own option values, and the options that belong to other methods. */
function methodValues(method: AuthMethod, values: Record<string, unknown>): Record<string, string | undefined> {
  const names = Object.keys(authenticatorOf(method).sender.options);
  return Object.fromEntries(names.map((name) => [name, values[name] as string | undefined]));
}

async function main(argv: string[]): Promise<number> {
  const methodOptions = Object.fromEntries(
    AUTH_METHODS.flatMap((method) =>
      Object.keys(authenticatorOf(method).sender.options).map((name) => [name, { type: 'string' as const }]),
    ),
  );
  const options: ParseArgsConfig['options'] = {
    url: { type: 'string' },
    data: { type: 'string' },
    ...methodOptions,
    'event-id': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  };
  const { values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const url = required(values.url as string | undefined, '--url');
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new UsageError(`--url: ${JSON.stringify(url)} is not an absolute URL`);
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:')
    throw new UsageError('--url must be an http or https URL');
  const body = readData(required(values.data as string | undefined, '--data'));
  const eventId = (values['event-id'] as string | undefined) ?? randomUUID();

  const chosen = AUTH_METHODS.filter((method) => values[authenticatorOf(method).sender.selector] !== undefined);
  if (chosen.length > 1) {
    throw new UsageError(
      `give either ${chosen.map((method) => `--${authenticatorOf(method).sender.selector} (${method})`).join(' or ')}, not both`,
    );
  }
  const method = chosen[0];
  if (method === undefined) {
    throw new UsageError(`give ${AUTH_METHODS.map((m) => authenticatorOf(m).sender.hint).join(' or ')}`);
  }
  for (const other of AUTH_METHODS.filter((m) => m !== method)) {
    for (const [name, value] of Object.entries(methodValues(other, values))) {
      if (value !== undefined)
        throw new UsageError(`--${name} is only for ${other} (--${authenticatorOf(other).sender.selector})`);
    }
  }
  const sign = await authenticatorOf(method).sender.signer(methodValues(method, values), target);

  const response = await send({ url, body, eventId, sign });
  process.stdout.write(`${response.status}${response.statusText ? ` ${response.statusText}` : ''}\n`);
  if (response.body !== '') process.stdout.write(`${response.body}\n`);
  return response.status >= 200 && response.status < 300 ? 0 : 1;
}

/** Builds the headers (the method's signature or token) and POSTs the body with node:http(s); redirects are not followed. */
export async function send(options: SendOptions): Promise<{ status: number; statusText: string; body: string }> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Content-Length': String(options.body.length),
    'Webhook-Timestamp': timestamp,
    'Webhook-Event-Id': options.eventId,
    ...(await options.sign({ url: options.url, body: options.body, eventId: options.eventId, timestamp })),
  };
  const target = new URL(options.url);
  const request = target.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'POST', headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
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
    throw new UsageError(
      `${flag}: cannot read ${JSON.stringify(path)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const usage =
        err instanceof SenderUsageError || (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS');
      const code = (err as { code?: unknown }).code;
      process.stderr.write(
        `send: ${(err as Error).message}${typeof code === 'string' && !usage ? ` (${code})` : ''}\n`,
      );
      if (usage) process.stderr.write('run with --help for usage\n');
      process.exitCode = 1;
    },
  );
}
