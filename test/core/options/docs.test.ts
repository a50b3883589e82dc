/** docs/configuration.md is generated from the registry and committed; it must not go stale. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationDocs } from '../../../src/core/options/docs.ts';
import { ALL_OPTIONS } from '../../../src/core/options/registry.ts';

describe('docs/configuration.md', () => {
  it('is what the registry generates (run npm run docs:config after changing an option)', () => {
    const committed = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    expect(committed).toBe(configurationDocs());
  });

  it('lists every flag and every key, older ones included', () => {
    const docs = configurationDocs();
    for (const o of ALL_OPTIONS) {
      if (o.flag !== undefined) expect(docs, o.flag).toContain(`--${o.flag}`);
      for (const k of [o.key, ...(o.deprecatedKeys ?? [])]) if (k !== undefined) expect(docs, k).toContain(`\`${k}\``);
    }
  });
});
