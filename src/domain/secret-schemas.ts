/** Request and response schemas of the named outbound secrets (`/api/v1/secrets`), for the OpenAPI document. */
import { z } from 'zod';
import { MAX_SECRET_VALUE_LENGTH } from './outbound-secrets';

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

export const CreateSecretRequest = z.strictObject({ name: name(), value: value() }).meta({ id: 'CreateSecretRequest' });
export const ReplaceSecretRequest = z
  .strictObject({
    value: value(),
    gracePeriod: z
      .string()
      .regex(/^\d{1,7}(\.\d{1,9})?s$/)
      .optional()
      .meta({
        description:
          'How long the replaced value keeps signing callWebhook requests next to the new one, as seconds ("86400s", the default; at most "604800s"); "0s" drops it at once. Header values use the new value at once.',
      }),
  })
  .meta({ id: 'ReplaceSecretRequest' });

export const SecretMetadata = z
  .strictObject({
    name: name(),
    createdAt: z.string().meta({ description: 'RFC 3339.' }),
    updatedAt: z.string().meta({ description: 'RFC 3339: when the value was last set (create or rotation).' }),
  })
  .meta({ id: 'Secret', description: 'A named outbound secret: its name and timestamps only, never its value.' });

export const SecretResponse = z.object({ secret: SecretMetadata }).meta({ id: 'SecretResponse' });
export const ReplaceSecretResponse = z
  .object({
    secret: SecretMetadata,
    previousValueExpiresAt: z
      .string()
      .meta({ format: 'date-time', description: 'When the replaced value stops signing calls (RFC 3339); null when it was dropped at once.' })
      .nullable(),
  })
  .meta({ id: 'ReplaceSecretResponse' });
export const SecretList = z
  .object({
    list: z.array(z.object({ secret: SecretMetadata })),
    nextPageToken: z.string().meta({ description: '"" on the last page.' }),
  })
  .meta({ id: 'SecretList' });
