/**
 * The incoming-webhook trigger: a listener URL, its authentication method (src/webhooks: the
 * authenticator registry), the source allow-list and the on/off switch.
 */
import { triggerConfigView, validateIncomingWebhook, type IncomingWebhookTrigger } from '../webhooks/trigger';
import { defineTriggerKind } from './kind';

export const incomingWebhook = defineTriggerKind<'incomingWebhook', IncomingWebhookTrigger>({
  name: 'incomingWebhook',
  hasListener: true,
  // Stored before the other kinds existed: no `kind`.
  owns: (stored): stored is IncomingWebhookTrigger => stored.kind === undefined || stored.kind === 'incomingWebhook',
  validate: (value, _field, config, violations) => validateIncomingWebhook(value, config, violations),
  view: (stored, context) => ({
    ...triggerConfigView(stored),
    listenerId: context.listenerId,
    url: context.listenerUrl(context.listenerId),
  }),
  enabled: (stored) => stored.enabled,
});
