/**
 * Every link to a section of a doc resolves: a `docs/<doc>.md#<anchor>` in code, tests, scripts and
 * the bench, and every relative Markdown link (`[text](operations.md#memory)`, `(#layers)`) in the
 * docs, the README, the CHANGELOG and bench/README.md, names a heading of that doc by GitHub's
 * slug rules (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats). A
 * comment that points at a doc names its section too, so that it still says where to read once
 * the doc is rewritten.
 */
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CODE_DIRS = ['src', 'activities', 'workflows', 'scripts', 'bench', 'console', 'test'];
const CODE_FILE = /\.(ts|tsx|js|mjs|cjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.data', '.temporal', 'reports', 'test-artifacts']);

/** GitHub's anchor for a heading's text (github-slugger, as GitHub renders Markdown). */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text
    .replace(/`/g, '')
    .replace(/\*\*|__/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** The anchors of a Markdown text: its headings' slugs (outside fenced code), repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const opens = /^\s*(```|~~~)/.exec(line);
    if (opens) {
      if (fence === undefined) fence = opens[1];
      else if (line.trim().startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slugOf(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function filesUnder(dir: string, match: RegExp): string[] {
  const out: string[] = [];
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full, match));
    else if (match.test(entry.name)) out.push(full);
  }
  return out;
}

function markdownFiles(): string[] {
  return [
    ...['README.md', 'CHANGELOG.md', 'bench/README.md'].map((f) => path.join(ROOT, f)).filter((f) => fs.existsSync(f)),
    ...filesUnder(path.join(ROOT, 'docs'), /\.md$/),
  ];
}

interface Reference {
  /** file:line of the reference, for the failure message. */
  at: string;
  /** The doc it points at, absolute. */
  doc: string;
  anchor: string | undefined;
  /** A comment that points at a doc must name a section. */
  needsAnchor: boolean;
}

/** Code with its string literals taken out, to look for comment markers in. */
function withoutStrings(code: string): string {
  return code.replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
}

/** `docs/<doc>.md[#anchor]` in a code file; in a comment, the anchor is required. */
function codeReferences(file: string): Reference[] {
  const refs: Reference[] = [];
  let inBlock = false;
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      for (const match of line.matchAll(/docs\/([a-z-]+)\.md(?:#([\w-]+))?/g)) {
        const before = line.slice(0, match.index);
        const inComment = inBlock ? !before.includes('*/') : /\/\/|\/\*/.test(withoutStrings(before));
        refs.push({
          at: `${path.relative(ROOT, file)}:${index + 1}`,
          doc: path.join(ROOT, 'docs', `${match[1]}.md`),
          anchor: match[2],
          needsAnchor: inComment,
        });
      }
      // Where the line leaves the block-comment state: each `/*` outside a string opens, `*/` closes.
      let rest = line;
      for (;;) {
        if (inBlock) {
          const end = rest.indexOf('*/');
          if (end < 0) break;
          inBlock = false;
          rest = rest.slice(end + 2);
        } else {
          const code = withoutStrings(rest);
          const lineComment = code.indexOf('//');
          const start = code.indexOf('/*');
          if (start < 0 || (lineComment >= 0 && lineComment < start)) break;
          inBlock = true;
          rest = code.slice(start + 2);
        }
      }
    });
  return refs;
}

/** Relative Markdown links to a .md file or to an anchor of the same file, and plain `docs/<doc>.md#anchor`. */
function markdownReferences(file: string): Reference[] {
  const refs: Reference[] = [];
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  let fence = false;
  lines.forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    if (fence) return;
    const at = `${path.relative(ROOT, file)}:${index + 1}`;
    for (const match of line.matchAll(/\]\(([^)\s]*)\)/g)) {
      const target = match[1]!;
      if (/^[a-z]+:/i.test(target)) continue; // http:, mailto:
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      if (pathPart === '') refs.push({ at, doc: file, anchor, needsAnchor: false });
      else if (pathPart.endsWith('.md'))
        refs.push({ at, doc: path.resolve(path.dirname(file), pathPart), anchor, needsAnchor: false });
    }
    for (const match of line.matchAll(/(?<![\w/(])docs\/([a-z-]+)\.md#([\w-]+)/g)) {
      refs.push({ at, doc: path.join(ROOT, 'docs', `${match[1]}.md`), anchor: match[2], needsAnchor: false });
    }
  });
  return refs;
}

/** What is wrong with each reference: a missing doc, an anchor it has no heading for, a comment without one. */
export function brokenReferences(refs: Reference[]): string[] {
  const anchors = new Map<string, Set<string>>();
  const of = (doc: string): Set<string> | undefined => {
    if (!anchors.has(doc) && fs.existsSync(doc)) anchors.set(doc, anchorsOf(fs.readFileSync(doc, 'utf8')));
    return anchors.get(doc);
  };
  const broken: string[] = [];
  for (const ref of refs) {
    const name = path.relative(ROOT, ref.doc);
    const known = of(ref.doc);
    if (!known) broken.push(`${ref.at}: ${name} does not exist`);
    else if (ref.anchor !== undefined && !known.has(ref.anchor))
      broken.push(`${ref.at}: ${name} has no section #${ref.anchor}`);
    else if (ref.anchor === undefined && ref.needsAnchor)
      broken.push(`${ref.at}: a comment points at ${name} without naming its section (#anchor)`);
  }
  return broken;
}

describe('slugOf: GitHub anchors', () => {
  it.each([
    ['Layers', 'layers'],
    ['Run control ', 'run-control'],
    ['The C heap’s free pages', 'the-c-heaps-free-pages'],
    ['Runtime: Node 20 → Node 24', 'runtime-node-20--node-24'],
    ['`notify`: Slack-compatible incoming webhooks', 'notify-slack-compatible-incoming-webhooks'],
    ['Credentials in `callWebhook` headers: `secrets.<name>`', 'credentials-in-callwebhook-headers-secretsname'],
    ['Bulk actions: pacing, and a bulk rerun after an outage', 'bulk-actions-pacing-and-a-bulk-rerun-after-an-outage'],
    ['The 10,000-run bulk cancel (2026-11-28)', 'the-10000-run-bulk-cancel-2026-11-28'],
    ['`WORKER_VERIFY_HISTORIES` and [bundles](#bundles)', 'worker_verify_histories-and-bundles'],
  ])('%s → %s', (heading, slug) => {
    expect(slugOf(heading)).toBe(slug);
  });

  it('numbers repeated headings and ignores fenced code', () => {
    const text = ['# Title', '## Notes', '```sh', '# not a heading', '```', '## Notes', '### Notes'].join('\n');
    expect([...anchorsOf(text)]).toEqual(['title', 'notes', 'notes-1', 'notes-2']);
  });
});

describe('links to doc sections', () => {
  it('finds the references it checks', () => {
    const code = CODE_DIRS.flatMap((dir) => filesUnder(path.join(ROOT, dir), CODE_FILE)).flatMap(codeReferences);
    expect(code.filter((ref) => ref.anchor !== undefined).length).toBeGreaterThan(50);
    expect(markdownFiles().flatMap(markdownReferences).length).toBeGreaterThan(50);
  });

  it('fails on an anchor that names no heading, and on a comment without one', () => {
    const doc = path.join(ROOT, 'docs/performance.md');
    expect(
      brokenReferences([
        { at: 'a.ts:1', doc, anchor: 'memory', needsAnchor: true },
        { at: 'b.ts:2', doc, anchor: 'first-start-and-idle-memory-2026-11-24', needsAnchor: true },
        { at: 'c.ts:3', doc, anchor: undefined, needsAnchor: true },
        { at: 'd.md:4', doc: path.join(ROOT, 'docs', 'nothing.md'), anchor: undefined, needsAnchor: false },
      ]),
    ).toEqual([
      'b.ts:2: docs/performance.md has no section #first-start-and-idle-memory-2026-11-24',
      'c.ts:3: a comment points at docs/performance.md without naming its section (#anchor)',
      `d.md:4: ${path.join('docs', 'nothing.md')} does not exist`,
    ]);
  });

  it('every docs/<doc>.md#anchor in code names a section, and every comment that points at a doc names one', () => {
    const refs = CODE_DIRS.flatMap((dir) => filesUnder(path.join(ROOT, dir), CODE_FILE)).flatMap(codeReferences);
    expect(brokenReferences(refs)).toEqual([]);
  });

  it('every relative link in the docs, the README, the CHANGELOG and bench/README.md resolves', () => {
    expect(brokenReferences(markdownFiles().flatMap(markdownReferences))).toEqual([]);
  });
});
