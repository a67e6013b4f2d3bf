/** What each role allows (src/auth/roles.ts), over every area and mode. */
import { allows, isRole, ROLES, type Area, type Mode, type Role } from '../../src/auth/roles';

const AREAS: Area[] = ['governance', 'automations', 'iam', 'approvals', 'secrets', 'audit'];
const MODES: Mode[] = ['read', 'write'];

/** The whole table, written out: [role, area, mode, allowed]. */
const TABLE: Array<[Role, Area, Mode, boolean]> = [
  ['super_admin', 'governance', 'read', true],
  ['super_admin', 'governance', 'write', true],
  ['super_admin', 'automations', 'read', true],
  ['super_admin', 'automations', 'write', true],
  ['super_admin', 'iam', 'read', true],
  ['super_admin', 'iam', 'write', true],
  ['super_admin', 'approvals', 'read', true],
  ['super_admin', 'approvals', 'write', true],
  ['super_admin', 'secrets', 'read', true],
  ['super_admin', 'secrets', 'write', true],
  ['super_admin', 'audit', 'read', true],
  ['super_admin', 'audit', 'write', true],
  ['admin', 'governance', 'read', true],
  ['admin', 'governance', 'write', true],
  ['admin', 'automations', 'read', true], // operating runs: automations (never a secret) and their runs
  ['admin', 'automations', 'write', false],
  ['admin', 'iam', 'read', false],
  ['admin', 'iam', 'write', false],
  ['admin', 'approvals', 'read', false],
  ['admin', 'approvals', 'write', true],
  ['admin', 'secrets', 'read', true],
  ['admin', 'secrets', 'write', false],
  ['admin', 'audit', 'read', false],
  ['admin', 'audit', 'write', false],
  ['read_only', 'governance', 'read', true],
  ['read_only', 'governance', 'write', false],
  ['read_only', 'automations', 'read', false],
  ['read_only', 'automations', 'write', false],
  ['read_only', 'iam', 'read', false],
  ['read_only', 'iam', 'write', false],
  ['read_only', 'approvals', 'read', false],
  ['read_only', 'approvals', 'write', false],
  ['read_only', 'secrets', 'read', true],
  ['read_only', 'secrets', 'write', false],
  ['read_only', 'audit', 'read', false],
  ['read_only', 'audit', 'write', false],
];

describe('allows', () => {
  it.each(TABLE)('%s on %s (%s): %s', (role, area, mode, allowed) => {
    expect(allows({ clientId: 'c', roles: [role] }, area, mode)).toBe(allowed);
  });

  it('no role allows nothing', () => {
    for (const area of AREAS)
      for (const mode of MODES) expect(allows({ clientId: 'c', roles: [] }, area, mode)).toBe(false);
  });

  it('several roles allow the union of what each allows', () => {
    for (const area of AREAS) {
      for (const mode of MODES) {
        const either =
          allows({ clientId: 'c', roles: ['admin'] }, area, mode) ||
          allows({ clientId: 'c', roles: ['read_only'] }, area, mode);
        expect(allows({ clientId: 'c', roles: ['read_only', 'admin'] }, area, mode)).toBe(either);
      }
    }
    expect(allows({ clientId: 'c', roles: ['read_only', 'super_admin'] }, 'iam', 'write')).toBe(true);
  });
});

describe('isRole', () => {
  it('is true for the three roles only', () => {
    expect(ROLES).toEqual(['super_admin', 'admin', 'read_only']);
    for (const role of ROLES) expect(isRole(role)).toBe(true);
    for (const value of ['root', 'Admin', 'super_admin ', '', undefined, null, 1, ['admin'], { admin: true }])
      expect(isRole(value)).toBe(false);
  });
});
