/**
 * Committed workflow histories are append-only: every file listed in the manifest is still there,
 * byte for byte (sha256), and every history file is listed. A new release records into a new
 * folder (`npm run record-histories` after bumping package.json's version).
 */
import fs from 'node:fs';
import path from 'node:path';
import { STEP_KINDS } from '../../src/steps';
import { HISTORIES_DIR, listHistoryFiles } from '../../src/temporal/history-replay';
import { MANIFEST, readManifest, sha256 } from '../../scripts/record-histories';

const manifest = readManifest();

function filesOnDisk(): string[] {
  return fs
    .readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => fs.readdirSync(path.join(HISTORIES_DIR, d.name)).map((f) => `${d.name}/${f}`))
    .sort();
}

describe('committed workflow histories', () => {
  it('has a manifest listing every history and input file', () => {
    expect(fs.existsSync(MANIFEST)).toBe(true);
    expect(Object.keys(manifest).sort()).toEqual(filesOnDisk());
  });

  it.each(Object.entries(manifest))('%s is unchanged since it was committed', (file, digest) => {
    const full = path.join(HISTORIES_DIR, file);
    expect(fs.existsSync(full)).toBe(true);
    expect(sha256(full)).toBe(digest);
  });

  it('holds at least 12 histories, each with its input, covering every step kind', () => {
    const histories = listHistoryFiles();
    expect(histories.length).toBeGreaterThanOrEqual(12);
    const kinds = new Set<string>();
    for (const file of histories) {
      const input = JSON.parse(
        fs.readFileSync(path.join(HISTORIES_DIR, file.replace(/\.history\.json$/, '.input.json')), 'utf8'),
      ) as {
        steps: Array<Record<string, unknown>>;
        workflowType?: string;
      };
      // A grant's history (workflows/grant.ts) starts from a grant, not from steps.
      if (input.workflowType === 'grant') continue;
      for (const step of input.steps) for (const kind of STEP_KINDS) if (kind in step) kinds.add(kind);
    }
    expect([...kinds].sort()).toEqual([...STEP_KINDS].sort());
  });
});
