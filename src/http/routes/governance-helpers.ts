/** What the governance routers (apps, users, entitlements, owners) share. */
import type { Context, Middleware } from 'koa';
import type { Mode } from '../../auth/roles';
import type { Page, PageRequest } from '../../domain/pagination';
import { readPageRequest } from '../../domain/pagination';
import type { AppDeps } from '../context';
import { authenticate, requireAccess } from '../auth';

/** Bearer authentication, then governance read or write access. */
export function governanceAccess(deps: AppDeps, mode: Mode): Middleware[] {
  return [authenticate(deps.tokens), requireAccess('governance', mode)];
}

/** A path parameter (always present on a matched route). */
export function param(ctx: Context, name: string): string {
  return (ctx.params as Record<string, string | undefined>)[name] ?? '';
}

/** `page_size`/`pageSize`, `page_token`/`pageToken` of a GET listing. */
export function queryPage(ctx: Context): PageRequest {
  return readPageRequest(ctx.query as Record<string, unknown>);
}

/** `{ list: [{ <key>: item }], nextPageToken }`. */
export function listBody<K extends string, T>(key: K, page: Page<T>): { list: Array<Record<K, T>>; nextPageToken: string } {
  return {
    list: page.items.map((item) => ({ [key]: item }) as Record<K, T>),
    nextPageToken: page.nextPageToken,
  };
}
