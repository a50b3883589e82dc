/**
 * TypeScript job modules for an installed weir, which runs as plain JavaScript (dist/), when
 * the job could not be bundled (job-bundle.ts), or is loaded by another way than runJob. tsx is
 * registered in a thread when it first loads a job module by path, not at start: registered
 * first, its hooks would also see all of weir's own modules (the CLI then took about three
 * times as long to load, most of it parsing the source maps tsx attaches). Before registering,
 * the runtime's entry is imported natively, so that the job's `import 'weir'` finds it loaded
 * (the very instance the runtime uses) without going through tsx.
 *
 * From a checkout weir runs from its TypeScript sources, so bin/weir.js (or the test runner)
 * has registered TypeScript support for the whole thread already, and this does nothing.
 */

/** Built into dist/ (scripts/build.ts), this module's own URL ends in .js; from sources, in .ts. */
export const RUNTIME_IS_COMPILED = import.meta.url.endsWith('.js');

/** The runtime's entry, as a job's `import 'weir'` gets it (dist/index.js). */
export const WEIR_ENTRY = new URL('../index.js', import.meta.url).href;

let registered: Promise<void> | undefined;

/** Makes this thread able to import TypeScript job modules (once). */
export function typeScriptJobs(): Promise<void> {
  if (!RUNTIME_IS_COMPILED) return Promise.resolve();
  registered ??= (async () => {
    await import(WEIR_ENTRY);
    const { register } = await import('tsx/esm/api');
    register();
  })();
  return registered;
}
