/**
 * Edges of webhook admission (src/webhooks/admission.ts) that webhooks-admission.test.ts did not
 * pin, found as mutants StrykerJS left alive (docs/testing.md#mutation-testing): a slot given
 * back while others from the same address or listener are still in progress, a ticket that enters
 * its listener twice or after its release, the scope of a full listener, and the Content-Length
 * the header pre-check trusts (the exact limit, surrounding blanks, digits with other text).
 */
import {
  DataRateWatch,
  headerVerdict,
  precheckWebhookHeaders,
  WebhookAdmission,
  type PrecheckInput,
} from '../../src/webhooks/admission';
import { PRECHECK_NOW, precheckInput, verdict } from '../helpers/admission';
import { AdmissionRefusal, WebhookRejection } from '../../src/errors';

const NOW = PRECHECK_NOW;

/** The scope of the AdmissionRefusal `fn` throws, or "admitted". */
function refusal(fn: () => unknown): string {
  try {
    fn();
    return 'admitted';
  } catch (err) {
    if (err instanceof AdmissionRefusal) return err.scope;
    throw err;
  }
}

describe('WebhookAdmission: counts after a partial release', () => {
  it('keeps counting the deliveries still in progress from an address when one of them ends', () => {
    const admission = new WebhookAdmission({ global: 100, perListener: 100, perSource: 3 });
    const tickets = [admission.enter('10.0.0.1'), admission.enter('10.0.0.1'), admission.enter('10.0.0.1')];
    expect(refusal(() => admission.enter('10.0.0.1'))).toBe('source');
    tickets[0]!.release();
    // Two are still in progress: one more fits, the one after does not.
    tickets.push(admission.enter('10.0.0.1'));
    expect(refusal(() => admission.enter('10.0.0.1'))).toBe('source');
    // Another address is counted apart.
    expect(refusal(() => admission.enter('10.0.0.2'))).toBe('admitted');
  });

  it('keeps counting the deliveries still in progress for a listener when one of them ends', () => {
    const admission = new WebhookAdmission({ global: 100, perListener: 3, perSource: 100 });
    const tickets = Array.from({ length: 3 }, (_, i) => admission.enter(`10.0.0.${i + 1}`));
    for (const t of tickets) t.enterListener('L1');
    const next = admission.enter('10.0.1.1');
    expect(refusal(() => next.enterListener('L1'))).toBe('listener');
    tickets[0]!.release();
    next.enterListener('L1');
    const last = admission.enter('10.0.1.2');
    expect(refusal(() => last.enterListener('L1'))).toBe('listener');
    expect(refusal(() => last.enterListener('L2'))).toBe('admitted');
  });

  it('gives every slot back once all are released, and counts again from zero', () => {
    const admission = new WebhookAdmission({ global: 2, perListener: 2, perSource: 2 });
    for (let round = 0; round < 3; round++) {
      const a = admission.enter('10.0.0.1');
      const b = admission.enter('10.0.0.1');
      a.enterListener('L1');
      b.enterListener('L1');
      expect(refusal(() => admission.enter('10.0.0.2'))).toBe('global');
      a.release();
      b.release();
      expect(admission.inFlight).toBe(0);
    }
  });
});

describe('AdmissionTicket.enterListener', () => {
  it('counts a delivery against its listener once, however often it is called', () => {
    const admission = new WebhookAdmission({ global: 100, perListener: 2, perSource: 100 });
    const a = admission.enter('10.0.0.1');
    a.enterListener('L1');
    a.enterListener('L1');
    a.enterListener('L2');
    const b = admission.enter('10.0.0.2');
    // Had the repeated calls counted, L1 would be full (and L2 would hold one).
    expect(refusal(() => b.enterListener('L1'))).toBe('admitted');
    const c = admission.enter('10.0.0.3');
    const d = admission.enter('10.0.0.4');
    expect(refusal(() => c.enterListener('L1'))).toBe('listener');
    d.enterListener('L2');
    c.enterListener('L2');
    a.release();
    b.release();
    // a and b gave back their L1 slots: two fit again.
    const e = admission.enter('10.0.0.5');
    const f = admission.enter('10.0.0.6');
    e.enterListener('L1');
    f.enterListener('L1');
  });

  it('does not count a ticket already released (its slot would never come back)', () => {
    const admission = new WebhookAdmission({ global: 100, perListener: 1, perSource: 100 });
    const late = admission.enter('10.0.0.1');
    late.release();
    late.enterListener('L1');
    const next = admission.enter('10.0.0.2');
    expect(refusal(() => next.enterListener('L1'))).toBe('admitted');
  });

  it('refuses a full listener with the listener scope and its message', () => {
    const admission = new WebhookAdmission({ global: 100, perListener: 1, perSource: 100 });
    admission.enter('10.0.0.1').enterListener('L1');
    const second = admission.enter('10.0.0.2');
    let caught: unknown;
    try {
      second.enterListener('L1');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AdmissionRefusal);
    expect(caught).toMatchObject({
      scope: 'listener',
      status: 429,
      message: 'too many deliveries in progress for this listener; retry later',
    });
  });
});

describe('precheckWebhookHeaders: the Content-Length it trusts', () => {
  const bad = { eventId: 'nope' };

  it('refuses early at exactly the body limit, not one byte over it (that body may end in a 413)', () => {
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '65536' })))).toBe(
      '400 bad_event_id',
    );
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '65537' })))).toBe('pass');
    expect(
      verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '10', maxBodyBytes: 10 }))),
    ).toBe('400 bad_event_id');
    expect(
      verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '11', maxBodyBytes: 10 }))),
    ).toBe('pass');
  });

  it('reads a Content-Length with blanks around it', () => {
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: ' 100 ' })))).toBe(
      '400 bad_event_id',
    );
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '\t65536 ' })))).toBe(
      '400 bad_event_id',
    );
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: ' 65537' })))).toBe('pass');
  });

  it('trusts only a Content-Length made of digits alone: digits with other text around them is not one', () => {
    for (const contentLength of ['x100', '100x', '1 00', '+100', '-1', '1e3', '0x10', '', '12345678901']) {
      expect([contentLength, verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength })))]).toEqual([
        contentLength,
        'pass',
      ]);
    }
    expect(verdict(() => precheckWebhookHeaders(precheckInput({ ...bad, contentLength: '0' })))).toBe(
      '400 bad_event_id',
    );
  });
});

describe('headerVerdict', () => {
  it('answers the checked headers or the refusal, and lets any other error through', () => {
    expect(headerVerdict(precheckInput({ eventId: 'nope' }))).toBeInstanceOf(WebhookRejection);
    expect(headerVerdict(precheckInput())).toMatchObject({ timestamp: NOW, signature: 'v1,abc' });
    // A listener whose method is unknown is a bug, not a refusal: it must not pass as a verdict
    // (the intake would take a returned error for the checked headers).
    expect(() => headerVerdict(precheckInput({ authMethod: 'NOPE' as PrecheckInput['authMethod'] }))).toThrow(
      TypeError,
    );
  });
});

describe('DataRateWatch on a clock that does not start at zero', () => {
  it('measures the time since the body started, not since the clock did', () => {
    let now = 1_800_000_000_000;
    const watch = new DataRateWatch(1000, 2000, () => now);
    now += 2000;
    expect(watch.tooSlow()).toBe(false);
    now += 1000;
    expect(watch.tooSlow()).toBe(true);
    watch.add(1000);
    expect(watch.tooSlow()).toBe(false);
    now += 500;
    expect(watch.tooSlow()).toBe(true);
  });
});
