import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { connectClient, testTemporal } from '../helpers/temporal';
import { ensureNamespace, RETENTION_SECONDS } from '../../src/temporal/setup';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/temporal/search-attributes';
import { poll } from '../helpers/wait';

describe('namespace setup on a real Temporal server', () => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await connectClient((await testTemporal()).address);
  });
  afterAll(async () => connection.close());

  it('creates a namespace with 7-day retention and the three search attributes', async () => {
    const namespace = `ns-${Date.now().toString(36)}`;
    const report = await ensureNamespace(connection, namespace);
    expect(report.createdNamespace).toBe(true);
    const described = await connection.workflowService.describeNamespace({ namespace });
    expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(RETENTION_SECONDS);
    const attributes = await connection.operatorService.listSearchAttributes({ namespace });
    for (const name of SEARCH_ATTRIBUTE_NAMES) expect(Object.keys(attributes.customAttributes ?? {})).toContain(name);
  });

  it('is idempotent: a second run changes nothing', async () => {
    const namespace = `ns2-${Date.now().toString(36)}`;
    await ensureNamespace(connection, namespace);
    const again = await ensureNamespace(connection, namespace);
    expect(again).toEqual({ createdNamespace: false, retentionUpdated: false, addedSearchAttributes: [] });
  });

  it('raises the retention of an existing namespace to 7 days', async () => {
    const namespace = `ns3-${Date.now().toString(36)}`;
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs(86400 * 1000),
    });
    // A new namespace reaches the frontend's cache a moment after registration: wait until it answers.
    const listed = await poll(
      () =>
        connection.operatorService.listSearchAttributes({ namespace }).then(
          () => true,
          () => false,
        ),
      (ok) => ok,
      60_000,
    );
    expect(listed).toBe(true);
    const report = await ensureNamespace(connection, namespace);
    expect(report.retentionUpdated).toBe(true);
    expect(report.addedSearchAttributes.sort()).toEqual([...SEARCH_ATTRIBUTE_NAMES].sort());
  });
});
