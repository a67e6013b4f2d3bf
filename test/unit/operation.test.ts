/**
 * The operation table's mounting (src/http/operation.ts) on a real Koa app with the service's
 * error middleware: the declared path becomes the route, the handler gets the path parameters,
 * and a body declared `validation: 'schema'` is parsed by its schema (typed, or a 400 naming the
 * field) where the handler asks for it, while `validation: 'handler'` hands over the JSON object;
 * the handler's answer is typed by the `ok` schema.
 * Public operations only: the access checks are covered route by route in
 * test/integration/route-role-matrix.test.ts.
 */
import Koa from 'koa';
import Router from '@koa/router';
import request from 'supertest';
import { z } from 'zod';
import { createLogger } from '../../src/logger';
import { errorMiddleware } from '../../src/http/errors';
import type { AppDeps } from '../../src/http/context';
import { koaPath, mountOperations, operation } from '../../src/http/operation';

const Item = z.object({ name: z.string().min(1), size: z.number().int().default(1) });
const Raw = z.object({ raw: z.record(z.string(), z.unknown()) });

// The answer is typed by the declared `ok` schema: a handler that returns another shape does not
// compile (`npm run typecheck` fails on an unused @ts-expect-error if it ever does).
operation({
  method: 'get',
  path: '/typed',
  operationId: 'typed',
  tag: 'T',
  summary: 's',
  access: 'public',
  ok: Item,
  errors: [],
  // @ts-expect-error `size` is missing from the answer
  handle: () => ({ name: 'n' }),
});
operation({
  method: 'get',
  path: '/typed',
  operationId: 'typed',
  tag: 'T',
  summary: 's',
  access: 'public',
  ok: Item,
  errors: [],
  // @ts-expect-error `size` is a number in the schema
  handle: async () => ({ name: 'n', size: '1' }),
});

/** Public operations read no dependency. */
const deps = {} as AppDeps;

function app(): ReturnType<Koa['callback']> {
  const operations = [
    operation({
      method: 'post',
      path: '/things/{thing_id}/items/{item_id}',
      operationId: 'items.put',
      tag: 'T',
      summary: 's',
      access: 'public',
      body: { schema: Item, required: true, validation: 'schema' },
      ok: Item,
      errors: [400],
      handle: async (input) => {
        const body = await input.body();
        return { thing: input.params.thing_id, item: input.params.item_id, name: body.name, size: body.size };
      },
    }),
    operation({
      method: 'post',
      path: '/raw',
      operationId: 'raw',
      tag: 'T',
      summary: 's',
      access: 'public',
      body: { schema: Item, required: true, validation: 'handler' },
      ok: Raw,
      errors: [400],
      handle: async (input) => ({ raw: await input.body() }),
    }),
    operation({
      method: 'get',
      path: '/page',
      operationId: 'page',
      tag: 'T',
      summary: 's',
      access: 'public',
      paged: true,
      ok: Item,
      errors: [],
      handle: (input, ctx) => {
        ctx.status = 202;
        ctx.body = input.page;
        return undefined;
      },
    }),
  ];
  const koa = new Koa();
  koa.use(errorMiddleware(createLogger('silent')));
  const router = mountOperations(new Router(), deps, operations);
  koa.use(router.routes());
  return koa.callback();
}

describe('operation table', () => {
  it('turns OpenAPI path templates into Koa routes', () => {
    expect(koaPath('/api/v2/users/{user_id}/owners/{role_slug}')).toBe('/api/v2/users/:user_id/owners/:role_slug');
    expect(koaPath('/health')).toBe('/health');
  });

  it('hands the handler the path parameters and the body parsed by its schema (defaults applied)', async () => {
    const res = await request(app()).post('/things/t1/items/i%2F2').send({ name: 'a' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ thing: 't1', item: 'i/2', name: 'a', size: 1 });
  });

  it('answers 400 in the one error shape, naming the field, for a body its schema refuses', async () => {
    const res = await request(app()).post('/things/t1/items/i2').send({ name: '', size: 1.5 });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(3);
    expect(res.body.details[0].fieldViolations.map((v: { field: string }) => v.field)).toEqual(['name', 'size']);
  });

  it('leaves a body validated by the handler as the JSON object sent', async () => {
    const res = await request(app()).post('/raw').send({ name: '', extra: true });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ raw: { name: '', extra: true } });
    expect((await request(app()).post('/raw').set('Content-Type', 'application/json').send('[1]')).status).toBe(400);
  });

  it('gives a listing its page and keeps what a handler that returns nothing set', async () => {
    const res = await request(app()).get('/page?pageSize=500&page_token=abc');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ pageSize: 100, pageToken: 'abc' });
  });
});
