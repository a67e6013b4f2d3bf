/** Apps: create, get, list. */
import { newId } from '../ids';
import * as store from '../store/apps';
import type { Db, Queryable } from '../store/db';
import type { Page, PageRequest, PageTokens } from './pagination';
import { isString, pageOf } from './listing';
import { CreateAppRequest, type App } from './schemas';
import { parseOrThrow } from './validation';
import { notFound } from '../errors';

function toApp(row: store.AppRow): App {
  return {
    id: row.id,
    displayName: row.displayName,
    description: row.description,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** Creates an app from a request body; 400 naming the field when it is invalid. */
export async function createApp(db: Db, body: unknown): Promise<App> {
  const input = parseOrThrow(CreateAppRequest, body);
  return toApp(
    await store.insertApp(db, { id: newId(), displayName: input.displayName, description: input.description ?? '' }),
  );
}

/** The app, or 404. */
export async function getApp(db: Queryable, id: string): Promise<App> {
  const row = await store.findApp(db, id);
  if (!row) throw notFound('app', id);
  return toApp(row);
}

export function listApps(db: Db, tokens: PageTokens, page: PageRequest): Promise<Page<App>> {
  return pageOf(tokens, page, {
    name: 'apps',
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => store.listApps(db, after, limit),
    keyOf: (row) => row.id,
    toItem: toApp,
  });
}
