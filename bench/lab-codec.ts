/**
 * `node -r ./scripts/swc-register.js bench/lab-codec.ts [n]`: CPU µs per payload of the payload
 * codec's encode, on the payloads one accepted webhook's start carries (the run's input with a
 * 1 KB trigger, the memo's two fields, the summary). A lab for docs/performance.md#labs.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { webhookBody } from './automation';
import { EncryptionCodec, newPayloadKeyEntry, parsePayloadKeys } from '../src/temporal/codec';

const codec = new EncryptionCodec(parsePayloadKeys(newPayloadKeyEntry()));
const input = {
  automationId: '0193b0a2-8f5e-7c3d-9a1b-2c3d4e5f6a7b',
  version: 3,
  listenerId: 'AbCdEfGhIjKlMnOpQrStUv',
  eventId: '6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f',
  receivedAt: new Date().toISOString(),
  trigger: JSON.parse(webhookBody({})) as unknown,
};
const payloads = [
  input,
  'bench automation',
  3,
  'bench automation (v3) — event 6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f',
].map((value) => defaultPayloadConverter.toPayload(value));

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 50_000);
  for (let i = 0; i < 5_000; i++) await codec.encode(payloads);
  for (let round = 0; round < 3; round++) {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) await codec.encode(payloads);
    const used = process.cpuUsage(before);
    console.log(
      `round ${round + 1}: ${((used.user + used.system) / (n * payloads.length)).toFixed(2)} µs CPU per payload (${payloads.length} payloads per start)`,
    );
  }
}

void main();
