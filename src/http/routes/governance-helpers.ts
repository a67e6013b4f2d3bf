/** What the governance routers (apps, users, entitlements, owners, secrets) share. */
import type { Page } from '../../domain/pagination';
import type { Grant } from '../operation';

/** Governance reads: read_only, admin, super_admin. */
export const GOVERNANCE_READ: Grant = { area: 'governance', mode: 'read' };
/** Governance writes: admin, super_admin. */
export const GOVERNANCE_WRITE: Grant = { area: 'governance', mode: 'write' };

/** `{ list: [{ <key>: item }], nextPageToken }`. */
export function listBody<K extends string, T>(
  key: K,
  page: Page<T>,
): { list: Array<Record<K, T>>; nextPageToken: string } {
  return {
    list: page.items.map((item) => ({ [key]: item }) as Record<K, T>),
    nextPageToken: page.nextPageToken,
  };
}
