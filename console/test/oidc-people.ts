/** The people of the browser tests' OpenID provider, and the group the service maps to a role. */
export const APPROVERS_GROUP = 'cn=idm-approvers,ou=groups,dc=example';

export const OIDC_PEOPLE = {
  approver: { sub: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', groups: ['staff', APPROVERS_GROUP] },
  outsider: { sub: 'eve', name: 'Eve Outsider', email: 'eve@example.com', groups: ['staff'] },
};

/** The provider's client for the console (test/fixtures/oidc-provider.ts). */
export const OIDC_CLIENT = { clientId: 'console', clientSecret: 'console-secret-0123456789-0123456789' };
