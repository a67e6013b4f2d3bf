/**
 * The console's files (built from console/ into dist/console by `npm run build:console`, or by
 * `npm start` when console/ changed): `GET /console` and every page path below it answer
 * index.html (`Cache-Control: no-cache`), `GET /console/assets/<hashed name>` the scripts and
 * styles (`immutable`). Sign-in (/console/auth) and the backend-for-frontend (/console/api) are
 * other routers'. Every /console response carries the console's Content-Security-Policy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { Config } from '../../config';
import type { AppDeps } from '../context';
import { AppError } from '../errors';

export const CONSOLE_PATH = '/console';

/**
 * Scripts from this origin only (no inline script, no eval); styles from this origin plus the
 * style attributes the dialog and editor components set; nothing may frame the console.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** Sets the console's headers on every answer under /console (pages, assets, sign-in, its API). */
export const consoleHeaders: Middleware = async (ctx, next) => {
  if (ctx.path === CONSOLE_PATH || ctx.path.startsWith(`${CONSOLE_PATH}/`)) ctx.set(CONSOLE_HEADERS);
  await next();
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
}

/** The directory holding package.json, above this file in src/ and in dist/src/ alike. */
function projectRoot(): string {
  let dir = __dirname;
  for (;;) {
    try {
      readFileSync(path.join(dir, 'package.json'));
      return dir;
    } catch {
      const parent = path.dirname(dir);
      if (parent === dir) return process.cwd();
      dir = parent;
    }
  }
}

export function defaultConsoleDir(): string {
  return path.join(projectRoot(), 'dist', 'console');
}

/** What the page needs to know about the server, written into index.html as a meta element. */
function consoleConfigOf(config: Config): Record<string, unknown> {
  return {
    oidc: config.console.oidc !== undefined,
    localSignin: config.console.localSignIn,
    temporalUiUrl: config.console.temporalUiUrl,
    namespace: config.temporal.namespace,
  };
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The built files, read once on first use (a few hundred KB): only names listed here are served. */
class ConsoleFiles {
  private loaded: { index: Asset; assets: Map<string, Asset> } | undefined;

  constructor(
    private readonly dir: string,
    private readonly config: Config,
  ) {}

  get(): { index: Asset; assets: Map<string, Asset> } {
    if (this.loaded) return this.loaded;
    let html: string;
    try {
      html = readFileSync(path.join(this.dir, 'index.html'), 'utf8');
    } catch {
      throw new AppError(
        503,
        'the console is not built: run `npm run build:console` (npm start builds it when console/ changed)',
      );
    }
    const meta = `<meta name="console-config" content="${escapeAttribute(JSON.stringify(consoleConfigOf(this.config)))}" />`;
    const index = asset(Buffer.from(html.replace('<!-- console-config -->', meta)), 'text/html; charset=utf-8');
    const assets = new Map<string, Asset>();
    const assetsDir = path.join(this.dir, 'assets');
    for (const name of readdirSync(assetsDir)) {
      const type = TYPES[path.extname(name)];
      if (type) assets.set(name, asset(readFileSync(path.join(assetsDir, name)), type));
    }
    this.loaded = { index, assets };
    return this.loaded;
  }
}

function asset(body: Buffer, type: string): Asset {
  const compressible = type.startsWith('text/') || type === 'image/svg+xml' || type === 'application/json';
  return { body, type, gzip: compressible && body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined };
}

function send(ctx: Context, file: Asset, cacheControl: string): void {
  ctx.set('Cache-Control', cacheControl);
  ctx.vary('Accept-Encoding');
  ctx.type = file.type;
  if (file.gzip && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = file.gzip;
  } else {
    ctx.body = file.body;
  }
}

export function createConsoleAssetsRouter(deps: AppDeps): Router {
  const files = new ConsoleFiles(deps.consoleDir ?? defaultConsoleDir(), deps.config);
  const router = new Router();
  router.get(`${CONSOLE_PATH}/assets/:name`, (ctx) => {
    const file = files.get().assets.get(ctx.params.name ?? '');
    if (!file) throw new AppError(404, 'not found');
    send(ctx, file, 'public, max-age=31536000, immutable');
  });
  // The page paths of the single-page app; /console/auth and /console/api belong to other routers.
  router.get(`${CONSOLE_PATH}{/*page}`, (ctx, next) => {
    const first = ctx.path.slice(CONSOLE_PATH.length).split('/')[1];
    if (first === 'auth' || first === 'api' || first === 'assets') return next();
    send(ctx, files.get().index, 'no-cache');
  });
  return router;
}
