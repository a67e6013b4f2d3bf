/** The audit trail (super_admin): GET /api/v1/audit, newest first, paginated, filters actor, action, subject, since. */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import * as api from '../../domain/api-schemas';
import { listAudit } from '../../domain/audit';
import { exactRouter, mountOperations, operation, READ_ERRORS } from '../operation';

export const AUDIT_OPERATIONS = [
  operation({
    method: 'get',
    path: '/api/v1/audit',
    operationId: 'audit.list',
    tag: 'Audit',
    paged: true,
    access: { area: 'audit', mode: 'read' },
    summary: 'The audit trail, newest first (super_admin): who did what, when; never a secret value or a payload.',
    query: [
      {
        name: 'actor',
        description: 'Only events of this actor (`client:<clientId>`, `person:<issuer>#<subject>`).',
        schema: { type: 'string', maxLength: 500 },
      },
      {
        name: 'action',
        description: 'Only events of this action, e.g. `automation.publish`.',
        schema: { type: 'string', maxLength: 500 },
      },
      {
        name: 'subject',
        description: 'Only events about this subject: `<type>:<id>` (as listed) or the bare id.',
        schema: { type: 'string', maxLength: 500 },
      },
      {
        name: 'since',
        description: 'Only events at or after this RFC 3339 time.',
        schema: { type: 'string', format: 'date-time' },
      },
    ],
    ok: api.AuditList,
    errors: READ_ERRORS,
    handle: async (input, ctx, deps) => {
      const page = await listAudit(deps.db, deps.pageTokens, ctx.query, input.page);
      return { list: page.items, nextPageToken: page.nextPageToken };
    },
  }),
];

export function createAuditRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, AUDIT_OPERATIONS);
}
