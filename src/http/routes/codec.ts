/**
 * Temporal's Codec Server protocol, so the Web UI and the CLI can show encrypted payloads:
 * POST /codec/decode and POST /codec/encode, body and answer `{"payloads": [{metadata, data}]}`
 * (protobuf JSON: base64 bytes), the `X-Namespace` header naming the namespace.
 *
 * Decoding is access to the data, so the endpoint is not open. A caller is let in with
 *  - a bearer token of this service whose roles may read automation runs (admin or super_admin, who
 *    read a run's decoded inputs and step outputs through the executions API already), sent by
 *    the CLI or by a Web UI set to forward credentials; or
 *  - no token, from a loopback address, when CODEC_ALLOW_LOOPBACK holds (default with the
 *    embedded dev server only): the embedded Web UI runs in a browser on this machine.
 * CORS answers only the Web UI's origins (CODEC_CORS_ORIGINS); a request carrying any other
 * Origin is refused, so a web page on another origin (or a DNS-rebound name) cannot use the
 * loopback allowance.
 */
import type Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import type { z } from 'zod';
import type { Payload } from '@temporalio/common';
import type { AppDeps } from '../context';
import { AppError } from '../errors';
import { mountOperations, operation, exactRouter } from '../operation';
import * as api from '../../domain/api-schemas';
import { allows } from '../../auth/roles';
import { isAddressAllowed } from '../../net/cidr';
import { invalidArgument } from '../../errors';

const LOOPBACK = ['127.0.0.0/8', '::1/128'];
const isLoopbackAddress = (address: string): boolean => address !== '' && isAddressAllowed(address, LOOPBACK);

export const CODEC_PATH = '/codec';
/** Histories can hold large payloads; one request may carry many of them. */
const CODEC_BODY_LIMIT = 8 * 1024 * 1024;
function fromJson(payload: z.output<typeof api.CodecPayloads>['payloads'][number]): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(payload.data ?? '', 'base64'),
  };
}

function toJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64'),
  };
}

/** CORS for the Web UI's origins only; any other Origin is refused outright. */
function corsOf(deps: AppDeps): Middleware {
  const origins = new Set(deps.config.codec.corsOrigins);
  return async (ctx: Context, next: Next): Promise<void> => {
    const origin = ctx.get('origin');
    if (origin) {
      if (!origins.has(origin))
        throw new AppError(403, 'origin is not allowed to use the codec endpoint (CODEC_CORS_ORIGINS)');
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
    }
    ctx.vary('Origin');
    await next();
  };
}

/** A bearer token that may read runs, or a loopback caller where allowed; then the namespace and a configured codec. */
function authorizeOf(deps: AppDeps): Middleware {
  return async (ctx: Context, next: Next): Promise<void> => {
    const header = ctx.get('authorization');
    if (header) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const principal = match?.[1] ? await deps.tokens.verify(match[1]) : undefined;
      if (!principal)
        throw new AppError(401, 'invalid or expired access token', {
          headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
        });
      if (!allows(principal, 'automations', 'read'))
        throw new AppError(403, 'role does not allow reading automation runs');
    } else {
      const source = (deps.config.trustProxy ? ctx.ip : ctx.req.socket.remoteAddress) ?? '';
      if (!deps.config.codec.allowLoopback || !isLoopbackAddress(source)) {
        throw new AppError(401, 'the codec endpoint needs a bearer token', {
          headers: { 'WWW-Authenticate': 'Bearer' },
        });
      }
    }
    const namespace = ctx.get('x-namespace');
    if (namespace && namespace !== deps.config.temporal.namespace) {
      throw invalidArgument({
        field: 'X-Namespace',
        description: `this codec serves namespace "${deps.config.temporal.namespace}"`,
      });
    }
    if (!deps.payloadCodec) throw new AppError(503, 'no payload codec is configured');
    await next();
  };
}

export function createCodecRouter(deps: AppDeps): Router {
  const router = exactRouter();
  const cors = corsOf(deps);

  router.options(
    ['/decode', '/encode'].map((action) => CODEC_PATH + action),
    cors,
    async (ctx) => {
      ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
      ctx.set('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
    },
  );
  return mountOperations(router, deps, CODEC_OPERATIONS);
}

const codecOperation = (action: 'decode' | 'encode', summary: string) =>
  operation({
    method: 'post',
    path: `${CODEC_PATH}/${action}`,
    operationId: `codec.${action}`,
    tag: 'Temporal Codec',
    access: 'public',
    summary,
    headers: [{ name: 'X-Namespace', required: false, description: 'The Temporal namespace (must be the service’s).' }],
    // CORS, then a bearer token or a loopback caller (see above).
    before: (deps) => [corsOf(deps), authorizeOf(deps)],
    body: { schema: api.CodecPayloads, required: true, validation: 'schema', limit: CODEC_BODY_LIMIT },
    ok: api.CodecPayloads,
    errors: [400, 401, 403, 413, 500, 503],
    handle: async (input, _ctx, deps) => {
      const codec = deps.payloadCodec!;
      const payloads = (await input.body()).payloads.map(fromJson);
      let result: Payload[];
      try {
        result = action === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
      } catch (err) {
        throw new AppError(400, `payloads could not be ${action}d: ${(err as Error).message}`);
      }
      return { payloads: result.map(toJson) };
    },
  });

export const CODEC_OPERATIONS = [
  codecOperation(
    'decode',
    'Temporal Codec Server: decrypt payloads (for the Web UI and the CLI). An admin or super_admin token (the roles that read runs), or a loopback caller when CODEC_ALLOW_LOOPBACK.',
  ),
  codecOperation(
    'encode',
    'Temporal Codec Server: encrypt payloads with the newest key. Same access as /codec/decode.',
  ),
];
