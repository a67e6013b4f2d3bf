/**
 * Request and response schemas of the named outbound secrets (`/api/v1/secrets`): the request
 * schemas are the validators (their messages name the secret rules, never quoting a value) and the
 * source of the OpenAPI document.
 */
import { z } from 'zod';
import { SECRET_NAME } from '../steps/kind';
import { HEADER_VALUE } from '../steps/call-webhook';
import { isMalformedWhsec } from '../webhooks/standard-webhooks';
import { gracePeriodSchema } from './rotation-grace';
import { MAX_ALLOWED_ORIGINS, normaliseOrigin } from './secret-origins';
import { closedObject, oneViolation, ruledBy, whileValid } from './validation';

/** Longest value, in characters (each a tab or printable Latin-1 character). */
export const MAX_SECRET_VALUE_LENGTH = 4096;

/** Names CEL cannot read as a field (`secrets.in` does not parse). */
const CEL_KEYWORDS = new Set(['in', 'true', 'false', 'null']);

const name = () =>
  oneViolation(z.string().regex(SECRET_NAME), 'must match ^[a-z][a-z0-9_]{0,62}$ (it is read as secrets.<name>)')
    .refine((value) => !CEL_KEYWORDS.has(value), {
      error: (issue) => `"${String(issue.input)}" is a CEL keyword: secrets.${String(issue.input)} cannot be read`,
    })
    .meta({
      description:
        'Read as secrets.<name> in callWebhook header values, or named by a callWebhook signature: ^[a-z][a-z0-9_]{0,62}$.',
    });

/** The value's rules, the first broken one reported; a message never quotes the value. */
const value = () =>
  z
    .string({ error: 'is required: a non-empty string' })
    .min(1, { error: 'is required: a non-empty string', ...whileValid })
    .max(MAX_SECRET_VALUE_LENGTH, { error: `must be at most ${MAX_SECRET_VALUE_LENGTH} characters`, ...whileValid })
    // Tabs and printable Latin-1 only: the value is sent in a header.
    .regex(HEADER_VALUE, {
      error: 'must hold only tabs and printable Latin-1 characters (no line breaks): it is sent in a header',
      ...whileValid,
    })
    .refine((text) => !isMalformedWhsec(text), {
      error: 'a whsec_ value must be base64 after the prefix (it is decoded to sign calls)',
      ...whileValid,
    })
    .meta({
      description: `The credential, at most ${MAX_SECRET_VALUE_LENGTH} characters; sealed at rest and never returned.`,
    });

const ORIGINS_RULE = `is required: a list of 1 to ${MAX_ALLOWED_ORIGINS} origins scheme://host[:port] the secret may be sent to`;
/** 1..20 origins, each normalised (src/domain/secret-origins.ts), duplicates folded. */
const allowedOrigins = () =>
  z
    .array(
      ruledBy(
        z
          .string()
          .min(1)
          .max(300)
          .regex(/^[hH][tT][tT][pP][sS]?:\/\/[^/?#@\s*]+\/?$/),
        (text) => {
          const result = normaliseOrigin(text);
          return 'problem' in result ? result.problem : undefined;
        },
      ).meta({
        description:
          'An origin, scheme://host[:port] (https, or http where plain-HTTP targets are allowed); stored normalised.',
      }),
      { error: ORIGINS_RULE },
    )
    .min(1, ORIGINS_RULE)
    .max(MAX_ALLOWED_ORIGINS, ORIGINS_RULE)
    .overwrite((items) => [...new Set(items.map((item) => (normaliseOrigin(item) as { origin: string }).origin))])
    .meta({
      description:
        `Where a request carrying the secret may be sent: 1 to ${MAX_ALLOWED_ORIGINS} origins. A callWebhook step whose URL is fixed elsewhere is refused on save; ` +
        'one whose URL comes from the run fails (without retry, sending nothing) when it points elsewhere.',
    });

export const CreateSecretRequest = closedObject({
  name: name(),
  value: value(),
  allowedOrigins: allowedOrigins(),
}).meta({ id: 'CreateSecretRequest' });
export type CreateSecretRequest = z.output<typeof CreateSecretRequest>;

const GRACE_RULE =
  'must be a duration in seconds such as "86400s", at most "604800s" (7 days); "0s" drops the old value at once';
export const ReplaceSecretRequest = closedObject({
  value: value().optional(),
  gracePeriod: oneViolation(gracePeriodSchema(), GRACE_RULE).optional().meta({
    description:
      'With value only: how long the replaced value keeps signing callWebhook requests next to the new one, as seconds ("86400s", the default; at most "604800s"); "0s" drops it at once. Header values use the new value at once.',
  }),
  allowedOrigins: allowedOrigins().optional(),
})
  .check(
    z.superRefine(
      (_body, ctx) => {
        const given = ctx.value as Record<string, unknown>;
        if (!('value' in given) && !('allowedOrigins' in given)) {
          ctx.addIssue({
            code: 'custom',
            path: ['value'],
            input: given,
            message:
              'is required unless allowedOrigins is given: the new value (or give allowedOrigins to change where the secret may go)',
          });
        }
        if ('gracePeriod' in given && !('value' in given)) {
          // Whatever its form, a gracePeriod without a value is refused for that alone.
          ctx.issues.splice(0, ctx.issues.length, ...ctx.issues.filter((issue) => issue.path?.[0] !== 'gracePeriod'));
          ctx.addIssue({
            code: 'custom',
            path: ['gracePeriod'],
            input: given,
            message: 'applies to a new value only: give value with it',
          });
        }
      },
      { when: () => true },
    ),
  )
  .meta({
    id: 'ReplaceSecretRequest',
    description:
      'The new value (rotation, with an optional gracePeriod), new allowedOrigins, or both; value or allowedOrigins is required.',
    minProperties: 1,
  });
export type ReplaceSecretRequest = z.output<typeof ReplaceSecretRequest>;

export const SecretMetadata = z
  .strictObject({
    name: name(),
    allowedOrigins: z.array(z.string()).max(MAX_ALLOWED_ORIGINS).meta({
      description:
        'Where a request carrying the secret may be sent (normalised origins). Empty only for a secret migrated from before origins existed: it is sent nowhere until they are set.',
    }),
    createdAt: z.string().meta({ description: 'RFC 3339.' }),
    updatedAt: z.string().meta({ description: 'RFC 3339: when the value was last set (create or rotation).' }),
  })
  .meta({
    id: 'Secret',
    description: 'A named outbound secret: its name, allowed origins and timestamps, never its value.',
  });

export const SecretResponse = z.object({ secret: SecretMetadata }).meta({ id: 'SecretResponse' });
export const ReplaceSecretResponse = z
  .object({
    secret: SecretMetadata,
    previousValueExpiresAt: z
      .string()
      .meta({
        format: 'date-time',
        description:
          'When the replaced value stops signing calls (RFC 3339); null when the value was not changed (allowedOrigins only) or the old one was dropped at once.',
      })
      .nullable(),
  })
  .meta({ id: 'ReplaceSecretResponse' });
export const SecretList = z
  .object({
    list: z.array(z.object({ secret: SecretMetadata })),
    nextPageToken: z.string().meta({ description: '"" on the last page.' }),
  })
  .meta({ id: 'SecretList' });
