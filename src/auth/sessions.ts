/**
 * Console sessions of people, kept in the store. The cookie holds an opaque random id (256 bits);
 * the store keeps only its SHA-256, so a copy of the table signs no one in. A session ends at the
 * first of: its idle timeout since the last-seen time, its absolute lifetime since sign-in, logout,
 * or (after a local sign-in) the deletion of its API client. The last-seen time is written at most
 * once a minute, so the idle timeout is kept to within that minute; expired rows are purged when
 * someone signs in and at most every few minutes while sessions are read.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../store/db';
import * as store from '../store/console-sessions';
import { apiClientByClientId } from '../store/api-clients';
import { randomToken } from '../ids';
import { isRole, type Principal, type Role } from './roles';

export type { SessionPerson } from '../store/console-sessions';

/** What a request signed in with a session acts as. */
export interface Session {
  /** Hash of the cookie's id: names the session without revealing it. */
  idHash: string;
  csrfToken: string;
  principal: Principal;
  person: store.SessionPerson & { roles: Role[] };
}

export interface SessionLimits {
  idleSeconds: number;
  maxSeconds: number;
}

/** The last-seen time is written again only once it is this old. */
export const TOUCH_INTERVAL_MS = 60_000;
const PURGE_INTERVAL_MS = 5 * 60_000;

export function hashSessionId(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

/** True when the two tokens are the same, in time independent of where they differ. */
export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class ConsoleSessions {
  private lastPurgeMs = 0;

  constructor(
    private readonly db: Queryable,
    private readonly limits: SessionLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session; answers the cookie's id (shown once, never stored) and the session. */
  async create(input: {
    actor: string;
    person: store.SessionPerson;
    roles: Role[];
  }): Promise<{ id: string; session: Session }> {
    const now = this.now();
    await this.purge(now);
    const id = randomToken(32);
    const idHash = hashSessionId(id);
    const csrfToken = randomToken(32);
    const expiresAt = new Date(now + Math.min(this.limits.idleSeconds, this.limits.maxSeconds) * 1000);
    await store.insertSession(this.db, {
      idHash,
      csrfToken,
      actor: input.actor,
      person: input.person,
      roles: input.roles,
      now: new Date(now),
      expiresAt,
    });
    return { id, session: toSession(idHash, csrfToken, input.actor, input.person, input.roles) };
  }

  /**
   * The live session of a cookie's id, or undefined (unknown, expired — then deleted —, or its
   * API client deleted). A local sign-in acts with its client's current roles.
   */
  async resolve(id: string): Promise<Session | undefined> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(id)) return undefined;
    const now = this.now();
    if (now - this.lastPurgeMs >= PURGE_INTERVAL_MS) await this.purge(now);
    const idHash = hashSessionId(id);
    const record = await store.sessionByHash(this.db, idHash);
    if (!record) return undefined;
    const absoluteEnd = Date.parse(record.createdAt) + this.limits.maxSeconds * 1000;
    if (now >= Date.parse(record.expiresAt) || now >= absoluteEnd) {
      await store.deleteSession(this.db, idHash);
      return undefined;
    }
    let roles = (Array.isArray(record.roles) ? record.roles : []).filter(isRole);
    if (record.actor.startsWith('client:')) {
      const client = await apiClientByClientId(this.db, record.actor.slice('client:'.length));
      if (!client) {
        await store.deleteSession(this.db, idHash);
        return undefined;
      }
      roles = (Array.isArray(client.roles) ? client.roles : []).filter(isRole);
    }
    if (now - Date.parse(record.lastSeenAt) >= TOUCH_INTERVAL_MS) {
      await store.touchSession(
        this.db,
        idHash,
        new Date(now),
        new Date(Math.min(now + this.limits.idleSeconds * 1000, absoluteEnd)),
      );
    }
    return toSession(idHash, record.csrfToken, record.actor, record.person, roles);
  }

  async end(idHash: string): Promise<void> {
    await store.deleteSession(this.db, idHash);
  }

  private async purge(now: number): Promise<void> {
    this.lastPurgeMs = now;
    await store.purgeExpiredSessions(this.db, new Date(now));
  }
}

function toSession(
  idHash: string,
  csrfToken: string,
  actor: string,
  person: store.SessionPerson,
  roles: Role[],
): Session {
  const clientId = actor.startsWith('client:') ? actor.slice('client:'.length) : '';
  return {
    idHash,
    csrfToken,
    principal: {
      clientId,
      roles,
      actor,
      ...(actor.startsWith('person:') ? { person: { name: person.name, email: person.email } } : {}),
    },
    person: { ...person, roles },
  };
}
