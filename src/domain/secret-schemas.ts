/** Request and response schemas of the named outbound secrets (`/api/v1/secrets`), for the OpenAPI document. */
import { z } from 'zod';
import { MAX_SECRET_VALUE_LENGTH } from './outbound-secrets';
import { MAX_ALLOWED_ORIGINS } from './secret-origins';

const name = () =>
  z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,62}$/)
    .meta({ description: 'Read as secrets.<name> in callWebhook header values, or named by a callWebhook signature: ^[a-z][a-z0-9_]{0,62}$.' });
const value = () =>
  z
    .string()
    .min(1)
    .max(MAX_SECRET_VALUE_LENGTH)
    // Tabs and printable Latin-1 only: the value is sent in a header.
    .regex(/^[\t\x20-\x7e\x80-\xff]+$/)
    .meta({ description: `The credential, at most ${MAX_SECRET_VALUE_LENGTH} characters; sealed at rest and never returned.` });

const allowedOrigins = () =>
  z
    .array(
      z
        .string()
        .min(1)
        .max(300)
        .regex(/^[hH][tT][tT][pP][sS]?:\/\/[^/?#@\s*]+\/?$/)
        .meta({ description: 'An origin, scheme://host[:port] (https, or http where plain-HTTP targets are allowed); stored normalised.' }),
    )
    .min(1)
    .max(MAX_ALLOWED_ORIGINS)
    .meta({
      description:
        `Where a request carrying the secret may be sent: 1 to ${MAX_ALLOWED_ORIGINS} origins. A callWebhook step whose URL is fixed elsewhere is refused on save; ` +
        'one whose URL comes from the run fails (without retry, sending nothing) when it points elsewhere.',
    });

export const CreateSecretRequest = z
  .strictObject({ name: name(), value: value(), allowedOrigins: allowedOrigins() })
  .meta({ id: 'CreateSecretRequest' });
export const ReplaceSecretRequest = z
  .strictObject({
    value: value().optional(),
    gracePeriod: z
      .string()
      .regex(/^\d{1,7}(\.\d{1,9})?s$/)
      .optional()
      .meta({
        description:
          'With value only: how long the replaced value keeps signing callWebhook requests next to the new one, as seconds ("86400s", the default; at most "604800s"); "0s" drops it at once. Header values use the new value at once.',
      }),
    allowedOrigins: allowedOrigins().optional(),
  })
  .meta({
    id: 'ReplaceSecretRequest',
    description: 'The new value (rotation, with an optional gracePeriod), new allowedOrigins, or both; value or allowedOrigins is required.',
    minProperties: 1,
  });

export const SecretMetadata = z
  .strictObject({
    name: name(),
    allowedOrigins: z
      .array(z.string())
      .max(MAX_ALLOWED_ORIGINS)
      .meta({ description: 'Where a request carrying the secret may be sent (normalised origins). Empty only for a secret migrated from before origins existed: it is sent nowhere until they are set.' }),
    createdAt: z.string().meta({ description: 'RFC 3339.' }),
    updatedAt: z.string().meta({ description: 'RFC 3339: when the value was last set (create or rotation).' }),
  })
  .meta({ id: 'Secret', description: 'A named outbound secret: its name, allowed origins and timestamps, never its value.' });

export const SecretResponse = z.object({ secret: SecretMetadata }).meta({ id: 'SecretResponse' });
export const ReplaceSecretResponse = z
  .object({
    secret: SecretMetadata,
    previousValueExpiresAt: z
      .string()
      .meta({ format: 'date-time', description: 'When the replaced value stops signing calls (RFC 3339); null when the value was not changed (allowedOrigins only) or the old one was dropped at once.' })
      .nullable(),
  })
  .meta({ id: 'ReplaceSecretResponse' });
export const SecretList = z
  .object({
    list: z.array(z.object({ secret: SecretMetadata })),
    nextPageToken: z.string().meta({ description: '"" on the last page.' }),
  })
  .meta({ id: 'SecretList' });
