/**
 * The origin a callWebhook URL expression fixes whatever the run's input (src/cel/static-origin.ts):
 * a named secret may only go to the origins it allows, and on save a URL's origin is known only
 * when nothing the run supplies can change its scheme, host or port. No unit test reached this
 * module before StrykerJS pointed at it (docs/testing.md#mutation-testing).
 */
import { staticOrigin } from '../../src/cel/static-origin';

describe('staticOrigin', () => {
  it.each<[string, string]>([
    // only literals: the whole URL is known
    ["'https://api.example/hooks'", 'https://api.example'],
    ["'https://api.example'", 'https://api.example'],
    ["'https://api.example' + '/hooks'", 'https://api.example'],
    ["'HTTPS://API.Example:443/x'", 'https://api.example'],
    ["'http://api.example:8080/x'", 'http://api.example:8080'],
    // a leading literal that closes the authority with /, ? or #
    ["'https://api.example/' + ctx.trigger.path", 'https://api.example'],
    ["'https://api.example:8443/v1/' + ctx.trigger.path", 'https://api.example:8443'],
    ["'https://api.example?id=' + ctx.trigger.id", 'https://api.example'],
    ["'https://api.example#' + ctx.trigger.id", 'https://api.example'],
    ["'https://user@api.example/' + ctx.trigger.id", 'https://api.example'],
    ["'https://[::1]:8080/' + ctx.trigger.id", 'https://[::1]:8080'],
  ])('%s → %s', (source, origin) => {
    expect(staticOrigin(source) ?? 'unknown').toBe(origin);
  });

  it.each([
    // the run could still extend the host or add a port: api.example.evil.test, api.example:1
    "'https://api.example' + ctx.trigger.path",
    "'https://api.example:' + ctx.trigger.port + '/x'",
    // the scheme or authority comes from the run
    'ctx.trigger.url',
    "ctx.trigger.scheme + '://api.example/'",
    "'' + ctx.trigger.url",
    "'https://' + ctx.trigger.host + '/x'",
    // the literal is not at the start of the URL
    "'x https://api.example/' + ctx.trigger.path",
    "' https://api.example/' + ctx.trigger.path",
    // a backslash in the authority: parsers disagree on where the host ends
    "'https://api.example\\\\@other.example/' + ctx.trigger.path",
    // not http(s), no host, or not a URL at all
    "'ftp://api.example/x'",
    "'ftp://api.example/' + ctx.trigger.path",
    "'mailto:a@api.example'",
    "'https://exa mple.example/' + ctx.trigger.path",
    "'https://exa mple.example/x'",
    "'not a url'",
    '1',
    "'https://api.example/x'.lowerAscii()",
    // an expression that does not parse
    "'https://api.example/' +",
  ])('%s → no origin', (source) => {
    expect(staticOrigin(source)).toBeUndefined();
  });
});
