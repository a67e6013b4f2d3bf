/** Which store errors mean "the database cannot be reached now" (503 + Retry-After) and which are bugs (500). */
import { storeError } from '../../src/store/db';
import { UnavailableError } from '../../src/errors';

const withCode = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

describe('storeError', () => {
  it.each(['ECONNREFUSED', 'ECONNRESET', '57P01', '53300', '08000', '08003', '08006', '08001', '08004'])(
    '%s: the database is unavailable',
    (code) => {
      const mapped = storeError(withCode(code));
      expect(mapped).toBeInstanceOf(UnavailableError);
      expect((mapped as UnavailableError).retryAfterSeconds).toBe(2);
    },
  );

  it('a dropped connection reported by message only is unavailable too', () => {
    expect(storeError(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(UnavailableError);
  });

  it.each(['08P01', '42P01', '23505', '22P02'])(
    '%s (a protocol violation, a missing table, a constraint, bad input) is returned unchanged',
    (code) => {
      const err = withCode(code);
      expect(storeError(err)).toBe(err);
    },
  );
});
