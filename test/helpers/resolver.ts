/**
 * Makes the process's resolver answer one host name with one address (every other name resolves
 * as usual). No machine's DNS can be relied on to hold a public-looking name that resolves to
 * loopback, so the tests of the connect-time address guard name one this way; the guard and the
 * request around it are the real ones. Call `restore()` when done.
 */
import dns from 'node:dns';
import fs from 'node:fs';

export function resolveNameTo(
  hostname: string,
  address: string,
): jest.SpiedFunction<typeof dns.lookup> & { restore(): void } {
  const realLookup = dns.lookup;
  const spy = jest.spyOn(dns, 'lookup').mockImplementation(((name: string, options: unknown, callback: unknown) => {
    if (name === hostname) {
      (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [
        { address, family: address.includes(':') ? 6 : 4 },
      ]);
      return;
    }
    (realLookup as (...args: unknown[]) => void)(name, options, callback);
  }) as typeof dns.lookup);
  return Object.assign(spy, { restore: () => spy.mockRestore() });
}

/**
 * Like `resolveNameTo`, but the answer comes back through libuv's thread pool (a file stat is
 * queued there first), as a real getaddrinfo's does: a pool clogged by other work (scrypt) holds
 * the lookup up just the same, without depending on the machine's resolver for any name.
 */
export function resolveNameThroughThreadPool(
  hostname: string,
  address: string,
): jest.SpiedFunction<typeof dns.lookup> & { restore(): void } {
  const realLookup = dns.lookup;
  const family = address.includes(':') ? 6 : 4;
  const spy = jest.spyOn(dns, 'lookup').mockImplementation(((name: string, options: unknown, callback: unknown) => {
    if (typeof options === 'function') [options, callback] = [{}, options];
    if (name !== hostname) {
      (realLookup as (...args: unknown[]) => void)(name, options, callback);
      return;
    }
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true;
    fs.stat(__filename, () => {
      if (all)
        (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [
          { address, family },
        ]);
      else (callback as (err: null, address: string, family: number) => void)(null, address, family);
    });
  }) as typeof dns.lookup);
  return Object.assign(spy, { restore: () => spy.mockRestore() });
}
