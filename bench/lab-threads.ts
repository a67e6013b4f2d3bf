/**
 * Lab (not part of `npm run bench`): where a run's CPU goes in the service's process, by thread,
 * for the bench's automation against its product-shaped floor (bench/e2e.ts
 * `startProductShapeFloor`): runs one at a time, the two kinds in turn, each thread's CPU
 * (/proc/<pid>/task/<tid>/stat, grouped by the thread's name) summed over the runs of each kind.
 * `node -r ./scripts/swc-register.js bench/lab-threads.ts [runs] [automation|floor]`
 */
import fs from 'node:fs';
import { createBenchAutomation, postEvent } from './automation';
import { startProductShapeFloor, statCpuMs } from './e2e';
import { installRuntime, startStack, type Stack } from './stack';
import { closeHttpAgent, request, runToExit } from './util';

const log = (line: string) => console.error(`[lab] ${line}`);

/** CPU ms of each thread of this process, by thread id: [name, ms]. */
function threads(): Map<string, [string, number]> {
  const out = new Map<string, [string, number]>();
  const dir = `/proc/${process.pid}/task`;
  for (const tid of fs.readdirSync(dir)) {
    try {
      const stat = fs.readFileSync(`${dir}/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      out.set(tid, [tid === String(process.pid) ? 'main' : name, statCpuMs(stat)]);
    } catch {
      // the thread ended
    }
  }
  return out;
}

function addDelta(
  into: Map<string, number>,
  before: Map<string, [string, number]>,
  after: Map<string, [string, number]>,
): void {
  for (const [tid, [name, ms]] of after) into.set(name, (into.get(name) ?? 0) + ms - (before.get(tid)?.[1] ?? 0));
}

async function result(stack: Stack, executionId: string): Promise<void> {
  await stack.client.workflow.getHandle(executionId).result();
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 200);
  /** One kind only (for a profile of it): `automation` or `floor`. */
  const only = process.argv[3];
  installRuntime();
  const stack = await startStack({ log, databaseUrl: undefined });
  try {
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const floor = await startProductShapeFloor(stack, automation);
    const kinds = {
      automation: async () => result(stack, String((await postEvent(stack.e2eApi.url, automation)).body.executionId)),
      floor: async () =>
        result(stack, String((await request('POST', floor.url, { body: automation.body })).body.executionId)),
    };
    const spent = { automation: new Map<string, number>(), floor: new Map<string, number>() };
    try {
      for (let i = 0; i < 30; i++) for (const run of Object.values(kinds)) await run();
      for (let i = 0; i < runs; i++) {
        for (const kind of (i % 2 ? ['floor', 'automation'] : ['automation', 'floor']) as Array<keyof typeof kinds>) {
          if (only && kind !== only) continue;
          const before = threads();
          await kinds[kind]();
          addDelta(spent[kind], before, threads());
        }
      }
    } finally {
      await floor.close();
    }
    const names = [...new Set([...spent.automation.keys(), ...spent.floor.keys()])].sort();
    console.log(`CPU ms per run by thread, ${runs} runs of each (automation / product-shaped floor / difference):`);
    let a = 0;
    let f = 0;
    for (const name of names) {
      const x = (spent.automation.get(name) ?? 0) / runs;
      const y = (spent.floor.get(name) ?? 0) / runs;
      a += x;
      f += y;
      if (x || y)
        console.log(
          `  ${name.padEnd(18)} ${x.toFixed(2).padStart(7)} ${y.toFixed(2).padStart(7)} ${(x - y).toFixed(2).padStart(7)}`,
        );
    }
    console.log(
      `  ${'all'.padEnd(18)} ${a.toFixed(2).padStart(7)} ${f.toFixed(2).padStart(7)} ${(a - f).toFixed(2).padStart(7)}`,
    );
  } finally {
    await stack.stop();
    closeHttpAgent();
  }
}

runToExit(main);
