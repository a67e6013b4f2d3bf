/**
 * Every response a test service sends is checked against the service's own OpenAPI document
 * (`GET /api/openapi.json`): startTestService installs `installContractCheck` on its server, ahead
 * of the app, so every HTTP call of a test (supertest, fetch, raw sockets; Koa routes and the
 * webhook fast path alike) is seen. A response that the document does not declare (its status, its
 * content type, or a body its JSON schema refuses) is recorded as a drift, and
 * test/setup/contract.ts fails the test that received it.
 *
 * Requests no documented operation matches (unknown paths, OPTIONS, 405) are checked only for the
 * one error shape, when they are errors with a JSON body; HEAD answers carry no body to check.
 */
import type http from 'node:http';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { OPENAPI_PATH } from '../../src/http/openapi';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
export type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

const SCHEMAS_ID = 'https://openapi.test/components.json';
const METHODS: readonly string[] = ['get', 'post', 'put', 'delete', 'patch'];
const WEBHOOK_RECEIVER = '/api/v1/webhooks/incoming/';

/**
 * The path template of `doc` that `method path` names, or undefined (query ignored). Matched as the
 * routers match: exactly (letter case, no trailing slash, a literal segment as sent: `%61udit` is
 * not `audit`; a parameter in any encoding), except the webhook receiver, which keeps Koa's lenient
 * matching (any case, optional trailing slash) for the spellings senders use. A `/console/api/...`
 * path is matched as the `/api/...` operation it serves for the console.
 */
export function templateOf(doc: Json, method: string, path: string): string | undefined {
  // The console's API serves every /api operation under /console/api with the same shapes.
  const clean = path.split('?')[0]!.replace(/^\/console(?=\/api\/)/, '');
  const matches = Object.keys(doc.paths).filter((template) => {
    if (!doc.paths[template][method]) return false;
    const lenient = template.startsWith(WEBHOOK_RECEIVER);
    const body = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
    const pattern = lenient ? new RegExp(`^${body}/?$`, 'i') : new RegExp(`^${body}$`);
    return pattern.test(clean);
  });
  // The most specific template: the one with the fewest parameters.
  matches.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return matches[0];
}

/** Validators of one document's schemas (ajv, JSON Schema 2020-12, strict), compiled once per schema. */
export class ContractChecker {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    this.ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
    addFormats(this.ajv);
    this.ajv.addFormat('int64', { type: 'string', validate: (value: string) => /^-?[0-9]{1,19}$/.test(value) });
    const defs = JSON.parse(
      JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', `"${SCHEMAS_ID}#/$defs/`),
    );
    this.ajv.addSchema({ $id: SCHEMAS_ID, $defs: defs });
  }

  /** A validating function for `schema` (a component reference or an inline schema). */
  validatorFor(schema: unknown): ValidateFunction {
    const text = JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${SCHEMAS_ID}#/$defs/`);
    let validate = this.validators.get(text);
    if (!validate) {
      validate = this.ajv.compile(JSON.parse(text) as object);
      this.validators.set(text, validate);
    }
    return validate;
  }

  /** True when `name` is a component ajv compiles. */
  compiles(name: string): boolean {
    return typeof this.ajv.getSchema(`${SCHEMAS_ID}#/$defs/${name}`) === 'function';
  }

  /**
   * What is wrong with this response for the document, or undefined when it conforms.
   * `body` is the parsed JSON body (undefined when the body is not JSON).
   */
  drift(method: string, path: string, res: { status: number; contentType: string; body: unknown }): string | undefined {
    const m = method.toLowerCase();
    const template = METHODS.includes(m) ? templateOf(this.doc, m, path) : undefined;
    // A HEAD answer (Koa answers HEAD for every GET route) and a 204/304 carry no body to check.
    if (m === 'head' || res.status === 204 || res.status === 304) return undefined;
    const isJson = /^application\/json/i.test(res.contentType);
    if (template === undefined) {
      if (res.status < 400 || !isJson) return undefined;
      return this.bodyDrift(
        `${method.toUpperCase()} ${path} (no documented operation)`,
        { $ref: '#/components/schemas/Error' },
        res,
      );
    }
    const where = `${m.toUpperCase()} ${template} ${res.status}`;
    const response = this.doc.paths[template][m].responses[String(res.status)];
    if (!response)
      return `${where}: status ${res.status} is not documented (body ${JSON.stringify(res.body)?.slice(0, 500)})`;
    const content = (response.content ?? {}) as Json;
    const types = Object.keys(content);
    if (types.length === 0) return undefined;
    const type = types.find((t) => res.contentType.toLowerCase().startsWith(t.toLowerCase()));
    if (!type) return `${where}: content type ${JSON.stringify(res.contentType)} is not one of ${types.join(', ')}`;
    if (type !== 'application/json') return undefined;
    return this.bodyDrift(where, content[type].schema, res);
  }

  private bodyDrift(where: string, schema: unknown, res: { body: unknown }): string | undefined {
    if (res.body === undefined) return `${where}: the body is not JSON`;
    const validate = this.validatorFor(schema);
    if (validate(res.body)) return undefined;
    return `${where} does not match the document: ${JSON.stringify(validate.errors?.slice(0, 5))}\nbody: ${JSON.stringify(res.body).slice(0, 2000)}`;
  }
}

const drifts: string[] = [];
const checkers = new Map<string, ContractChecker>();

/** The drifts recorded since the last call (and forgets them). */
export function takeDrifts(): string[] {
  return drifts.splice(0);
}

/** Fetches the document from `port` once per distinct document (per test file). */
async function checkerAt(port: number): Promise<ContractChecker> {
  const res = await fetch(`http://127.0.0.1:${port}${OPENAPI_PATH}`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${OPENAPI_PATH}: ${res.status} ${text.slice(0, 500)}`);
  const doc = JSON.parse(text) as Json;
  // servers[0].url names the test service; the rest is the same for every service of a file.
  const key = JSON.stringify({ paths: doc.paths, components: doc.components });
  let checker = checkers.get(key);
  if (!checker) {
    checker = new ContractChecker(doc);
    checkers.set(key, checker);
  }
  return checker;
}

type Chunk = string | Buffer | Uint8Array;

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (typeof chunk === 'string')
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return Buffer.from(chunk as Uint8Array);
}

/**
 * Loads the document `server` serves on `port`, then checks every response it sends against it
 * (a request listener ahead of the app's own).
 */
export async function installContractCheck(server: http.Server, port: number): Promise<void> {
  const checker = await checkerAt(port);
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    // Headers given to writeHead (the webhook fast path) are not visible through getHeader.
    let headContentType: string | undefined;
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => http.ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      const headers = args.find((arg, i) => i > 0 && arg !== null && typeof arg === 'object');
      if (headers && !Array.isArray(headers)) {
        for (const [name, value] of Object.entries(headers))
          if (name.toLowerCase() === 'content-type') headContentType = String(value);
      }
      return writeHead(...args);
    }) as typeof res.writeHead;
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
    res.write = ((chunk: Chunk, ...rest: unknown[]) => {
      const buffer = toBuffer(chunk, rest[0]);
      if (buffer) chunks.push(buffer);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((...args: unknown[]) => {
      const buffer = toBuffer(args[0], args[1]);
      if (buffer) chunks.push(buffer);
      if (req.method && req.url) {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          body = undefined;
        }
        const contentType = String(res.getHeader('content-type') ?? headContentType ?? '');
        const drift = checker.drift(req.method, req.url, { status: res.statusCode, contentType, body });
        if (drift) drifts.push(drift);
      }
      return end(...args);
    }) as typeof res.end;
  });
}
