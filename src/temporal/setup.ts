/**
 * Makes a namespace fit for automations, on the embedded server or a cluster: it exists, keeps
 * closed runs 7 days (the event-id idempotency window), and knows the search attributes
 * AutomationId, ListenerId and WebhookEventId — even on a database made before they were added.
 */
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import { SEARCH_ATTRIBUTE_NAMES } from './search-attributes';

export const RETENTION_SECONDS = 7 * 24 * 3600;

export interface SetupReport {
  createdNamespace: boolean;
  retentionUpdated: boolean;
  addedSearchAttributes: string[];
}

export async function ensureNamespace(connection: Connection, namespace: string): Promise<SetupReport> {
  const report: SetupReport = { createdNamespace: false, retentionUpdated: false, addedSearchAttributes: [] };
  const service = connection.workflowService;
  let retention: number | undefined;
  try {
    const described = await service.describeNamespace({ namespace });
    retention = Number(described.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
  } catch (err) {
    if (grpcCode(err) !== 5 /* NOT_FOUND */) throw err;
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(RETENTION_SECONDS * 1000) });
    report.createdNamespace = true;
    retention = RETENTION_SECONDS;
    await waitForNamespace(connection, namespace);
  }
  if (retention < RETENTION_SECONDS) {
    await service.updateNamespace({
      namespace,
      config: { workflowExecutionRetentionTtl: msToTs(RETENTION_SECONDS * 1000) },
    });
    report.retentionUpdated = true;
  }
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !known.has(name));
  if (missing.length > 0) {
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((name) => [name, keyword])),
      });
    } catch (err) {
      if (grpcCode(err) !== 6 /* ALREADY_EXISTS */) throw err;
    }
    report.addedSearchAttributes = missing;
  }
  return report;
}

async function waitForNamespace(connection: Connection, namespace: string): Promise<void> {
  // A new namespace reaches every service's cache a moment after registration.
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      await connection.operatorService.listSearchAttributes({ namespace });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

function grpcCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}
