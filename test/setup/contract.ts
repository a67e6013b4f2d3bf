/**
 * Loaded (jest setupFilesAfterEnv) by every project of jest.config.js: fails the test during which
 * a test service sent a response its OpenAPI document does not declare (test/helpers/contract.ts
 * records them), and the file when one was sent in a `beforeAll`/`afterAll`.
 */
import { takeDrifts } from '../helpers/contract';

function failOnDrift(): void {
  const drifts = takeDrifts();
  if (drifts.length > 0) {
    throw new Error(`${drifts.length} response(s) do not match GET /api/openapi.json:\n${drifts.join('\n')}`);
  }
}

afterEach(failOnDrift);
afterAll(failOnDrift);
