/** One-off work in a short-lived Node child process, so that its memory leaves with the child. */
import { spawn } from 'node:child_process';

/** Runs a script in a short-lived Node child with this process's loader flags (tsx for a .ts script). */
export async function runNodeChild(script: string, args: string[], what: string): Promise<void> {
  const flags =
    script.endsWith('.ts') && !process.execArgv.some((flag) => flag.includes('tsx'))
      ? ['--require', 'tsx/cjs']
      : process.execArgv;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => {
      errors = (errors + chunk.toString()).slice(-4000);
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed (${code}): ${errors}`))));
  });
}
