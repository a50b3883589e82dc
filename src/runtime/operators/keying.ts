/** Key selectors as the runtime sees them. */
export type KeySelectorFn = (value: any) => unknown;
