import { describe, expect, it } from 'vitest';
import { mergeProperties } from '../../src/customer-identities/service.js';
import { normalizeEmail, trimEmail } from '../../src/email.js';
import { jsonDepth } from '../../src/properties.js';

describe('customer identity helpers', () => {
  it('jsonDepth: scalars are 0, each object or array level adds 1, and it stops past the limit', () => {
    expect(jsonDepth('x', 5)).toBe(0);
    expect(jsonDepth(null, 5)).toBe(0);
    expect(jsonDepth({}, 5)).toBe(1);
    expect(jsonDepth([], 5)).toBe(1);
    expect(jsonDepth({ a: 1, b: { c: [1] } }, 5)).toBe(3);
    expect(jsonDepth({ a: [[[{ b: 1 }]]] }, 5)).toBe(5);
    expect(jsonDepth({ a: [[[{ b: {} }]]] }, 5)).toBe(6);
    // Hostile nesting: the walk stops one level past the limit instead of overflowing the stack.
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(jsonDepth(deep, 5)).toBe(6);
  });

  it('mergeProperties: null removes, others replace whole, unsent keys stay, order kept', () => {
    const merged = mergeProperties({ a: 1, b: { x: 1, y: 2 }, c: 3 }, { b: { x: 9 }, c: null, d: [1], e: null });
    expect(merged).toEqual({ a: 1, b: { x: 9 }, d: [1] });
    expect(Object.keys(merged)).toEqual(['a', 'b', 'd']);
  });

  it('mergeProperties keeps a "__proto__" key a plain key', () => {
    const merged = mergeProperties({}, JSON.parse('{"__proto__": {"polluted": true}}'));
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('normalizeEmail trims and lower-cases; trimEmail trims only a string email', () => {
    expect(normalizeEmail('  Jane@Example.COM\t')).toBe('jane@example.com');
    expect(trimEmail({ email: ' a@b.co ', x: 1 })).toEqual({ email: 'a@b.co', x: 1 });
    expect(trimEmail({ email: 5 })).toEqual({ email: 5 });
    expect(trimEmail('text')).toBe('text');
    expect(trimEmail(null)).toBe(null);
  });
});
