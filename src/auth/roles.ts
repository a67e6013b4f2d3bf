/**
 * Roles and what they allow. `super_admin`: everything. `admin`: everything except automations and
 * API clients. `read_only`: reads (GET) and searches of the governance resources.
 */
export const ROLES = ['super_admin', 'admin', 'read_only'] as const;
export type Role = (typeof ROLES)[number];

/** What a route touches: governance resources, automations (and their triggers), or API clients. */
export type Area = 'governance' | 'automations' | 'iam';
export type Mode = 'read' | 'write';

export interface Principal {
  clientId: string;
  roles: Role[];
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function allows(principal: Principal, area: Area, mode: Mode): boolean {
  const roles = new Set(principal.roles);
  if (roles.has('super_admin')) return true;
  if (area !== 'governance') return false;
  if (roles.has('admin')) return true;
  return mode === 'read' && roles.has('read_only');
}
