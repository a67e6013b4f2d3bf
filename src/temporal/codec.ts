/**
 * Payloads encrypted before they reach Temporal: an AES-256-GCM `PayloadCodec` used by the API's
 * client and by the workers (never inside the workflow sandbox: codecs run around it, so the
 * workflow bundle does not import Node crypto). Each encrypted payload carries the id of its key
 * in its metadata; encode uses the newest key, decode any configured key, so keys rotate by
 * putting a new key first and keeping the old ones while runs that used them are retained.
 *
 * Keys: PAYLOAD_KEYS = `kid:key,kid:key,...`, newest first, each key 32 bytes as base64url, base64
 * or hex; unset = the file DATA_DIR/payload.keys (one `kid:key` per line, newest first), made with
 * one fresh key and mode 0600 when missing.
 */
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomBytes,
  randomFillSync,
  type KeyObject,
} from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PayloadKeyError } from '../errors';

/** The `encoding` of an encrypted payload (the Web UI shows it until a codec endpoint decodes it). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key that encrypted the payload. */
export const KEY_ID_METADATA = 'encryption-key-id';
export const PAYLOAD_KEYS_FILE = 'payload.keys';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** IVs drawn from the system's random source at a time: one call per this many payloads, not one each. */
const IVS_PER_FILL = 256;
const ENCRYPTED_ENCODING_BYTES = Buffer.from(ENCRYPTED_ENCODING, 'utf8');

export interface PayloadKey {
  id: string;
  key: Buffer;
}

export class EncryptionCodec implements PayloadCodec {
  /**
   * Keys as KeyObjects, made once: `createCipheriv` with a Buffer key repeats its key-type checks on
   * every call, most of an encryption's cost (docs/performance.md#constants), and every payload of every start,
   * activity and result goes through here.
   */
  private readonly newest: { id: string; key: KeyObject; idBytes: Buffer };
  private readonly byId: Map<string, KeyObject>;
  /**
   * Random IVs, IV_BYTES each, filled IVS_PER_FILL at a time and each handed out once (the next
   * fill overwrites them only after all were used): the same random 96-bit IVs as one
   * `randomBytes` per payload, without a call into the random source for every payload.
   */
  private readonly ivs = Buffer.alloc(IV_BYTES * IVS_PER_FILL);
  private nextIv = IVS_PER_FILL;

  /** `keys` newest first: the first encrypts, all decrypt. */
  constructor(keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new PayloadKeyError('at least one payload key is required');
    const byId = new Map<string, KeyObject>();
    for (const { id, key } of keys) {
      if (!KEY_ID.test(id))
        throw new PayloadKeyError(`payload key id "${id}" must be 1-64 characters of A-Z a-z 0-9 . _ -`);
      if (key.length !== 32) throw new PayloadKeyError(`payload key "${id}" must be 32 bytes`);
      if (byId.has(id)) throw new PayloadKeyError(`payload key id "${id}" appears twice`);
      byId.set(id, createSecretKey(key));
    }
    this.newest = { id: keys[0]!.id, key: byId.get(keys[0]!.id)!, idBytes: Buffer.from(keys[0]!.id, 'utf8') };
    this.byId = byId;
  }

  /** Id of the key new payloads are encrypted with. */
  get currentKeyId(): string {
    return this.newest.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encodeOne(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decodeOne(payload));
  }

  encodeOne(payload: Payload): Payload {
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = this.takeIv();
    const { key, idBytes } = this.newest;
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    // The key id is authenticated too: a payload cannot be relabelled to another key.
    cipher.setAAD(idBytes);
    const ciphertext = cipher.update(plain);
    const rest = cipher.final(); // empty for GCM (a stream mode); kept so no byte is ever dropped
    return {
      // Copies: the metadata's bytes belong to the payload (a caller may change them).
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING_BYTES),
        [KEY_ID_METADATA]: Buffer.from(idBytes),
      },
      data: Buffer.concat(
        [iv, ciphertext, rest, cipher.getAuthTag()],
        IV_BYTES + ciphertext.length + rest.length + TAG_BYTES,
      ),
    };
  }

  /** A fresh random IV, never handed out before (see `ivs`). */
  private takeIv(): Buffer {
    if (this.nextIv === IVS_PER_FILL) {
      randomFillSync(this.ivs);
      this.nextIv = 0;
    }
    const start = IV_BYTES * this.nextIv++;
    return this.ivs.subarray(start, start + IV_BYTES);
  }

  /** Payloads that are not encrypted pass unchanged (runs started before encryption was on). */
  decodeOne(payload: Payload): Payload {
    const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
    if (!encoding || Buffer.from(encoding).toString('utf8') !== ENCRYPTED_ENCODING) return payload;
    const idBytes = payload.metadata?.[KEY_ID_METADATA];
    if (!idBytes) throw new ValueError('encrypted payload has no key id');
    const id = Buffer.from(idBytes).toString('utf8');
    const key = this.byId.get(id);
    if (!key) throw new ValueError(`encrypted payload uses key "${id}", which is not configured (PAYLOAD_KEYS)`);
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('encrypted payload is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(id, 'utf8'));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new ValueError(
        `encrypted payload does not open with key "${id}" (altered, or another key with the same id)`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain) as Payload;
  }
}

/** Parses `kid:key,kid:key` (commas or new lines), newest first; keys as base64url, base64 or hex. */
export function parsePayloadKeys(text: string): PayloadKey[] {
  const entries = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .flatMap((line) => line.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new PayloadKeyError('PAYLOAD_KEYS has no key: give kid:key pairs, newest first');
  return entries.map((entry) => {
    const colon = entry.indexOf(':');
    if (colon <= 0)
      throw new PayloadKeyError('PAYLOAD_KEYS entries must be kid:key (the key id, a colon, the 32-byte key)');
    const id = entry.slice(0, colon);
    const material = entry.slice(colon + 1).trim();
    const candidates = [
      /^[0-9a-fA-F]{64}$/.test(material) ? Buffer.from(material, 'hex') : undefined,
      /^[A-Za-z0-9_-]{43}$/.test(material) ? Buffer.from(material, 'base64url') : undefined,
      /^[A-Za-z0-9+/]{43}=?$/.test(material) ? Buffer.from(material, 'base64') : undefined,
    ];
    const key = candidates.find((candidate) => candidate?.length === 32);
    if (!key)
      throw new PayloadKeyError(
        `payload key "${id}" must be 32 bytes as hex (64 characters) or base64/base64url (43-44 characters)`,
      );
    return { id, key };
  });
}

/** A fresh key entry `kid:base64url` (kid = `k` + UTC date + random suffix). */
export function newPayloadKeyEntry(now = new Date()): string {
  const id = `k${now.toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(3).toString('hex')}`;
  return `${id}:${randomBytes(32).toString('base64url')}`;
}

/** The keys from PAYLOAD_KEYS, else from DATA_DIR/payload.keys (made with mode 0600 when missing). */
export function loadPayloadKeys(
  payloadKeys: string | undefined,
  dataDir: string,
): { keys: PayloadKey[]; source: 'env' | 'file' | 'generated'; file?: string } {
  if (payloadKeys) return { keys: parsePayloadKeys(payloadKeys), source: 'env' };
  const file = path.join(dataDir, PAYLOAD_KEYS_FILE);
  if (fs.existsSync(file)) return { keys: parsePayloadKeys(fs.readFileSync(file, 'utf8')), source: 'file', file };
  fs.mkdirSync(dataDir, { recursive: true });
  const entry = newPayloadKeyEntry();
  try {
    fs.writeFileSync(
      file,
      `# Temporal payload keys, newest first (kid:key). Keep old keys while runs using them are retained.\n${entry}\n`,
      {
        mode: 0o600,
        flag: 'wx',
      },
    );
  } catch (err) {
    // Another process (api and worker sharing DATA_DIR) made it first: use that one.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { keys: parsePayloadKeys(fs.readFileSync(file, 'utf8')), source: 'file', file };
  }
  return { keys: parsePayloadKeys(entry), source: 'generated', file };
}

/** The data converter for clients and workers: default JSON conversion, then encryption. */
export function encryptedDataConverter(codec: PayloadCodec): { payloadCodecs: PayloadCodec[] } {
  return { payloadCodecs: [codec] };
}
