/**
 * The layer rules of eslint.config.js (docs/architecture.md#layers): an import that climbs, or
 * goes sideways between two folders of one layer, is a lint error; one that points down is not.
 * Linted as text at a real path, with the project's own rule configuration.
 */
import path from 'node:path';
import { ESLint, type Linter } from 'eslint';

const ROOT = path.resolve(__dirname, '../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const projectConfig = require('../../eslint.config.js') as Linter.Config[];
const layerConfig = projectConfig.find((entry) => entry.rules?.['import/no-restricted-paths'] !== undefined);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const tsParser = require('@typescript-eslint/parser') as Linter.Parser;

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [
    { files: ['**/*.ts'], languageOptions: { parser: tsParser, sourceType: 'module' } },
    { ...layerConfig!, files: ['**/*.ts'] },
  ],
});

async function layerErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: path.join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'import/no-restricted-paths').map((m) => m.message);
}

describe('layers the linter enforces', () => {
  it('finds the layer rule in the project configuration', () => {
    expect(layerConfig?.files).toEqual(['src/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts']);
    expect(Object.keys(layerConfig?.rules ?? {})).toEqual(['import/no-restricted-paths']);
  });

  it.each([
    [
      'the store importing the domain (type only)',
      'src/store/apps.ts',
      "import type { RunEngine } from '../domain/engine';",
    ],
    ['the steps importing the store', 'src/steps/wait.ts', "import { openDb } from '../store/db';"],
    [
      'activities importing the Temporal adapter',
      'activities/lanes.ts',
      "import { createTemporalEngine } from '../src/temporal/engine';",
    ],
    [
      'the workflow importing activities (same layer)',
      'workflows/lane.ts',
      "import type { ActivityDeps } from '../activities';",
    ],
    [
      'the domain importing the delivery intake',
      'src/domain/automations.ts',
      "import { ListenerCache } from '../delivery/listener-cache';",
    ],
    ['src importing scripts', 'src/main.ts', "import cli from '../scripts/temporal-cli.js';"],
    ['a ground-floor file importing the store', 'src/config.ts', "import type { Db } from './store/db';"],
  ])('refuses %s', async (_name, file, source) => {
    expect(await layerErrors(file, source)).toEqual([expect.stringContaining('may import only layers below it')]);
  });

  it.each([
    [
      'the Temporal adapter importing the workflow code (type only)',
      'src/temporal/engine.ts',
      "import type { automation } from '../../workflows';",
    ],
    [
      'the Temporal adapter importing the activities',
      'src/temporal/worker.ts',
      "import { createActivities } from '../../activities';",
    ],
    [
      'the composition root importing the activities',
      'src/compose.ts',
      "import { createActivities } from '../activities';",
    ],
  ])('refuses %s: only the process composes them', async (_name, file, source) => {
    expect(await layerErrors(file, source)).toEqual([expect.stringContaining('only src/main.ts imports')]);
  });

  it.each([
    ['the domain importing the store', 'src/domain/apps.ts', "import type { Db } from '../store/db';"],
    [
      'the adapter importing the domain port',
      'src/temporal/engine.ts',
      "import type { RunEngine } from '../domain/engine';",
    ],
    [
      'the workflow importing the contract',
      'workflows/lane.ts',
      "import type { AutomationActivities } from '../src/contract/activities';",
    ],
    ['the process importing the activities', 'src/main.ts', "import { createActivities } from '../activities';"],
    [
      'the Temporal adapter importing the workflow contract',
      'src/temporal/engine.ts',
      "import { AUTOMATION_WORKFLOW } from '../contract/workflows';",
    ],
    [
      'the store importing the error tree (ground floor)',
      'src/store/db.ts',
      "import { UnavailableError } from '../errors';",
    ],
    ['a ground-floor file importing another', 'src/logger.ts', "import { prettyDestination } from './log-pretty';"],
  ])('allows %s', async (_name, file, source) => {
    expect(await layerErrors(file, source)).toEqual([]);
  });
});
