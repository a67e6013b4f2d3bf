/**
 * Zod schemas of the governance API (apps, users, entitlements, entitlement owners): one source
 * for request validation, TypeScript types and the OpenAPI document. Schemas that become OpenAPI
 * components carry `.meta({ id })`, so `z.toJSONSchema(schema, { io: 'input' })` emits `$ref`s.
 *
 * Request schemas follow proto3 JSON: `null` for any field means "unset" (the field's default),
 * unknown fields are dropped, read-only fields are not part of any request schema.
 */
import { z } from 'zod';
import { ruledBy } from './validation';
import {
  ANNOTATION_KEY,
  ANNOTATION_VALUE,
  ANNOTATION_VALUE_MAX,
  ANNOTATIONS_MAX_BYTES,
  ANNOTATIONS_MAX_ENTRIES,
  RESERVED_ANNOTATION_PREFIX,
  atMostOne,
  checkAnnotationLimits,
  exactlyOne,
  isDuration,
  isReservedAnnotationKey,
  MAX_MULTI_STEP_DEPTH,
  tooDeepMultiStep,
} from './entitlement-rules';
import { isObject } from '../json';

const optString = () => z.string().nullish();
const optBool = () => z.boolean().nullish();
const optStrings = () => z.array(z.string()).nullish();
/** An empty message (`unconfigured`, `doNotSave`, `durationUnset`): any object, fields dropped. */
const emptyObject = () => z.object({}).nullish();

/** A required, non-blank string: "is required" when absent or null. */
export function requiredText() {
  return z
    .string({
      error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
    })
    .regex(/\S/, 'must not be empty');
}

/** An object schema whose members form a oneof: exactly one of them must be set. */
function oneOf<Shape extends z.ZodRawShape>(shape: Shape) {
  return z.object(shape).superRefine(exactlyOne(Object.keys(shape)));
}

// ---------------------------------------------------------------- provisioning

const fallbackAssignee = () => z.object({ allowReassignment: optBool(), fallbackUserIds: optStrings() }).nullish();

export const ProvisionerAssignment = oneOf({
  users: z.object({ allowReassignment: optBool(), userIds: optStrings() }).nullish(),
  appOwners: fallbackAssignee(),
  entitlementOwners: fallbackAssignee(),
  manager: fallbackAssignee(),
  group: z
    .object({
      allowReassignment: optBool(),
      appGroupId: optString(),
      appId: optString(),
      fallbackUserIds: optStrings(),
    })
    .nullish(),
  expression: z
    .object({ allowReassignment: optBool(), expressions: optStrings(), fallbackUserIds: optStrings() })
    .nullish(),
}).meta({ id: 'ProvisionerAssignment', description: 'Who gets the provisioning task: exactly one member is set.' });

const connectorIdOnly = () => z.object({ connectorId: optString() }).nullish();

export const ConnectorAccountProvision = z
  .object({
    config: z.record(z.string(), z.unknown()).nullish(),
    connectorId: optString(),
    schemaId: optString(),
    saveToVault: z.object({ vaultIds: optStrings() }).nullish(),
    doNotSave: emptyObject(),
  })
  .superRefine(exactlyOne(['saveToVault', 'doNotSave']))
  .meta({ id: 'ConnectorAccountProvision', description: 'Exactly one of saveToVault / doNotSave is set.' });

export const ConnectorProvision = oneOf({
  defaultBehavior: connectorIdOnly(),
  account: ConnectorAccountProvision.nullish(),
  deleteAccount: connectorIdOnly(),
}).meta({ id: 'ConnectorProvision', description: 'Exactly one of defaultBehavior / account / deleteAccount is set.' });

export const ManualProvision = z
  .object({
    assignee: ProvisionerAssignment.nullish(),
    instructions: optString(),
    userIds: optStrings().meta({ deprecated: true, description: 'Deprecated: use assignee.' }),
  })
  .meta({ id: 'ManualProvision' });

const provisionPolicyShape = {
  connector: ConnectorProvision.nullish(),
  manual: ManualProvision.nullish(),
  delegated: z.object({ appId: optString(), entitlementId: optString(), implicit: optBool() }).nullish(),
  webhook: z.object({ webhookId: optString() }).nullish(),
  get multiStep(): z.ZodOptional<z.ZodNullable<typeof MultiStepProvision>> {
    return MultiStepProvision.nullish();
  },
  externalTicket: z
    .object({
      appId: optString(),
      connectorId: optString(),
      externalTicketProvisionerConfigId: optString(),
      instructions: optString(),
    })
    .nullish(),
  unconfigured: emptyObject(),
  action: z
    .object({ actionName: optString(), appId: optString(), connectorId: optString(), displayName: optString() })
    .nullish(),
  devicePlacement: z.object({ vaultBoundaryId: optString() }).nullish(),
};

/** The TypeScript type of ProvisionPolicy, spelled out because a recursive schema cannot infer its own type. */
export interface ProvisionPolicyValue {
  connector?: z.output<typeof ConnectorProvision> | null | undefined;
  manual?: z.output<typeof ManualProvision> | null | undefined;
  delegated?:
    | {
        appId?: string | null | undefined;
        entitlementId?: string | null | undefined;
        implicit?: boolean | null | undefined;
      }
    | null
    | undefined;
  webhook?: { webhookId?: string | null | undefined } | null | undefined;
  multiStep?: { provisionSteps?: ProvisionPolicyValue[] | null | undefined } | null | undefined;
  externalTicket?: Record<string, string | null | undefined> | null | undefined;
  unconfigured?: Record<string, never> | null | undefined;
  action?: Record<string, string | null | undefined> | null | undefined;
  devicePlacement?: { vaultBoundaryId?: string | null | undefined } | null | undefined;
}

/** How a provision step is processed; recursive through multiStep.provisionSteps. */
export const ProvisionPolicy: z.ZodType<ProvisionPolicyValue> = oneOf(provisionPolicyShape).meta({
  id: 'ProvisionPolicy',
  description: 'Exactly one member is set.',
});

export const MultiStepProvision = z
  .object({ provisionSteps: z.array(ProvisionPolicy).nullish() })
  .meta({ id: 'MultiStepProvision' });

// ---------------------------------------------------------------- entitlements

export const ENTITLEMENT_PURPOSES = [
  'APP_ENTITLEMENT_PURPOSE_VALUE_UNSPECIFIED',
  'APP_ENTITLEMENT_PURPOSE_VALUE_ASSIGNMENT',
  'APP_ENTITLEMENT_PURPOSE_VALUE_PERMISSION',
  'APP_ENTITLEMENT_PURPOSE_VALUE_OWNERSHIP',
] as const;

/** Known values, but any string is kept and echoed back. */
export const EntitlementPurpose = z
  .union([z.enum(ENTITLEMENT_PURPOSES), z.string()], { error: 'must be a string' })
  .meta({ id: 'AppEntitlementPurpose', description: 'Unknown values are tolerated and kept as given.' });

export const Duration = z
  .string()
  .refine(isDuration, 'must be a non-negative protobuf-JSON duration such as "3600s" or "1.5s", at most 315576000000s')
  .meta({ id: 'Duration', description: 'Protobuf-JSON duration: seconds with up to 9 fractional digits and an "s".' });

export const Annotations = z
  .record(
    z
      .string()
      .regex(ANNOTATION_KEY, `key must match ${ANNOTATION_KEY.source}`)
      .refine(
        (key) => !isReservedAnnotationKey(key),
        `keys starting with "${RESERVED_ANNOTATION_PREFIX}" are reserved`,
      ),
    z
      .string()
      .max(ANNOTATION_VALUE_MAX, `value must be at most ${ANNOTATION_VALUE_MAX} characters`)
      .regex(ANNOTATION_VALUE, 'value must be URL-safe ASCII'),
  )
  .superRefine(checkAnnotationLimits)
  .meta({
    id: 'Annotations',
    maxProperties: ANNOTATIONS_MAX_ENTRIES,
    description: `At most ${ANNOTATIONS_MAX_ENTRIES} entries, at most ${ANNOTATIONS_MAX_BYTES} bytes serialized; keys starting with "${RESERVED_ANNOTATION_PREFIX}" are reserved. Well-known keys: managed_by, iac_workspace, iac_resource_address, iac_tool_version.`,
  });

const StringMap = () => z.record(z.string(), z.string());

/** Longest alias: it is indexed, and an index entry must stay far below PostgreSQL's 2704-byte limit. */
export const ALIAS_MAX = 256;

/** The writable fields of an AppEntitlement (create body; `appEntitlement` of an update). */
export const AppEntitlementInput = z
  .object({
    appId: optString(),
    appResourceId: optString(),
    appResourceTypeId: optString(),
    alias: z
      .string()
      .max(ALIAS_MAX, `must be at most ${ALIAS_MAX} characters`)
      .nullish()
      .meta({ description: 'Exact-match queryable alias (indexed: at most 256 characters).' }),
    displayName: requiredText(),
    description: optString(),
    slug: optString(),
    purpose: EntitlementPurpose.nullish(),
    durationUnset: emptyObject(),
    durationGrant: Duration.nullish(),
    grantPolicyId: optString(),
    revokePolicyId: optString(),
    certifyPolicyId: optString(),
    emergencyGrantEnabled: optBool(),
    emergencyGrantPolicyId: optString(),
    provisionerPolicy: ProvisionPolicy.nullish(),
    deprovisionerPolicy: ProvisionPolicy.nullish(),
    complianceFrameworkValueIds: optStrings(),
    riskLevelValueId: optString(),
    requestSchemaId: optString(),
    defaultValuesApplied: optBool(),
    overrideAccessRequestsDefaults: optBool(),
    isManuallyManaged: optBool(),
    matchBatonId: optString(),
    sourceConnectorIds: StringMap().nullish(),
    userEditedMask: optString(),
    annotations: Annotations.nullish(),
  })
  .superRefine(atMostOne(['durationUnset', 'durationGrant']))
  .check(
    // A multiStep nested too deep is the one violation reported: the levels below it are not the caller's point.
    z.superRefine(
      (_value, ctx) => {
        const path = tooDeepMultiStep(ctx.value);
        if (!path) return;
        ctx.issues.length = 0;
        ctx.addIssue({
          code: 'custom',
          message: `multiStep may nest at most ${MAX_MULTI_STEP_DEPTH} levels`,
          path,
          input: ctx.value,
        });
      },
      { when: () => true },
    ),
  )
  .meta({ id: 'AppEntitlementInput', description: 'Writable AppEntitlement fields; read-only fields are ignored.' });

/** An AppEntitlement as the API returns it: every field present. */
export const AppEntitlement = z
  .object({
    id: z.string(),
    appId: z.string(),
    appResourceId: z.string(),
    appResourceTypeId: z.string(),
    alias: z.string(),
    displayName: z.string(),
    description: z.string(),
    slug: z.string(),
    purpose: EntitlementPurpose,
    durationUnset: z.object({}).nullable(),
    durationGrant: Duration.nullable(),
    grantPolicyId: z.string(),
    revokePolicyId: z.string(),
    certifyPolicyId: z.string(),
    emergencyGrantEnabled: z.boolean(),
    emergencyGrantPolicyId: z.string(),
    provisionerPolicy: ProvisionPolicy.nullable(),
    deprovisionerPolicy: ProvisionPolicy.nullable(),
    complianceFrameworkValueIds: z.array(z.string()).nullable(),
    riskLevelValueId: z.string(),
    requestSchemaId: z.string(),
    defaultValuesApplied: z.boolean(),
    overrideAccessRequestsDefaults: z.boolean(),
    isManuallyManaged: z.boolean(),
    isAutomationEnabled: z.boolean().meta({ readOnly: true }),
    matchBatonId: z.string(),
    externalId: z.string().meta({ readOnly: true }),
    sourceConnectorIds: StringMap(),
    grantCount: z.string().meta({ readOnly: true, format: 'int64' }),
    systemBuiltin: z.boolean().meta({ readOnly: true }),
    userEditedMask: z.string().nullable(),
    createdAt: z.string().nullable().meta({ readOnly: true, format: 'date-time' }),
    updatedAt: z.string().nullable().meta({ readOnly: true, format: 'date-time' }),
    deletedAt: z.string().nullable().meta({ readOnly: true, format: 'date-time' }),
    annotations: StringMap(),
  })
  .meta({ id: 'AppEntitlement' });
export type AppEntitlement = z.output<typeof AppEntitlement>;

/** The writable fields, in the order of docs/api.md#app-entitlements. */
export const WRITABLE_FIELDS = Object.keys(AppEntitlementInput.shape) as Array<
  keyof z.output<typeof AppEntitlementInput>
>;
export type WritableField = (typeof WRITABLE_FIELDS)[number];
/** The fields of the record that no write sets: a mask may name them, and they are ignored. */
export const READ_ONLY_FIELDS = Object.keys(AppEntitlement.shape).filter(
  (field) => !(field in AppEntitlementInput.shape),
);

const WRITABLE = new Set<string>(WRITABLE_FIELDS);
const READ_ONLY = new Set<string>(READ_ONLY_FIELDS);

function maskPaths(mask: string): string[] {
  return mask
    .split(',')
    .map((path) => path.trim())
    .filter((path) => path !== '');
}

function updateMaskProblem(mask: unknown): string | undefined {
  if (mask === undefined || mask === null) return undefined;
  if (typeof mask !== 'string') return 'must be a comma-separated string of field names';
  const unknown = maskPaths(mask).filter((path) => path !== '*' && !WRITABLE.has(path) && !READ_ONLY.has(path));
  return unknown.length > 0 ? `unknown field path(s): ${unknown.join(', ')}` : undefined;
}

/**
 * The writable fields an update touches. Absent, empty or `*` means all writable fields;
 * read-only fields are ignored (as everywhere on writes); any other name is a 400.
 */
export const UpdateMask = ruledBy(z.string().nullish(), updateMaskProblem)
  .meta({ description: 'Comma-separated camelCase field names; empty = all writable fields.' })
  .transform((mask): WritableField[] => {
    const paths = maskPaths(mask ?? '');
    if (paths.length === 0 || paths.includes('*')) return [...WRITABLE_FIELDS];
    return paths.filter((path): path is WritableField => WRITABLE.has(path));
  });

export const UpdateAppEntitlementRequest = z
  .object({
    // Only its type is checked here: the masked fields are checked in the domain as the merged
    // record (fields outside the mask are ignored, so a patch need not be a valid record itself).
    appEntitlement: ruledBy(AppEntitlementInput.nullish(), (patch) =>
      patch === undefined || patch === null || isObject(patch) ? undefined : 'must be an object',
    ),
    updateMask: UpdateMask,
  })
  .meta({ id: 'UpdateAppEntitlementRequest' });

/** Paging fields as documented; they never fail (`readPageRequest` clamps or ignores what they hold). */
const neverRefused = <S extends z.ZodType>(schema: S): S => ruledBy(schema, () => undefined);
const pageFields = {
  page_size: neverRefused(z.number().int().optional()).meta({
    description: 'Clamped to 10..100; default 25. Alias: pageSize.',
  }),
  page_token: neverRefused(z.string().optional()).meta({
    description: 'nextPageToken of the previous page. Alias: pageToken.',
  }),
};

/** Search filters; paging fields are read separately (they never fail). */
export const SearchEntitlementsFilter = z.object({
  query: z.string().nullish().meta({ description: 'Case-insensitive substring of displayName, slug or description.' }),
  alias: z.string().nullish().meta({ description: 'Exact alias.' }),
  appIds: z.array(z.string()).max(100).nullish(),
});
/** The filter, and the paging fields (with their aliases pageSize / pageToken, kept for `readPageRequest`). */
export const SearchEntitlementsRequest = z
  .looseObject({ ...SearchEntitlementsFilter.shape, ...pageFields })
  .meta({ id: 'SearchEntitlementsRequest' });

// ---------------------------------------------------------------- apps and users

export const CreateAppRequest = z
  .object({ displayName: requiredText(), description: optString() })
  .meta({ id: 'CreateAppRequest' });

export const App = z
  .object({
    id: z.string(),
    displayName: z.string(),
    description: z.string(),
    createdAt: z.string().meta({ format: 'date-time' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'App' });
export type App = z.output<typeof App>;

export const USER_TYPES = ['USER_TYPE_SERVICE', 'USER_TYPE_HUMAN'] as const;
export const UserType = z
  .enum(USER_TYPES, { error: `must be one of ${USER_TYPES.join(', ')}` })
  .meta({ id: 'UserType' });

export const CreateUserRequest = z
  .object({
    displayName: requiredText(),
    email: z
      .string()
      .regex(/^$|^[^\s@]+@[^\s@]+$/, 'must be an email address')
      .nullish(),
    type: UserType,
  })
  .meta({ id: 'CreateUserRequest' });

export const USER_STATUSES = ['USER_STATUS_ENABLED', 'USER_STATUS_DISABLED'] as const;
export const UserStatus = z
  .enum(USER_STATUSES, { error: `must be one of ${USER_STATUSES.join(', ')}` })
  .meta({ id: 'UserStatus' });

/** The fields a user update may set (`updateMask` names some of them; without one, those given). */
export const USER_UPDATE_FIELDS = ['displayName', 'email', 'status'] as const;
const userMaskRule = `must be a comma-separated list of ${USER_UPDATE_FIELDS.join(', ')}`;

export const UpdateUserRequest = z
  .object({
    user: z
      .object({
        displayName: requiredText().nullish(),
        email: z
          .string()
          .regex(/^$|^[^\s@]+@[^\s@]+$/, 'must be an email address')
          .nullish(),
        status: UserStatus.nullish(),
      })
      .nullish(),
    updateMask: ruledBy(z.string().nullish(), (mask) => {
      if (mask === undefined || mask === null) return undefined;
      if (typeof mask !== 'string') return userMaskRule;
      const paths = maskPaths(mask);
      return paths.every((path) => (USER_UPDATE_FIELDS as readonly string[]).includes(path)) ? undefined : userMaskRule;
    }).meta({ description: `Comma-separated among ${USER_UPDATE_FIELDS.join(', ')}; empty = the fields given.` }),
  })
  .meta({ id: 'UpdateUserRequest' });
export type UpdateUserRequest = z.output<typeof UpdateUserRequest>;

/** The paths of a user update's mask (validated by UpdateUserRequest). */
export function userMaskPaths(mask: string | null | undefined): string[] {
  return maskPaths(mask ?? '');
}

export const User = z
  .object({
    id: z.string(),
    displayName: z.string(),
    email: z.string(),
    type: UserType,
    status: UserStatus,
    createdAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'User' });
export type User = z.output<typeof User>;

// ---------------------------------------------------------------- entitlement owners

export const ROLE_SLUG = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

export const AppEntitlementRef = z.object({ appId: optString(), id: optString() }).meta({ id: 'AppEntitlementRef' });

export const CreateEntitlementOwnerRequest = z
  .object({ appEntitlementRef: AppEntitlementRef.nullish() })
  .meta({ id: 'CreateEntitlementOwnerRequest' });

export const UserOwnerEntitlement = z
  .object({
    appEntitlement: AppEntitlement.nullable(),
    createdAt: z.string().nullable().meta({ format: 'date-time' }),
    roleSlug: z.string(),
    userId: z.string(),
  })
  .meta({ id: 'UserOwnerEntitlement' });
export type UserOwnerEntitlement = z.output<typeof UserOwnerEntitlement>;

// ---------------------------------------------------------------- responses

/** `{ <key>: <schema> }`, the wrapping of every single-object response. */
function wrapped<K extends string, S extends z.ZodType>(key: K, schema: S, id: string) {
  return z.object({ [key]: schema } as Record<K, S>).meta({ id });
}

/** `{ list: [{ <key>: <schema> }], nextPageToken }`, the shape of every list and search response. */
function listOf<K extends string, S extends z.ZodType>(key: K, schema: S, id: string) {
  return z
    .object({
      list: z.array(z.object({ [key]: schema } as Record<K, S>)),
      nextPageToken: z.string().meta({ description: '"" on the last page.' }),
    })
    .meta({ id });
}

export const AppResponse = wrapped('app', App, 'AppResponse');
export const AppList = listOf('app', App, 'AppList');
export const UserResponse = wrapped('user', User, 'UserResponse');
export const UserList = listOf('user', User, 'UserList');
export const AppEntitlementResponse = wrapped('appEntitlement', AppEntitlement, 'AppEntitlementResponse');
export const AppEntitlementList = listOf('appEntitlement', AppEntitlement, 'AppEntitlementList');
export const UserOwnerEntitlementResponse = wrapped(
  'userOwnerEntitlement',
  UserOwnerEntitlement,
  'UserOwnerEntitlementResponse',
);
export const UserOwnerEntitlementList = listOf(
  'userOwnerEntitlement',
  UserOwnerEntitlement,
  'UserOwnerEntitlementList',
);
export const EmptyResponse = z.object({}).meta({ id: 'Empty' });
