import { MAX_DURATION_SECONDS, parseDuration } from '../../src/duration';

describe('parseDuration', () => {
  it.each([
    ['3600s', 3_600_000],
    ['1.5s', 1500],
    ['0s', 0],
    ['0.000000001s', 1],
    ['0.25s', 250],
    [`${MAX_DURATION_SECONDS}s`, MAX_DURATION_SECONDS * 1000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    '',
    '1',
    '1m',
    '-1s',
    '1.s',
    '.5s',
    '1.0000000001s',
    ' 1s',
    '1e3s',
    `${MAX_DURATION_SECONDS + 1}s`,
    `${MAX_DURATION_SECONDS}.5s`,
  ])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
