import { checkWebhookHeaders, isJsonContentType, isUuidV4, type WebhookHeaderInput } from '../../src/webhooks/headers';
import { bearerToken } from '../../src/webhooks/authenticators/jwt';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

const NOW = 1_700_000_000;
const EVENT_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

function hmacInput(overrides: Partial<WebhookHeaderInput> = {}): WebhookHeaderInput {
  return {
    contentType: 'application/json',
    timestamp: String(NOW),
    eventId: EVENT_ID,
    signature: 'H07KL-x37c1d6zTJ6aG_VwlzmA1LfiNzfn1hM40H2PM',
    authorization: undefined,
    authMethod: 'HMAC',
    nowSeconds: NOW,
    ...overrides,
  };
}

function jwtInput(overrides: Partial<WebhookHeaderInput> = {}): WebhookHeaderInput {
  return hmacInput({ signature: undefined, authorization: 'Bearer a.b.c', authMethod: 'JWT', ...overrides });
}

function rejection(fn: () => unknown): { status: number; reason: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookRejection);
    const { reason } = err as WebhookRejection;
    return { status: webhookStatus(reason), reason };
  }
  throw new Error('expected a WebhookRejection');
}

describe('checkWebhookHeaders: accepted', () => {
  it('returns the parsed HMAC headers', () => {
    expect(checkWebhookHeaders(hmacInput())).toEqual({
      timestamp: NOW,
      eventId: EVENT_ID,
      timestampHeader: String(NOW),
      eventIdHeader: EVENT_ID,
      signature: 'H07KL-x37c1d6zTJ6aG_VwlzmA1LfiNzfn1hM40H2PM',
    });
  });

  it('returns the bearer token for JWT', () => {
    const checked = checkWebhookHeaders(jwtInput());
    expect(checked.token).toBe('a.b.c');
    expect(checked.signature).toBeUndefined();
  });

  it('lower-cases an upper-case event id and keeps the header as sent', () => {
    const checked = checkWebhookHeaders(hmacInput({ eventId: EVENT_ID.toUpperCase() }));
    expect(checked.eventId).toBe(EVENT_ID);
    expect(checked.eventIdHeader).toBe(EVENT_ID.toUpperCase());
  });

  it.each([
    'application/json',
    'Application/JSON',
    'application/json; charset=utf-8',
    'application/json;charset="UTF-8"',
    ' application/json ',
  ])('accepts Content-Type %j', (contentType) => {
    expect(checkWebhookHeaders(hmacInput({ contentType }))).toEqual(checkWebhookHeaders(hmacInput()));
  });

  it.each([-300, 300, 0, -1, 1])('accepts a timestamp %i s from now', (offset) => {
    expect(checkWebhookHeaders(hmacInput({ timestamp: String(NOW + offset) })).timestamp).toBe(NOW + offset);
  });

  it('drops fractions of the current time', () => {
    expect(checkWebhookHeaders(hmacInput({ timestamp: String(NOW - 300), nowSeconds: NOW + 0.9 })).timestamp).toBe(
      NOW - 300,
    );
    expect(
      rejection(() => checkWebhookHeaders(hmacInput({ timestamp: String(NOW - 301), nowSeconds: NOW + 0.9 }))),
    ).toEqual({
      status: 400,
      reason: 'timestamp_out_of_window',
    });
  });

  it('ignores Authorization on HMAC and Webhook-Signature on JWT listeners', () => {
    expect(checkWebhookHeaders(hmacInput({ authorization: 'Basic x' }))).toEqual(checkWebhookHeaders(hmacInput()));
    const jwt = checkWebhookHeaders(jwtInput({ signature: 'x' }));
    expect(jwt.token).toBe('a.b.c');
    expect(jwt.signature).toBeUndefined();
  });
});

describe('checkWebhookHeaders: 400', () => {
  it.each([
    ['Content-Type', { contentType: undefined }],
    ['Content-Type (empty)', { contentType: '' }],
    ['Webhook-Timestamp', { timestamp: undefined }],
    ['Webhook-Timestamp (blank)', { timestamp: '  ' }],
    ['Webhook-Event-Id', { eventId: undefined }],
    ['Webhook-Signature', { signature: undefined }],
    ['Webhook-Signature (empty)', { signature: '' }],
  ])('refuses a missing %s (HMAC)', (_name, overrides) => {
    expect(rejection(() => checkWebhookHeaders(hmacInput(overrides)))).toEqual({
      status: 400,
      reason: 'missing_header',
    });
  });

  it.each([
    ['Content-Type', { contentType: undefined }],
    ['Webhook-Timestamp', { timestamp: undefined }],
    ['Webhook-Event-Id', { eventId: undefined }],
  ])('refuses a missing %s (JWT), before looking at Authorization', (_name, overrides) => {
    expect(rejection(() => checkWebhookHeaders(jwtInput({ ...overrides, authorization: undefined })))).toEqual({
      status: 400,
      reason: 'missing_header',
    });
  });

  it('names every missing header, and no value', () => {
    let message: string | undefined;
    try {
      checkWebhookHeaders(hmacInput({ contentType: undefined, signature: undefined }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('missing required headers: Content-Type, Webhook-Signature');
  });

  it.each([
    'text/plain',
    'application/jsonx',
    'application/json-patch+json',
    'application/x-www-form-urlencoded',
    'application/json; charset=latin1',
    'json',
  ])('refuses Content-Type %j', (contentType) => {
    expect(rejection(() => checkWebhookHeaders(hmacInput({ contentType })))).toEqual({
      status: 400,
      reason: 'bad_content_type',
    });
  });

  it.each([
    '+1700000000',
    '-1700000000',
    '1700000000.0',
    '1.7e9',
    '0x6553f100',
    '1 700000000',
    'abc',
    '1700000000000000',
    '١٧٠٠٠٠٠٠٠٠',
  ])('refuses the timestamp %j', (timestamp) => {
    expect(rejection(() => checkWebhookHeaders(hmacInput({ timestamp })))).toEqual({
      status: 400,
      reason: 'bad_timestamp',
    });
  });

  it.each([-301, 301, -100_000, 100_000])('refuses a timestamp %i s from now', (offset) => {
    expect(rejection(() => checkWebhookHeaders(hmacInput({ timestamp: String(NOW + offset) })))).toEqual({
      status: 400,
      reason: 'timestamp_out_of_window',
    });
  });

  it.each([
    ['v1', 'c232ab00-9414-11ec-b3c8-9f6bdeced846'],
    ['v3', 'a3bb189e-8bf9-3888-9912-ace4e6543002'],
    ['v5', 'a6edc906-2f9f-5fb2-a373-efac406f0ef2'],
    ['v7', '017f22e2-79b0-7cc3-98c4-dc0c0c07398f'],
    ['nil', '00000000-0000-0000-0000-000000000000'],
    ['wrong variant', '3f2504e0-4f89-41d3-ca0c-0305e82c3301'],
    ['no hyphens', '3f2504e04f8941d39a0c0305e82c3301'],
    ['braces', '{3f2504e0-4f89-41d3-9a0c-0305e82c3301}'],
    ['urn', 'urn:uuid:3f2504e0-4f89-41d3-9a0c-0305e82c3301'],
    ['too long', '3f2504e0-4f89-41d3-9a0c-0305e82c33011'],
    ['non-hex', '3f2504e0-4f89-41d3-9a0c-0305e82c330g'],
    ['garbage', 'hello'],
  ])('refuses an event id that is %s', (_name, eventId) => {
    expect(rejection(() => checkWebhookHeaders(hmacInput({ eventId })))).toEqual({
      status: 400,
      reason: 'bad_event_id',
    });
  });

  it('checks Content-Type before the timestamp and the timestamp before the event id', () => {
    expect(
      rejection(() => checkWebhookHeaders(hmacInput({ contentType: 'text/plain', timestamp: 'x', eventId: 'x' })))
        .reason,
    ).toBe('bad_content_type');
    expect(rejection(() => checkWebhookHeaders(hmacInput({ timestamp: '1', eventId: 'x' }))).reason).toBe(
      'timestamp_out_of_window',
    );
  });
});

describe('checkWebhookHeaders: 401 for JWT authorization', () => {
  it.each([undefined, '', '   '])('refuses a missing Authorization (%j)', (authorization) => {
    expect(rejection(() => checkWebhookHeaders(jwtInput({ authorization })))).toEqual({
      status: 401,
      reason: 'missing_authorization',
    });
  });

  it.each(['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', 'a.b.c', `Bearer ${'a'.repeat(17_000)}`])(
    'refuses Authorization %j',
    (authorization) => {
      expect(rejection(() => checkWebhookHeaders(jwtInput({ authorization })))).toEqual({
        status: 401,
        reason: 'bad_authorization',
      });
    },
  );

  it('accepts any case of the Bearer scheme', () => {
    expect(bearerToken('bearer x.y.z')).toBe('x.y.z');
    expect(bearerToken('BEARER  x.y.z')).toBe('x.y.z');
  });
});

describe('isUuidV4 and isJsonContentType', () => {
  it('accepts v4 in either case', () => {
    expect(isUuidV4('3F2504E0-4F89-41D3-9A0C-0305E82C3301')).toBe(true);
    for (const variant of ['8', '9', 'a', 'b', 'A', 'B']) {
      expect(isUuidV4(`3f2504e0-4f89-41d3-${variant}a0c-0305e82c3301`)).toBe(true);
    }
    for (const variant of ['0', '7', 'c', 'f']) {
      expect(isUuidV4(`3f2504e0-4f89-41d3-${variant}a0c-0305e82c3301`)).toBe(false);
    }
  });

  it('accepts crypto.randomUUID output', () => {
    for (let i = 0; i < 50; i++) expect(isUuidV4(crypto.randomUUID())).toBe(true);
  });

  it('parses parameters of the media type', () => {
    expect(isJsonContentType('application/json; boundary=x')).toBe(true);
    expect(isJsonContentType('application/json; charset=utf-16')).toBe(false);
  });
});

describe('exact answers (each found by mutation testing)', () => {
  const message = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message;
    }
    return undefined;
  };

  it.each([
    ['Content-Type', { contentType: undefined }],
    ['Webhook-Timestamp', { timestamp: undefined }],
    ['Webhook-Event-Id', { eventId: undefined }],
    ['Webhook-Signature', { signature: undefined }],
  ])('names a single missing %s, in the singular', (name, overrides) => {
    expect(message(() => checkWebhookHeaders(hmacInput(overrides)))).toBe(`missing required header: ${name}`);
  });

  it('names all four missing headers in the check order', () => {
    expect(
      message(() =>
        checkWebhookHeaders(
          hmacInput({ contentType: undefined, timestamp: undefined, eventId: undefined, signature: undefined }),
        ),
      ),
    ).toBe('missing required headers: Content-Type, Webhook-Timestamp, Webhook-Event-Id, Webhook-Signature');
  });

  it.each([
    ['Content-Type must be application/json', { contentType: 'text/plain' }],
    ['Webhook-Timestamp must be Unix time in whole seconds', { timestamp: '1.5' }],
    ['Webhook-Timestamp is more than 300 seconds away from the current time', { timestamp: String(NOW - 301) }],
    ['Webhook-Event-Id must be a UUID v4', { eventId: 'not-a-uuid' }],
  ])('says %j', (text, overrides) => {
    expect(message(() => checkWebhookHeaders(hmacInput(overrides)))).toBe(text);
  });

  it.each([
    'application/json; charset=utf8',
    'application/json ; charset=utf-8',
    'application/json; charset= utf-8 ',
    'application/json; foo=bar',
    'application/json; foo=latin1',
    'application/json; charset',
  ])('accepts the media type %j', (value) => {
    expect(isJsonContentType(value)).toBe(true);
  });

  it.each([
    'application/json; charset=utf-8""',
    'application/json; charset=""utf-8',
    'application/json; CHARSET = latin1',
    'application/json; charset="latin1"',
  ])('refuses the media type %j', (value) => {
    expect(isJsonContentType(value)).toBe(false);
  });
});
