/**
 * The AppEntitlement record: which fields are writable, their defaults, how a validated write is
 * split into table columns, and how a stored row becomes the API record with every field present
 * (`null` / `""` / `false` / `{}` where unset; `grantCount` counted by the store).
 */
import type { z } from 'zod';
import { WRITABLE_FIELDS, type AppEntitlement, type AppEntitlementInput, type WritableField } from './schemas';
import type { EntitlementColumns, EntitlementRow } from '../store/entitlements';

type Input = z.output<typeof AppEntitlementInput>;

export const DEFAULT_PURPOSE = 'APP_ENTITLEMENT_PURPOSE_VALUE_UNSPECIFIED';

/** Every writable field with its value when unset; the key order is the order of docs/api.md#app-entitlements. */
const WRITABLE_DEFAULTS = {
  appId: '',
  appResourceId: '',
  appResourceTypeId: '',
  alias: '',
  displayName: '',
  description: '',
  slug: '',
  purpose: DEFAULT_PURPOSE as string,
  durationUnset: null,
  durationGrant: null,
  grantPolicyId: '',
  revokePolicyId: '',
  certifyPolicyId: '',
  emergencyGrantEnabled: false,
  emergencyGrantPolicyId: '',
  provisionerPolicy: null,
  deprovisionerPolicy: null,
  complianceFrameworkValueIds: null,
  riskLevelValueId: '',
  requestSchemaId: '',
  defaultValuesApplied: false,
  overrideAccessRequestsDefaults: false,
  isManuallyManaged: false,
  matchBatonId: '',
  sourceConnectorIds: {},
  userEditedMask: null,
  annotations: {},
} satisfies Record<WritableField, unknown>;

/** A validated write with every writable field set (defaults filled in). */
export type EntitlementFields = {
  [K in WritableField]: (typeof WRITABLE_DEFAULTS)[K] extends null
    ? NonNullable<Input[K]> | null
    : NonNullable<Input[K]>;
};

/** Fills the defaults of a parsed write. */
export function withDefaults(input: Input): EntitlementFields {
  const fields: Record<string, unknown> = {};
  for (const field of WRITABLE_FIELDS) fields[field] = input[field] ?? WRITABLE_DEFAULTS[field];
  return fields as EntitlementFields;
}

/**
 * The table columns of a write. Fields kept in columns leave `record`; read-only fields already
 * in `previous` (set by a sync, say) are kept.
 */
export function toColumns(fields: EntitlementFields, previous: Record<string, unknown> = {}): EntitlementColumns {
  const { alias, displayName, description, slug, ...rest } = fields;
  const record: Record<string, unknown> = { ...previous, ...rest };
  delete record.appId; // the app_id column
  return { alias, displayName, description, slug, record };
}

/** The writable fields of a stored row. */
export function fieldsOf(row: EntitlementRow): EntitlementFields {
  const { alias, displayName, description, slug } = row;
  return withDefaults({ ...(row.record as Input), appId: row.appId, alias, displayName, description, slug });
}

function roString(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

/** The API record of a stored row, every field present, in the order of docs/api.md#app-entitlements. */
export function toAppEntitlement(row: EntitlementRow): AppEntitlement {
  const f = fieldsOf(row);
  const ro = row.record;
  return {
    id: row.id,
    appId: row.appId,
    appResourceId: f.appResourceId,
    appResourceTypeId: f.appResourceTypeId,
    alias: f.alias,
    displayName: f.displayName,
    description: f.description,
    slug: f.slug,
    purpose: f.purpose,
    durationUnset: f.durationUnset,
    durationGrant: f.durationGrant,
    grantPolicyId: f.grantPolicyId,
    revokePolicyId: f.revokePolicyId,
    certifyPolicyId: f.certifyPolicyId,
    emergencyGrantEnabled: f.emergencyGrantEnabled,
    emergencyGrantPolicyId: f.emergencyGrantPolicyId,
    provisionerPolicy: f.provisionerPolicy,
    deprovisionerPolicy: f.deprovisionerPolicy,
    complianceFrameworkValueIds: f.complianceFrameworkValueIds,
    riskLevelValueId: f.riskLevelValueId,
    requestSchemaId: f.requestSchemaId,
    defaultValuesApplied: f.defaultValuesApplied,
    overrideAccessRequestsDefaults: f.overrideAccessRequestsDefaults,
    isManuallyManaged: f.isManuallyManaged,
    isAutomationEnabled: ro.isAutomationEnabled === true,
    matchBatonId: f.matchBatonId,
    externalId: roString(ro.externalId, ''),
    sourceConnectorIds: f.sourceConnectorIds,
    grantCount: row.grantCount,
    systemBuiltin: ro.systemBuiltin === true,
    userEditedMask: f.userEditedMask,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    deletedAt: row.deletedAt,
    annotations: f.annotations,
  };
}
