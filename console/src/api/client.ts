/**
 * The console's API client: openapi-fetch over the types generated from the service's OpenAPI
 * document (schema.d.ts, `npm run console:types`), calling the backend-for-frontend
 * `/console/api/...` with the session cookie. Unsafe requests carry the session's CSRF token.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD') request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: `${window.location.origin}/console`, credentials: 'same-origin' });
api.use(csrf);

export interface FieldViolation {
  field: string;
  description: string;
}

/** An answer in the API's one error shape `{code, message, details}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: unknown[] = [],
  ) {
    super(message);
  }

  get fieldViolations(): FieldViolation[] {
    return this.details.flatMap((detail) => {
      const violations = (detail as { fieldViolations?: FieldViolation[] }).fieldViolations;
      return Array.isArray(violations) ? violations : [];
    });
  }
}

function toError(status: number, error: unknown): ApiError {
  const body = error as { message?: unknown; details?: unknown } | undefined;
  const message = typeof body?.message === 'string' ? body.message : `request failed (HTTP ${status})`;
  return new ApiError(status, message, Array.isArray(body?.details) ? body.details : []);
}

/** The data of an openapi-fetch answer, or throws its ApiError. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || data === undefined) throw toError(response.status, error);
  return data;
}

/** Like unwrap, with the answer's ETag. */
export async function unwrapWithEtag<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<{ data: T; etag: string | null }> {
  const { data, error, response } = await call;
  if (!response.ok || data === undefined) throw toError(response.status, error);
  return { data, etag: response.headers.get('ETag') };
}

/** JSON from a console route outside the OpenAPI document (`/console/auth/...`). */
export async function consoleFetch<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  if (init.body !== undefined) headers.set('Content-Type', 'application/json');
  if (init.method && init.method !== 'GET') headers.set('X-CSRF-Token', csrfToken);
  const response = await fetch(`/console${path}`, { ...init, headers, credentials: 'same-origin' });
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) throw toError(response.status, body);
  if (text !== '' && body === undefined)
    throw new ApiError(response.status, `unexpected answer from ${path} (not JSON)`);
  return body as T;
}

/** Every item of a paginated list, following nextPageToken (bounded). */
export async function allPages<T>(
  page: (token: string) => Promise<{ list: T[]; nextPageToken: string }>,
  maxPages = 20,
): Promise<T[]> {
  const items: T[] = [];
  let token = '';
  for (let i = 0; i < maxPages; i++) {
    const result = await page(token);
    items.push(...result.list);
    token = result.nextPageToken;
    if (!token) break;
  }
  return items;
}
