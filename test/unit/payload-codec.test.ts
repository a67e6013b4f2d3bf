/** The AES-256-GCM payload codec: round trip, key ids, rotation, tampering, key parsing and the key file. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  loadPayloadKeys,
  newPayloadKeyEntry,
  parsePayloadKeys,
  PAYLOAD_KEYS_FILE,
} from '../../src/temporal/codec';
import { loadConfig } from '../../src/config';

const MARKER = 'employee-4711@example.com';
const text = (bytes: Uint8Array | undefined | null): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');

describe('EncryptionCodec', () => {
  const first = parsePayloadKeys(newPayloadKeyEntry());
  const second = parsePayloadKeys(newPayloadKeyEntry());

  it('encrypts with the newest key, names it in the metadata, and decodes to the same payload', async () => {
    const codec = new EncryptionCodec([...second, ...first]);
    const payload = defaultPayloadConverter.toPayload({ email: MARKER });
    const [encoded] = await codec.encode([payload]);
    expect(text(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(encoded!.metadata![KEY_ID_METADATA])).toBe(second[0]!.id);
    expect(Buffer.from(encoded!.data!).includes(MARKER)).toBe(false);
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ email: MARKER });
  });

  it('after a rotation, payloads made with the old key still decode; without the old key they do not', async () => {
    const before = new EncryptionCodec(first);
    const [old] = await before.encode([defaultPayloadConverter.toPayload(MARKER)]);
    const rotated = new EncryptionCodec([...second, ...first]);
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toBe(MARKER);
    const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(MARKER)]);
    expect(text(fresh!.metadata![KEY_ID_METADATA])).toBe(second[0]!.id);
    await expect(new EncryptionCodec(second).decode([old!])).rejects.toThrow(/not configured/);
  });

  it('refuses an altered payload and a payload relabelled to another key id', async () => {
    const codec = new EncryptionCodec([...second, ...first]);
    const [encoded] = await codec.encode([defaultPayloadConverter.toPayload(MARKER)]);
    const flipped = Buffer.from(encoded!.data!);
    flipped[20] = flipped[20]! ^ 1;
    await expect(codec.decode([{ ...encoded!, data: flipped }])).rejects.toThrow(/does not open/);
    const relabelled = {
      ...encoded!,
      metadata: { ...encoded!.metadata, [KEY_ID_METADATA]: Buffer.from(first[0]!.id) },
    };
    await expect(codec.decode([relabelled])).rejects.toThrow(/does not open/);
  });

  it('draws a fresh random IV for every payload, past a refill of its pool, and gives each payload its own metadata bytes', async () => {
    const codec = new EncryptionCodec(first);
    // 600 payloads: more than two fills of the IV pool (256 IVs each).
    const encoded = await codec.encode(Array.from({ length: 600 }, (_, i) => defaultPayloadConverter.toPayload({ i })));
    const ivs = new Set(encoded.map((payload) => Buffer.from(payload.data!).subarray(0, 12).toString('hex')));
    expect(ivs.size).toBe(600);
    const decoded = await codec.decode(encoded);
    expect(decoded.map((payload) => defaultPayloadConverter.fromPayload(payload))).toEqual(
      Array.from({ length: 600 }, (_, i) => ({ i })),
    );
    encoded[0]!.metadata![KEY_ID_METADATA]![0] = 0x21;
    expect(text(encoded[1]!.metadata![KEY_ID_METADATA])).toBe(first[0]!.id);
    expect(text((await codec.encode([defaultPayloadConverter.toPayload(1)]))[0]!.metadata![KEY_ID_METADATA])).toBe(
      first[0]!.id,
    );
  });

  it('passes payloads that were never encrypted unchanged', async () => {
    const plain = defaultPayloadConverter.toPayload({ a: 1 });
    expect(await new EncryptionCodec(first).decode([plain])).toEqual([plain]);
  });
});

describe('payload keys', () => {
  it('parses kid:key lists (newest first) and refuses bad ones', () => {
    const hex = 'ab'.repeat(32);
    const keys = parsePayloadKeys(`k2:${hex}, k1:${Buffer.alloc(32, 7).toString('base64')}`);
    expect(keys.map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(keys[0]!.key.equals(Buffer.from(hex, 'hex'))).toBe(true);
    expect(() => parsePayloadKeys('')).toThrow(/no key/);
    expect(() => parsePayloadKeys('nokey')).toThrow(/kid:key/);
    expect(() => parsePayloadKeys('k1:c2hvcnQ')).toThrow(/32 bytes/);
    expect(() => new EncryptionCodec(parsePayloadKeys(`k1:${hex},k1:${hex}`))).toThrow(/twice/);
  });

  it('makes the key file once, with mode 0600, and reads it back', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payload-keys-'));
    try {
      const made = loadPayloadKeys(undefined, dir);
      expect(made.source).toBe('generated');
      expect(fs.statSync(path.join(dir, PAYLOAD_KEYS_FILE)).mode & 0o777).toBe(0o600);
      const again = loadPayloadKeys(undefined, dir);
      expect(again.source).toBe('file');
      expect(again.keys[0]!.key.equals(made.keys[0]!.key)).toBe(true);
      expect(loadPayloadKeys(newPayloadKeyEntry(), dir).source).toBe('env');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('codec configuration', () => {
  it('allows the embedded UI origin and loopback callers only with the embedded dev server', () => {
    const embedded = loadConfig({ TEMPORAL_UI_PORT: '9233' }).codec;
    expect(embedded.corsOrigins).toEqual(['http://127.0.0.1:9233', 'http://localhost:9233']);
    expect(embedded.allowLoopback).toBe(true);
    const external = loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }).codec;
    expect(external.corsOrigins).toEqual([]);
    expect(external.allowLoopback).toBe(false);
    const configured = loadConfig({
      TEMPORAL_ADDRESS: 'temporal:7233',
      CODEC_CORS_ORIGINS: 'https://ui.example.com',
      CODEC_ALLOW_LOOPBACK: 'true',
    }).codec;
    expect(configured).toMatchObject({ corsOrigins: ['https://ui.example.com'], allowLoopback: true });
    expect(() => loadConfig({ CODEC_CORS_ORIGINS: 'https://ui.example.com/path' })).toThrow(/CODEC_CORS_ORIGINS/);
  });
});
