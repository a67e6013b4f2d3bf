/**
 * Roles and what they allow. `super_admin`: everything. `admin`: everything except automations, API
 * clients and writing outbound secrets. `read_only`: reads (GET) and searches of the governance
 * resources.
 */
export const ROLES = ['super_admin', 'admin', 'read_only'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route touches: governance resources, automations (and their triggers), API clients,
 * approvals (deciding a waitForApproval step: admin may, as well as super_admin), or outbound
 * secrets (their metadata is read as a governance resource; creating, replacing and deleting one is
 * super_admin's alone, since whoever writes a secret's value or origins decides where automations
 * send it).
 */
export type Area = 'governance' | 'automations' | 'iam' | 'approvals' | 'secrets';
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
  if (area === 'approvals') return mode === 'write' && roles.has('admin');
  if (area === 'secrets' && mode === 'write') return false;
  if (area !== 'governance' && area !== 'secrets') return false;
  if (roles.has('admin')) return true;
  return mode === 'read' && roles.has('read_only');
}
