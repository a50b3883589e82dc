/** Integer and decimal option values, with bounds. */
import { ok, refuse, shown, type ValueType } from './value-type.ts';

export interface IntegerBounds {
  readonly min: number;
  readonly max?: number;
  /** Infinity is allowed (from code only: neither JSON nor a flag spells it). */
  readonly unlimited?: boolean;
  /** Says the bounds in words instead ("a positive integer"). */
  readonly noun?: string;
}

/** Flags give text, config files text or numbers: "3" and 3 are the same integer. */
function integerOf(raw: unknown): number | undefined {
  const n = typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : raw;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined;
}

export function integer(b: IntegerBounds): ValueType<number> {
  const range = b.max === undefined ? `>= ${b.min}` : `between ${b.min} and ${b.max}`;
  const expected = b.noun ?? `an integer ${range}`;
  return {
    metavar: 'N',
    takesValue: true,
    describe: () => (b.noun !== undefined ? b.noun.replace(/^an? /, '') : `integer ${range}`),
    decode: (raw) => {
      const n = integerOf(raw);
      return n === undefined ? refuse(b.noun ?? 'an integer', raw) : ok(n);
    },
    check: (v) => {
      const whole = typeof v === 'number' && (Number.isInteger(v) || (b.unlimited === true && v === Infinity));
      const inRange = whole && v >= b.min && (b.max === undefined || v <= b.max);
      return inRange ? undefined : { expected, got: shown(v) };
    },
    show: (v) => (v === Infinity ? 'unlimited' : String(v)),
  };
}

export const positiveInteger = (): ValueType<number> => integer({ min: 1, noun: 'a positive integer' });

export function decimal(b: { readonly min: number; readonly max?: number }): ValueType<number> {
  return {
    metavar: 'X',
    takesValue: true,
    describe: () => (b.max === undefined ? `number >= ${b.min}` : `number between ${b.min} and ${b.max}`),
    decode: (raw) => {
      const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
      return typeof n === 'number' && !Number.isNaN(n) ? ok(n) : refuse('a number', raw);
    },
    check: (v) => {
      if (typeof v !== 'number' || Number.isNaN(v) || v < b.min) return { expected: `a number >= ${b.min}`, got: shown(v) };
      if (b.max !== undefined && v > b.max) return { expected: `between ${b.min} and ${b.max}`, got: shown(v) };
      return undefined;
    },
    show: (v) => String(v),
  };
}
