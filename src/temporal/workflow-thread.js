'use strict';
/**
 * Entry of each workflow thread the activation guard starts (src/temporal/activation-guard.ts):
 * the SDK's own workflow thread, with one change made before it loads, in how it keeps the stacks
 * the Web UI's "Stack Trace" tab shows (the `__stack_trace` and `__enhanced_stack_trace` queries).
 *
 * The SDK records, for every promise a workflow creates, the stack it was created at: a promise
 * hook builds an Error, formats its frames through the workflow bundle's source map and filters
 * the text with regular expressions, at once. Only the stacks of the promises a run is still
 * waiting on are ever shown, and only when someone asks. In the automation workflow that work was
 * 43 % of the workflow thread's CPU, about 3 ms per run (docs/performance.md#what-keeps-each-figure-low,
 * "The workflow thread").
 *
 * Here the hook captures the frames (V8's CallSite objects) and formats them only when a query
 * reads them, with the SDK's own formatter (`Error.prepareStackTrace` as the SDK set it), source
 * map, cut-offs and header strip, so the answer is the SDK's. The one decision the hook has to
 * make at once, linking the promises `Promise.all`/`race`/`allSettled`/`any` create inside to the
 * aggregate, reads the top frames' names (never source-mapped: they are V8 built-ins).
 * test/integration/workflow-stack-traces.test.ts holds the answers equal to the SDK's.
 *
 * Plain JavaScript: a worker thread loads it without the TypeScript loader of the tests.
 */
const v8 = require('node:v8');
const { cutoffStackTrace } = require('@temporalio/common');
const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared');

/** The frame text of `promise.then()` as V8 prints it; the SDK matches the same text. */
const THEN_FRAME = 'Promise.then (<anonymous>)';
/** The frame text of an aggregating built-in (the SDK's pattern, one frame). */
const AGGREGATE_FRAME = /^(?:Function|Promise)\.(?:race|all|allSettled|any) \(<anonymous>\)$/;
/** What the SDK strips from the front of each formatted stack: the header, the hook's frame, `initAll`. */
const HOOK_HEADER = /^Error\n\s*at [^\n]+\n(\s*at initAll \(node:internal\/promise_hooks:\d+:\d+\)\n)?/;

/**
 * The SDK's cut of a structured stack (module-private in vm-shared.js, copied): everything from the
 * first frame of the SDK's workflow handler or of `runInContext` on.
 */
function cutoffStructuredStackTrace(stackTrace) {
  const idx = stackTrace.findIndex(({ function_name, file_path }) => {
    return (
      function_name &&
      file_path &&
      ((/^Activator\.\S+NextHandler$/.test(function_name) &&
        /.*[\\/]workflow[\\/](?:src|lib)[\\/]internals\.[jt]s$/.test(file_path)) ||
        (/Script\.runInContext/.test(function_name) && /^node:vm|vm\.js$/.test(file_path)))
    );
  });
  if (idx > -1) stackTrace.splice(idx);
}

/**
 * Replaces `handlers.setPromiseHook` (called by `handlers.install()` right after
 * `overridePrepareStackTrace`, when the thread receives its bundle) with the deferring hook.
 */
function deferPromiseStacks(handlers) {
  if (
    typeof handlers.setPromiseHook !== 'function' ||
    typeof handlers.overridePrepareStackTrace !== 'function' ||
    !('currentStackTrace' in handlers)
  ) {
    throw new Error(
      'workflow thread: the SDK global handlers have no setPromiseHook/overridePrepareStackTrace/currentStackTrace (SDK internals changed)',
    );
  }
  handlers.setPromiseHook = function setDeferredPromiseHook() {
    /** The SDK's formatter, installed just before this by overridePrepareStackTrace. */
    const format = Error.prepareStackTrace;
    if (typeof format !== 'function')
      throw new Error('workflow thread: the SDK did not install its stack formatter (SDK internals changed)');
    /** While set, a stack read answers its CallSite objects instead of text. */
    let capturing = false;
    Error.prepareStackTrace = (error, sites) => (capturing ? sites : format(error, sites));

    /** A promise's stack, formatted the first time it is read; `formatted` and `structured` as the SDK's. */
    class DeferredStack {
      constructor(error, sites, hookFrames) {
        this.error = error;
        this.sites = sites;
        this.hookFrames = hookFrames;
        this.text = undefined;
        this.frames = undefined;
      }
      materialize() {
        handlers.currentStackTrace = [];
        let text;
        try {
          text = format(this.error, this.sites);
          // The structured stack starts at the workflow's frame, as the SDK's does: not at the hook's.
          this.frames = (handlers.currentStackTrace ?? []).slice(this.hookFrames);
        } finally {
          handlers.currentStackTrace = undefined;
        }
        cutoffStructuredStackTrace(this.frames);
        this.text = cutoffStackTrace(String(text).replace(HOOK_HEADER, ''));
        this.error = undefined;
        this.sites = undefined;
      }
      get formatted() {
        if (this.text === undefined) this.materialize();
        return this.text;
      }
      get structured() {
        if (this.frames === undefined) this.materialize();
        return this.frames;
      }
    }

    // The SDK reaches a promise's workflow context through its constructor's realm: what it needs
    // of a realm (its activator, its Error) is looked up once per realm (one context per thread
    // with reuseV8Context) instead of with two Function constructors per promise.
    const realms = new WeakMap();
    const realmOf = (promise) => {
      const realmPromise = promise.constructor;
      let realm = realms.get(realmPromise);
      if (realm === undefined) {
        realm = {
          activator: realmPromise.constructor('return globalThis.__TEMPORAL_ACTIVATOR__'),
          ErrorClass: realmPromise.constructor('return globalThis.Error')(),
        };
        realms.set(realmPromise, realm);
      }
      return realm;
    };

    // Promise aggregators (race, all, ...): the promises they create inside link to the aggregate.
    let currentAggregation;
    try {
      this.stopPromiseHook = v8.promiseHooks.createHook({
        init: (promise, parent) => {
          const realm = realmOf(promise);
          const activator = realm.activator();
          if (!activator) return;
          const store = activator.promiseStackStore;
          promise.runId = activator.info.runId;
          const error = new realm.ErrorClass();
          let sites;
          capturing = true;
          try {
            sites = error.stack;
          } finally {
            capturing = false;
          }
          if (!Array.isArray(sites)) return;
          // The frames the SDK keeps start after the hook's own and Node's `initAll`.
          let top = 1;
          if (
            sites[1] !== undefined &&
            sites[1].getFunctionName() === 'initAll' &&
            String(sites[1].getFileName()).startsWith('node:internal/promise_hooks')
          )
            top = 2;
          let stack = new DeferredStack(error, sites, top);
          const first = sites[top] === undefined ? '' : String(sites[top]);
          if (
            currentAggregation &&
            first === THEN_FRAME &&
            sites.length > top + 2 &&
            AGGREGATE_FRAME.test(String(sites[top + 1]))
          ) {
            // Skip the aggregator's internal promises and link directly (the SDK's rule).
            promise = currentAggregation;
            stack = store.promiseToStack.get(currentAggregation);
          } else if (sites.length > top + 1 && AGGREGATE_FRAME.test(first)) {
            currentAggregation = promise;
          } else {
            currentAggregation = undefined;
          }
          if (promise === parent) return;
          store.promiseToStack.set(promise, stack);
          const parents = store.childToParent.get(promise) ?? new Set();
          if (parent) parents.add(parent);
          store.childToParent.set(promise, parents);
        },
        settled: (promise) => {
          const store = realmOf(promise).activator()?.promiseStackStore;
          if (!store) return;
          store.childToParent.delete(promise);
          store.promiseToStack.delete(promise);
        },
      });
      this.promiseHookInstalled = true;
    } catch {
      // As the SDK: without v8.promiseHooks, stack traces are off (the query says so).
    }
  };
}

deferPromiseStacks(globalHandlers);
require('@temporalio/worker/lib/workflow/workflow-worker-thread');
