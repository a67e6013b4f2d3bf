/**
 * The configuration table of docs/operations.md#configuration is the one `npm run docs:config` writes from
 * CONFIG_SCHEMA (src/config.ts): a variable added, removed or re-described in the schema and not in
 * the doc fails here. And the loader reads what the schema says: every integer variable's
 * documented default is the value loaded when it is unset, and an out-of-range value is refused
 * with a message naming it.
 */
import fs from 'node:fs';
import { CONFIG_SCHEMA, CONFIG_VARIABLES, loadConfig } from '../../src/config';
import { ConfigError } from '../../src/errors';
import { configTable, OPERATIONS_DOC, tableIn } from '../../scripts/config-table';

describe('the configuration table of docs/operations.md', () => {
  it('is the table written from CONFIG_SCHEMA (run `npm run docs:config` when this fails)', () => {
    expect(tableIn(fs.readFileSync(OPERATIONS_DOC, 'utf8'))).toBe(configTable());
  });

  it('has one row per variable the loader reads, in the schema order', () => {
    const names = configTable()
      .split('\n')
      .slice(2)
      .map((row) => /^\| `([A-Z_]+)` \|/.exec(row)?.[1]);
    expect(names).toEqual(CONFIG_VARIABLES);
  });
});

describe('the loader follows CONFIG_SCHEMA', () => {
  const integers = CONFIG_VARIABLES.filter((name) => /^integer \d+\.\.\d+$/.test(CONFIG_SCHEMA[name].type));

  it('reads an integer variable unset as its documented default, and refuses one out of its documented range', () => {
    expect(integers.length).toBeGreaterThan(10);
    for (const name of integers) {
      const variable = CONFIG_SCHEMA[name];
      const [, min, max] = /^integer (\d+)\.\.(\d+)$/.exec(variable.type)!;
      // A plain number is the loader's default; anything else (`unset`, `SDK default`, the worker's) leaves it unset.
      const fallback = /^`(\d+)`$/.exec(variable.default)?.[1];
      expect([name, variable.read({}, [])]).toEqual([name, fallback === undefined ? undefined : Number(fallback)]);
      expect([name, variable.read({ [name]: min! }, [])]).toEqual([name, Number(min)]);
      expect([name, variable.read({ [name]: max! }, [])]).toEqual([name, Number(max)]);
      expect(() => loadConfig({ [name]: String(Number(max) + 1) })).toThrow(
        new ConfigError(`${name} must be an integer between ${min} and ${max}`),
      );
    }
  });

  it('arranges the values as Config', () => {
    const config = loadConfig({
      PORT: '9000',
      TEMPORAL_TASK_QUEUE: 'q',
      WORKER_MAX_CACHED_WORKFLOWS: '5',
      ADMIN_PORT: '9464',
      TRUST_PROXY: 'true',
    });
    expect(config.port).toBe(9000);
    expect(config.baseUrl).toBe('http://localhost:9000');
    expect(config.temporal.taskQueue).toBe('q');
    expect(config.worker).toEqual({ maxCachedWorkflows: 5 });
    expect(config.admin).toEqual({ port: 9464, host: '127.0.0.1', token: undefined });
    expect(config.trustProxy).toBe(1);
    expect(config.warnings).toEqual([expect.stringContaining('TRUST_PROXY=true')]);
  });
});
