/**
 * The header pre-check refuses before the body only what the full check order would refuse
 * anyway, with the same status and reason, whenever the body arrives within its deadline; the
 * admission counts; the data-rate watch.
 */
import { checkWebhookHeaders } from '../../src/webhooks';
import {
  DataRateWatch,
  precheckWebhookHeaders,
  WebhookAdmission,
  type PrecheckInput,
} from '../../src/webhooks/admission';
import { PRECHECK_DEADLINE_MS, PRECHECK_NOW, precheckInput, verdict } from '../helpers/admission';
import { AdmissionRefusal } from '../../src/errors';

const NOW = PRECHECK_NOW;
const DEADLINE_MS = PRECHECK_DEADLINE_MS;

describe('precheckWebhookHeaders', () => {
  it('refuses header failures when Content-Length is within the limit', () => {
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ eventId: 'nope' })))).toBe('400 bad_event_id');
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ signature: undefined })))).toBe('400 missing_header');
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ contentType: 'text/plain' })))).toBe(
      '400 bad_content_type',
    );
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ authMethod: 'JWT', signature: undefined })))).toBe(
      '401 missing_authorization',
    );
    expect(verdict(() => precheckWebhookHeaders(precheckInput()))).toBe('pass');
  });

  it('refuses nothing the body could still turn into a 413: no Content-Length, chunked, or over the limit', () => {
    const bad = { eventId: 'nope', signature: undefined };
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: undefined })))).toBe('pass');
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, transferEncoding: 'chunked' })))).toBe('pass');
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '65537' })))).toBe('pass');
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: 'abc' })))).toBe('pass');
  });

  it('agrees with the full check at every moment the body could complete, near the edges of the timestamp window', () => {
    const cases: Array<Partial<PrecheckInput>> = [];
    for (let offset = -320; offset <= 320; offset++) {
      cases.push({ timestamp: String(NOW + offset) });
      cases.push({ timestamp: String(NOW + offset), eventId: 'nope' });
      cases.push({ timestamp: String(NOW + offset), authMethod: 'JWT', signature: undefined });
    }
    for (const c of cases) {
      const early = verdict(() => precheckWebhookHeaders(precheckInput(c)));
      if (early === 'pass') continue;
      // A refusal before the body must equal the full check's answer at any later moment up to the deadline.
      for (let later = 0; later <= DEADLINE_MS / 1000; later++) {
        expect([
          c,
          later,
          verdict(() => checkWebhookHeaders({ ...precheckInput(c), nowSeconds: NOW + later })),
        ]).toEqual([c, later, early]);
      }
    }
    // A timestamp just beyond the window's future edge may come into it while the body arrives: not refused early.
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ timestamp: String(NOW + 305) })))).toBe('pass');
    // One beyond it even at the deadline is.
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ timestamp: String(NOW + 311) })))).toBe(
      '400 timestamp_out_of_window',
    );
    // A stale one only gets staler.
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ timestamp: String(NOW - 301) })))).toBe(
      '400 timestamp_out_of_window',
    );
    // A bad event id behind a timestamp that may go stale meanwhile: the reason could change, so wait.
    expect(
      verdict(() => precheckWebhookHeaders(precheckInput({ timestamp: String(NOW - 295), eventId: 'nope' }))),
    ).toBe('pass');
  });
});

describe('WebhookAdmission', () => {
  it('caps in-flight deliveries globally, per source and per listener, and releases once', () => {
    const admission = new WebhookAdmission({ global: 4, perListener: 2, perSource: 3 });
    const a = admission.enter('10.0.0.1');
    const b = admission.enter('10.0.0.1');
    a.enterListener('L1');
    b.enterListener('L1');
    const c = admission.enter('10.0.0.1');
    expect(() => c.enterListener('L1')).toThrow(AdmissionRefusal);
    c.enterListener('L2');
    expect(() => admission.enter('10.0.0.1')).toThrow(expect.objectContaining({ scope: 'source' }));
    const d = admission.enter('10.0.0.2');
    expect(() => admission.enter('10.0.0.3')).toThrow(expect.objectContaining({ scope: 'global' }));
    a.release();
    a.release();
    expect(admission.inFlight).toBe(3);
    const e = admission.enter('10.0.0.3');
    e.enterListener('L1');
    for (const t of [b, c, d, e]) t.release();
    expect(admission.inFlight).toBe(0);
  });
});

describe('DataRateWatch', () => {
  it('is never too slow within the grace period, then needs the minimum average rate', () => {
    let now = 0;
    const watch = new DataRateWatch(1000, 2000, () => now);
    now = 2000;
    expect(watch.tooSlow()).toBe(false);
    now = 3000;
    expect(watch.tooSlow()).toBe(true);
    watch.add(1000);
    expect(watch.tooSlow()).toBe(false);
    now = 3500;
    expect(watch.tooSlow()).toBe(true);
  });
});
