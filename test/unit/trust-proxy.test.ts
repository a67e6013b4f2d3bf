/**
 * TRUST_PROXY is a hop count: the source address is the N-th X-Forwarded-For entry from the right,
 * so an entry the client forged at the left never becomes the source.
 */
import Koa from 'koa';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { clientAddress, proxyOptions } from '../../src/http/proxy';
import { ConfigError } from '../../src/errors';

function ipApp(hops: number): ReturnType<Koa['callback']> {
  const app = new Koa(proxyOptions(hops));
  app.use((ctx) => {
    ctx.body = { ip: ctx.ip };
  });
  return app.callback();
}

describe('TRUST_PROXY', () => {
  it.each([
    [undefined, 0],
    ['', 0],
    ['false', 0],
    ['0', 0],
    ['1', 1],
    ['2', 2],
  ])('TRUST_PROXY=%p is %p hops, without a warning', (raw, hops) => {
    const config = loadConfig(raw === undefined ? {} : { TRUST_PROXY: raw });
    expect(config.trustProxy).toBe(hops);
    expect(config.warnings).toEqual([]);
  });

  it('true means one proxy and says so in a warning', () => {
    const config = loadConfig({ TRUST_PROXY: 'true' });
    expect(config.trustProxy).toBe(1);
    expect(config.warnings.join(' ')).toMatch(/TRUST_PROXY=1/);
  });

  it.each(['-1', '1.5', 'maybe', '11'])('refuses TRUST_PROXY=%p', (raw) => {
    expect(() => loadConfig({ TRUST_PROXY: raw })).toThrow(ConfigError);
  });

  it('0: the socket address, whatever X-Forwarded-For says', async () => {
    const res = await request(ipApp(0)).get('/').set('X-Forwarded-For', '203.0.113.7');
    expect(res.body.ip).not.toBe('203.0.113.7');
  });

  it('1: the entry the one proxy appended (rightmost), not the forged leftmost one', async () => {
    const res = await request(ipApp(1)).get('/').set('X-Forwarded-For', '10.0.0.1, 198.51.100.9');
    expect(res.body.ip).toBe('198.51.100.9');
  });

  it('2: the second entry from the right', async () => {
    const res = await request(ipApp(2)).get('/').set('X-Forwarded-For', '10.0.0.1, 198.51.100.9, 192.0.2.1');
    expect(res.body.ip).toBe('198.51.100.9');
  });
});

describe('clientAddress (the webhook receiver, which answers before Koa)', () => {
  /** Koa's ctx.ip and clientAddress for the same request, side by side. */
  function bothApp(hops: number): ReturnType<Koa['callback']> {
    const app = new Koa(proxyOptions(hops));
    app.use((ctx) => {
      ctx.body = { koa: ctx.ip, ours: clientAddress(ctx.req, hops) };
    });
    return app.callback();
  }

  const headers: Array<string | undefined> = [
    undefined,
    '',
    '203.0.113.7',
    '10.0.0.1, 198.51.100.9',
    '10.0.0.1,198.51.100.9 ,  192.0.2.1',
    ' , 192.0.2.1',
    '192.0.2.1, ',
    ',,',
    '2001:db8::1, ::ffff:192.0.2.5',
  ];
  for (const hops of [0, 1, 2, 3]) {
    it.each(headers.map((h) => [h]))(
      `hops=${hops}, X-Forwarded-For %p: the same address as Koa's ctx.ip`,
      async (header) => {
        const req = request(bothApp(hops)).get('/');
        const res = await (header === undefined ? req : req.set('X-Forwarded-For', header));
        expect(typeof res.body.koa).toBe('string');
        expect(res.body.ours).toBe(res.body.koa);
      },
    );
  }

  it('1 hop: the rightmost entry, trimmed; the socket address when that entry is empty', async () => {
    const one = await request(bothApp(1)).get('/').set('X-Forwarded-For', '10.0.0.1,  198.51.100.9 ');
    expect(one.body.ours).toBe('198.51.100.9');
    const empty = await request(bothApp(1)).get('/').set('X-Forwarded-For', '198.51.100.9, ');
    expect(empty.body.ours).toMatch(/127\.0\.0\.1|::1/);
  });
});
