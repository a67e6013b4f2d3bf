/**
 * The console's files (built from console/ into dist/console by `npm run build:console`, or by
 * `npm start` when console/ changed): `GET /console` and every page path below it answer
 * index.html (`Cache-Control: no-cache`; `consolePages`, after every router),
 * `GET /console/assets/<hashed name>` the scripts and styles (`immutable`). Sign-in (/console/auth)
 * and the backend-for-frontend (/console/api) are other routers'. Every /console response carries
 * the console's Content-Security-Policy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { Config } from '../../config';
import type { AppDeps } from '../context';
import { AppError } from '../errors';
import { exactRouter } from '../operation';

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

/**
 * Sets the console's headers on every answer under /console (pages, assets, sign-in, its API).
 * Only the exact spelling `/console` reaches a console handler (every router matches letter case,
 * src/http/operation.ts `exactRouter`); the prefix is compared without regard to case all the
 * same, so that no answer to a path a browser may take for the console's goes out without them.
 */
export const consoleHeaders: Middleware = async (ctx, next) => {
  const prefix = ctx.path.slice(0, CONSOLE_PATH.length + 1).toLowerCase();
  if (prefix === CONSOLE_PATH || prefix === `${CONSOLE_PATH}/`) ctx.set(CONSOLE_HEADERS);
  await next();
};

/** The first segments below /console that are not page paths of the app: other routers' (or no one's). */
const NOT_PAGES = new Set(['auth', 'api', 'assets']);

/**
 * True for a page path of the single-page app below `/console/`: its first segment is none of
 * `auth`, `api`, `assets` in any spelling (letter case, percent-encoding), so that another spelling
 * of `/console/api/...` is a 404 rather than the app's page, and it has no empty segment (`//`).
 */
function isPagePath(rest: string): boolean {
  const segments = rest.split('/');
  if (segments.slice(0, -1).includes('')) return false;
  let first = segments[0]!;
  try {
    first = decodeURIComponent(first);
  } catch {
    return false;
  }
  return !NOT_PAGES.has(first.toLowerCase());
}

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
    ...(config.tracing.uiUrl ? { traceUiUrl: config.tracing.uiUrl } : {}),
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

const consoleFiles = new WeakMap<AppDeps, ConsoleFiles>();

function filesOf(deps: AppDeps): ConsoleFiles {
  let files = consoleFiles.get(deps);
  if (!files) {
    files = new ConsoleFiles(deps.consoleDir ?? defaultConsoleDir(), deps.config);
    consoleFiles.set(deps, files);
  }
  return files;
}

/** `GET /console/assets/<hashed name>`; exact matching, as every router but the webhook receiver's. */
export function createConsoleAssetsRouter(deps: AppDeps): Router {
  const files = filesOf(deps);
  const router = exactRouter();
  router.get(`${CONSOLE_PATH}/assets/:name`, (ctx) => {
    const file = files.get().assets.get(ctx.params.name ?? '');
    if (!file) throw new AppError(404, 'not found');
    send(ctx, file, 'public, max-age=31536000, immutable');
  });
  return router;
}

/** The label of the console's pages in the HTTP metrics (they are no route of a router). */
export const CONSOLE_PAGES_ROUTE = `${CONSOLE_PATH}/{*page}`;

/**
 * The pages of the single-page app, after every router (src/http/app.ts): a `GET` of `/console`,
 * `/console/` (where the app's own links to its start page point) or a page path below it that no
 * router answered is index.html. Only this spelling of `/console` (letter case counts) and only
 * page paths (`isPagePath`): `/CONSOLE`, `/console/API/v1/apps` or `POST /console/runs` are no
 * route (404), as a path no router serves, never a page and never a 405.
 */
export function consolePages(deps: AppDeps): Middleware {
  const files = filesOf(deps);
  return async (ctx, next) => {
    const page =
      (ctx.method === 'GET' || ctx.method === 'HEAD') &&
      (ctx.path === CONSOLE_PATH ||
        (ctx.path.startsWith(`${CONSOLE_PATH}/`) && isPagePath(ctx.path.slice(CONSOLE_PATH.length + 1))));
    if (!page) return next();
    (ctx as { _matchedRoute?: string })._matchedRoute = CONSOLE_PAGES_ROUTE;
    let index: Asset;
    try {
      index = files.get().index;
    } catch (err) {
      // A browser (which asks for HTML) gets a page that says so and reloads itself until the
      // build `npm start` runs is in place; any other client the JSON error.
      if (!(err instanceof AppError) || !ctx.get('Accept').includes('text/html')) throw err;
      ctx.status = 503;
      ctx.set('Retry-After', String(BUILDING_RELOAD_SECONDS));
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = BUILDING_PAGE;
      return;
    }
    send(ctx, index, 'no-cache');
  };
}

const BUILDING_RELOAD_SECONDS = 2;

/** The page a browser gets while the console is not built yet: no script (the CSP allows none inline). */
const BUILDING_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<meta http-equiv="refresh" content="${BUILDING_RELOAD_SECONDS}" />
<title>The console is being built · Automation console</title>
</head>
<body>
<main>
<h1>The console is being built</h1>
<p role="status">This page reloads itself every ${BUILDING_RELOAD_SECONDS} seconds until the console is ready. If it stays here, build it with <code>npm run build:console</code> (<code>npm start</code> builds it when console/ changed).</p>
</main>
</body>
</html>
`;
