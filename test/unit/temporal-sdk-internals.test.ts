/**
 * The SDK internals that src/temporal/activation-guard.ts and src/temporal/workflow-thread.js reach
 * (docs/upgrades.md#upgrading-the-temporal-sdk-temporalio), and src/temporal/sdk-log-levels.ts, are the
 * ones they were written against: every `@temporalio/*` package is pinned to one exact version,
 * that version is installed, and the files the three modules reach are byte for byte the reviewed
 * ones, with the exports they use. An upgrade
 * fails here first; after reviewing the new internals, update SDK_VERSION and the hashes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { LoggerWithComposedMetadata } from '@temporalio/common/lib/logger';
import { cutoffStackTrace } from '@temporalio/common';
import { ThreadedVMWorkflowCreator, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared';

const ROOT = path.resolve(__dirname, '../..');

/** The SDK version whose internals the guard and the workflow thread were reviewed against. */
const SDK_VERSION = '1.24.0';

/** sha256 of each SDK file they reach (path under node_modules/@temporalio). */
const REVIEWED_FILES: Record<string, string> = {
  // WorkerThreadClient, ThreadedVMWorkflowCreator and how `create` starts a thread (the init message).
  'worker/lib/workflow/threaded-vm.js': 'c0c76241f3c3e25b39fed3893035370188088b95b0f276ec4e423aec8c912d3b',
  // globalHandlers: setPromiseHook, overridePrepareStackTrace, currentStackTrace, promiseHookInstalled.
  'worker/lib/workflow/vm-shared.js': 'f526eb66f88dd444a23e9862911b69db584dacdd7fab118ac53acd521344026c',
  // The thread's entry that workflow-thread.js loads, and the messages it answers.
  'worker/lib/workflow/workflow-worker-thread.js': '90673d5b74aa51fdf66e4435c8f73d8a003e892ec9826866fe07ef6251089052',
  'worker/lib/workflow/workflow-worker-thread/input.d.ts':
    '4fe1f224408c5a6784cbd3fef599e76285959c3f07a076e5c46d79e7d2b75031',
  // Workflow and WorkflowCreator, which the guard implements.
  'worker/lib/workflow/interface.d.ts': '6958a560e342f7d430dbeafc4f70a33b862259c646e387f506a72d5d204ddb9d',
  // The activator's promiseStackStore, and globalThis.__TEMPORAL_ACTIVATOR__ that the hook reads.
  'workflow/lib/internals.js': '6852ca79a9f5955defd4e8ed4bd0cf0fa4444bc58720367f8d48802f28f13946',
  'workflow/lib/global-attributes.js': '66bb9ac1b7bc58a50a649d732f4014b90d3ed384d552f5b081b43a0652392710',
  // src/temporal/sdk-log-levels.ts: LoggerWithComposedMetadata's methods and its parentLogger field,
  // and DefaultLogger's public level.
  'common/lib/logger.js': '972331a4e44383f52e08fdc76c80d0605c0242660507620470c4a4b97f58c1e2',
  'worker/lib/logger.js': '4cf922a621e86d7f499a50125bbfcc3d53e67c87a31014815802ac0488182758',
};

type Manifest = { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };

function readJson<T>(file: string): T {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
}

function temporalDependencies(): Array<[string, string]> {
  const manifest = readJson<Manifest>(path.join(ROOT, 'package.json'));
  return Object.entries({ ...manifest.dependencies, ...manifest.devDependencies }).filter(([name]) =>
    name.startsWith('@temporalio/'),
  );
}

function prototypeMethods(cls: { prototype: object }): string[] {
  return Object.getOwnPropertyNames(cls.prototype).filter(
    (name) => typeof (cls.prototype as Record<string, unknown>)[name] === 'function',
  );
}

describe('the Temporal SDK internals the activation guard relies on', () => {
  it('pins every @temporalio/* package to the reviewed version, in package.json, package-lock.json and node_modules', () => {
    const dependencies = temporalDependencies();
    expect(dependencies.map(([name]) => name)).toEqual(
      expect.arrayContaining(['@temporalio/worker', '@temporalio/workflow', '@temporalio/common']),
    );
    const lock = readJson<{
      packages: Record<
        string,
        { version?: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string> }
      >;
    }>(path.join(ROOT, 'package-lock.json'));
    const root = { ...lock.packages['']?.dependencies, ...lock.packages['']?.devDependencies };
    for (const [name, range] of dependencies) {
      const installed = readJson<{ version: string }>(require.resolve(`${name}/package.json`)).version;
      expect({
        name,
        range,
        locked: root[name],
        lockedVersion: lock.packages[`node_modules/${name}`]?.version,
        installed,
      }).toEqual({
        name,
        range: SDK_VERSION,
        locked: SDK_VERSION,
        lockedVersion: SDK_VERSION,
        installed: SDK_VERSION,
      });
    }
    // The SDK's own packages that npm installs with it (core-bridge, nexus, ...) are the same release.
    for (const [key, entry] of Object.entries(lock.packages)) {
      if (/^node_modules\/@temporalio\/[^/]+$/.test(key)) expect([key, entry.version]).toEqual([key, SDK_VERSION]);
    }
  });

  it('reaches files that are byte for byte the reviewed ones', () => {
    const actual = Object.fromEntries(
      Object.keys(REVIEWED_FILES).map((file) => {
        const [pkg = '', ...rest] = file.split('/');
        const full = path.join(path.dirname(require.resolve(`@temporalio/${pkg}/package.json`)), ...rest);
        return [
          file,
          fs.existsSync(full) ? createHash('sha256').update(fs.readFileSync(full)).digest('hex') : 'missing',
        ];
      }),
    );
    expect(actual).toEqual(REVIEWED_FILES);
  });

  it('finds the exports the guard calls, with the shape it calls them with', () => {
    // activation-guard.ts: a WorkerThreadClient(thread, logger, patchActivationCallback) per thread, sent its init message.
    expect(typeof WorkerThreadClient).toBe('function');
    expect(prototypeMethods(WorkerThreadClient)).toEqual(expect.arrayContaining(['send', 'destroy']));
    // ... wrapped in a ThreadedVMWorkflowCreator([client]).
    expect(typeof ThreadedVMWorkflowCreator).toBe('function');
    expect(typeof ThreadedVMWorkflowCreator.create).toBe('function');
    expect(prototypeMethods(ThreadedVMWorkflowCreator)).toEqual(expect.arrayContaining(['createWorkflow', 'destroy']));
    // GuardedWorker overrides the protected static Worker.createWorkflowCreator(bundle, options, logger).
    const createWorkflowCreator = (Worker as unknown as Record<string, unknown>).createWorkflowCreator;
    expect(typeof createWorkflowCreator).toBe('function');
    expect((createWorkflowCreator as (...args: unknown[]) => unknown).length).toBe(3);
    // workflow-thread.js: the handlers it replaces and reads, and the SDK's stack cut-off.
    // (private in the SDK's types: workflow-thread.js is plain JavaScript)
    const handlers = globalHandlers as unknown as Record<string, unknown>;
    expect(typeof handlers.setPromiseHook).toBe('function');
    expect(typeof handlers.overridePrepareStackTrace).toBe('function');
    expect('currentStackTrace' in handlers).toBe(true);
    expect(handlers.promiseHookInstalled).toBe(false);
    expect(typeof cutoffStackTrace).toBe('function');
    expect(fs.existsSync(require.resolve('@temporalio/worker/lib/workflow/workflow-worker-thread'))).toBe(true);
    // sdk-log-levels.ts: LoggerWithComposedMetadata's level methods and `log`, and the parent it keeps.
    expect(prototypeMethods(LoggerWithComposedMetadata)).toEqual(
      expect.arrayContaining(['log', 'trace', 'debug', 'info', 'warn', 'error']),
    );
    const parent = new DefaultLogger('WARN');
    expect(
      (LoggerWithComposedMetadata.compose(parent, { a: 1 }) as unknown as { parentLogger: unknown }).parentLogger,
    ).toBe(parent);
    expect(parent.level).toBe('WARN');
  });
});
