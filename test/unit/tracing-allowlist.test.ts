/**
 * The span allowlist (src/tracing/allowlist.ts): what of a span's name, attributes, events and
 * status may leave the process.
 */
import { allowedAttributes, allowedSpan, allowedSpanName } from '../../src/tracing/allowlist';

describe('the span allowlist', () => {
  it('keeps the listed attributes with scalar values, drops every other key and any value with a query', () => {
    expect(
      allowedAttributes({
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'http.route': '/api/v1/automations/{id}',
        'server.address': 'hooks.example.com',
        'step.id': 'notify',
        'url.full': 'https://hooks.example.com/x/secret?token=t',
        'url.path': '/x/secret',
        'url.query': 'token=t',
        'http.target': '/x/secret?token=t',
        'http.request.header.authorization': ['Bearer t'],
        'db.statement': "select 'ssn'",
        'automation.id': 'a?b=c',
        'execution.id': 'x'.repeat(300),
      }),
    ).toEqual({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'http.route': '/api/v1/automations/{id}',
      'server.address': 'hooks.example.com',
      'step.id': 'notify',
    });
  });

  it('a span name with a path passes only as METHOD <http.route>; otherwise it becomes the method', () => {
    expect(allowedSpanName('RunWorkflow:automation', {})).toBe('RunWorkflow:automation');
    const route = { 'http.request.method': 'GET', 'http.route': '/api/v1/apps/{id}' };
    expect(allowedSpanName('GET /api/v1/apps/{id}', route)).toBe('GET /api/v1/apps/{id}');
    expect(allowedSpanName('GET /api/v1/apps/42?x=1', route)).toBe('GET');
    expect(allowedSpanName('POST /hooks/secret', {})).toBe('span');
  });

  it('an exception event keeps its type only; a status keeps its code, not its message', () => {
    const span = {
      name: 'Step:callWebhook',
      attributes: { 'step.id': 'hook', 'url.full': 'https://h/p?q' },
      events: [{ name: 'exception', time: [0, 0], attributes: { 'exception.type': 'E', 'exception.message': 'tok' } }],
      links: [{ attributes: { 'url.full': 'https://h/p' } }],
      status: { code: 2, message: 'tok' },
      spanContext: () => ({ traceId: 't', spanId: 's' }),
    };
    const allowed = allowedSpan(span);
    expect([allowed.name, allowed.attributes, allowed.events[0]!.attributes, allowed.links[0]!.attributes]).toEqual([
      'Step:callWebhook',
      { 'step.id': 'hook' },
      { 'exception.type': 'E' },
      {},
    ]);
    expect((allowed as unknown as { status: unknown }).status).toEqual({ code: 2 });
    expect(allowed.spanContext()).toEqual({ traceId: 't', spanId: 's' });
  });
});
