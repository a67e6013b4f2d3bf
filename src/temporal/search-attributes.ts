/** The custom search attributes every automation run carries, so operators can find it in the Web UI. */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const AutomationIdKey = defineSearchAttributeKey('AutomationId', SearchAttributeType.KEYWORD);
export const ListenerIdKey = defineSearchAttributeKey('ListenerId', SearchAttributeType.KEYWORD);
export const WebhookEventIdKey = defineSearchAttributeKey('WebhookEventId', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_NAMES = [
  'AutomationId',
  'ListenerId',
  'WebhookEventId',
  'FlowQueue',
  'ApprovalWait',
] as const;
