/**
 * copyValue: what an operator emits while it keeps the value (a rolling reduce's accumulator)
 * is a copy, so downstream code that mutates it cannot change the operator's state. Plain
 * objects and arrays are copied field by field; other objects, and parts deeper than the
 * field-by-field limit (cycles included), go through structuredClone.
 */
import { describe, expect, it } from 'vitest';
import { copyValue } from '../../src/core/copy.ts';

describe('copyValue', () => {
  it('a field named "__proto__" (JSON.parse makes one) is copied as a field, never as the copy\'s prototype', () => {
    const v = JSON.parse('{"user":"u1","__proto__":{"isAdmin":true}}') as Record<string, unknown>;
    const c = copyValue(v);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['user', '__proto__']);
    expect((c as { isAdmin?: boolean }).isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(c, '__proto__')?.value).toEqual({ isAdmin: true });
  });

  it('copies plain objects and arrays deeply: mutating the copy leaves the original as it was', () => {
    const v = { word: 'weir', count: 3, tags: ['a', { deep: [1, 2] }], none: undefined, nil: null };
    const c = copyValue(v);
    expect(c).toEqual(v);
    expect(c).not.toBe(v);
    (c.tags[1] as { deep: number[] }).deep.push(3);
    c.count = 99;
    expect(v).toEqual({ word: 'weir', count: 3, tags: ['a', { deep: [1, 2] }], none: undefined, nil: null });
    expect('none' in c).toBe(true);
  });

  it('primitives are returned as they are', () => {
    for (const p of [1, 'x', true, null, undefined, 10n]) expect(copyValue(p)).toBe(p);
  });

  it('Maps, Sets, Dates and class instances are copied by structuredClone (inside plain objects too)', () => {
    const v = { m: new Map([['k', { n: 1 }]]), s: new Set([1, 2]), d: new Date(5), bytes: new Uint8Array([1, 2]) };
    const c = copyValue(v);
    expect(c).toEqual(v);
    expect(c.m).not.toBe(v.m);
    c.m.get('k')!.n = 2;
    expect(v.m.get('k')!.n).toBe(1);
    expect(c.d.getTime()).toBe(5);
  });

  it('a Buffer is copied as a Buffer (structuredClone alone makes it a Uint8Array)', () => {
    const v = { b: Buffer.from('hi') };
    const c = copyValue(v);
    expect(Buffer.isBuffer(c.b)).toBe(true);
    expect(c.b.toString()).toBe('hi');
    c.b[0] = 0x48;
    expect(v.b.toString()).toBe('hi');
  });

  it('a value deeper than the field-by-field limit, and a cyclic one, are still copied whole', () => {
    let deep: { next?: unknown; i: number } = { i: 0 };
    const root = deep;
    for (let i = 1; i < 100; i++) deep = (deep.next = { i }) as { next?: unknown; i: number };
    const c = copyValue(root);
    expect(c).toEqual(root);
    const cyclic: { self?: unknown; n: number } = { n: 1 };
    cyclic.self = cyclic;
    const cc = copyValue(cyclic);
    expect(cc.n).toBe(1);
    expect(cc).not.toBe(cyclic);
  });
});
