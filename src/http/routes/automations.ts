/** Automations API (super_admin only): create, read, list, update, delete, publish, rotate secret, dry run. */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import type { Context } from 'koa';
import { actorOf, authenticate, requireAccess } from '../auth';
import { readJsonObject } from '../body';
import { dryRunSteps } from '../../domain/automation-dry-run';
import { dryRunFlowControl } from '../../domain/flow-control';
import { existingSecretsReadBy } from '../../domain/outbound-secrets';
import { MAX_WEBHOOK_BODY_BYTES } from '../../webhooks/body';
import { readPageRequest } from '../../domain/pagination';
import {
  automationView,
  changeAutomationState,
  createAutomation,
  getAutomation,
  listAutomations,
  parseGracePeriod,
  rotateSigningSecret,
  updateAutomation,
  type AutomationOptions,
  type AutomationWithPublishedVersion,
} from '../../domain/automations';
import { invalidArgument } from '../../errors';

export function createAutomationsRouter(deps: AppDeps): Router {
  const router = new Router({ prefix: '/api/v1/automations' });
  const options = (ctx: Context): AutomationOptions => ({
    authenticators: deps.config,
    secretBox: deps.secretBox,
    actor: actorOf(ctx),
  });
  const view = (record: AutomationWithPublishedVersion): Record<string, unknown> => automationView(record, deps.config.baseUrl);
  router.use(authenticate(deps.tokens), requireAccess('automations', 'write'));

  router.post('/', async (ctx) => {
    const { record, signingSecret } = await createAutomation(deps.db, await readJsonObject(ctx), options(ctx));
    ctx.body = { automation: view(record), ...(signingSecret ? { signingSecret } : {}) };
  });

  router.get('/', async (ctx) => {
    const page = await listAutomations(deps.db, deps.pageTokens, readPageRequest(ctx.query));
    ctx.body = { list: page.items.map((record) => ({ automation: view(record) })), nextPageToken: page.nextPageToken };
  });

  router.get('/:id', async (ctx) => {
    ctx.body = { automation: view(await getAutomation(deps.db, ctx.params.id!)) };
  });

  router.post('/:id', async (ctx) => {
    const { record, signingSecret } = await updateAutomation(deps.db, ctx.params.id!, await readJsonObject(ctx), options(ctx));
    ctx.body = { automation: view(record), ...(signingSecret ? { signingSecret } : {}) };
  });

  router.delete('/:id', async (ctx) => {
    await changeAutomationState(deps.db, ctx.params.id!, 'delete', options(ctx).actor);
    ctx.body = {};
  });

  for (const action of ['publish', 'unpublish'] as const) {
    router.post(`/:id/${action}`, async (ctx) => {
      const record = await changeAutomationState(deps.db, ctx.params.id!, action, options(ctx).actor);
      ctx.body = { automation: view(record!) };
    });
  }

  // Dry run: evaluates the steps over a sample payload without running any effect.
  router.post('/:id/test', async (ctx) => {
    const record = await getAutomation(deps.db, ctx.params.id!);
    const body = await readJsonObject(ctx);
    if (!('payload' in body)) throw invalidArgument({ field: 'payload', description: 'is required: a sample webhook body (any JSON), read as ctx.trigger' });
    if (Buffer.byteLength(JSON.stringify(body.payload)) > MAX_WEBHOOK_BODY_BYTES) {
      throw invalidArgument({ field: 'payload', description: `must be at most ${MAX_WEBHOOK_BODY_BYTES} bytes of JSON, like a webhook body` });
    }
    const existingSecrets = await existingSecretsReadBy(deps.db, record.steps);
    const steps = await dryRunSteps(record.steps, body.payload, { allowInsecureOutbound: deps.config.allowPrivateOutbound, existingSecrets });
    ctx.body = { ...steps, flowControl: dryRunFlowControl(record.flow, body.payload) };
  });

  router.post('/:id/trigger/rotate-secret', async (ctx) => {
    const body = await readJsonObject(ctx);
    const unknown = Object.keys(body).filter((key) => key !== 'gracePeriod');
    if (unknown.length > 0) throw invalidArgument({ field: unknown[0]!, description: 'is not a field of this request (only gracePeriod)' });
    ctx.body = await rotateSigningSecret(deps.db, ctx.params.id!, parseGracePeriod(body.gracePeriod), options(ctx));
  });

  return router;
}
