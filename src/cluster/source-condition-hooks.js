// Module resolution hook for running weir from its sources (a checkout). package.json maps
// 'weir' to src/index.ts under the 'weir-source' condition and to the compiled dist/ otherwise;
// this hook adds the condition, so a job's `import 'weir'` gets the very modules the runtime
// runs (one copy of every class: the API's instanceof checks depend on it).
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, { ...context, conditions: [...context.conditions, 'weir-source'] });
}
