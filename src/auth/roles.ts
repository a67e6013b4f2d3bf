/**
 * Roles and what they allow. `super_admin`: everything. `admin`: the governance resources, reading
 * automations and their runs (never a secret), and deciding approvals; not changing automations,
 * controlling runs, API clients or the audit trail. `read_only`: reads (GET) and searches of the
 * governance resources.
 */
export const ROLES = ['super_admin', 'admin', 'read_only'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route touches: governance resources, automations (their triggers and runs), API clients,
 * approvals (deciding a waitForApproval step: admin may, as well as super_admin), or the audit trail.
 */
export type Area = 'governance' | 'automations' | 'iam' | 'approvals' | 'audit';
export type Mode = 'read' | 'write';

export interface Principal {
  /** The API client (a bearer token's, or a local console sign-in's); '' for a person signed in through OIDC. */
  clientId: string;
  roles: Role[];
  /** The actor string when it is not `client:<clientId>`: `person:<issuer>#<subject>` (OIDC). */
  actor?: string;
  /** A person signed in through OIDC: their name and email, for the audit records' details. */
  person?: { name: string; email: string };
}

/** The one actor string of a caller: `client:<clientId>` or `person:<issuer>#<subject>`. */
export function actorString(principal: Principal): string {
  return principal.actor ?? `client:${principal.clientId}`;
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function allows(principal: Principal, area: Area, mode: Mode): boolean {
  const roles = new Set(principal.roles);
  if (roles.has('super_admin')) return true;
  if (area === 'approvals') return mode === 'write' && roles.has('admin');
  if (area === 'automations') return mode === 'read' && roles.has('admin');
  if (area !== 'governance') return false;
  if (roles.has('admin')) return true;
  return mode === 'read' && roles.has('read_only');
}
