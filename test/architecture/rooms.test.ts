import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The house rules the build enforces (docs/architecture.md): rooms call each other's services,
// never each other's repositories; one place opens transactions; no module imports itself back.

const SRC = resolve(import.meta.dirname, '../../src');

interface Import {
  from: string;
  to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /^(?:import|export)\s+(type\s+)?(?:\{([^}]*)\}|[^'"]*?)\s*from\s+'(\.[^']+)'/gm;

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => {
    const to = resolve(dirname(file), match[3]!.replace(/\.js$/, '.ts'));
    return { from: rel(file), to: rel(to) };
  });
}

const rel = (path: string) => relative(SRC, path).split('\\').join('/');
const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf);

/** The room of a path (its first folder), or undefined for a file at src/'s top. */
const roomOf = (path: string) => (path.includes('/') ? path.split('/')[0] : undefined);
const isRepository = (path: string) => /(^|\/|-)repository\.ts$/.test(path);

/**
 * Every import circle, each as the list of files around it: type-only imports count too, as a
 * circle of types is still two modules that cannot be understood, or changed, one without the other.
 */
function circles(edges: readonly Import[]): string[][] {
  const next = new Map<string, string[]>();
  for (const edge of edges) {
    next.set(edge.from, [...(next.get(edge.from) ?? []), edge.to]);
  }
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const to of next.get(file) ?? []) {
      if (state.get(to) === 'open') found.push([...path.slice(path.indexOf(to)), to]);
      else if (!state.has(to)) visit(to);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of next.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('the house rules', () => {
  it('reads the imports of src/ (the rules below check something)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(imports.some((i) => i.to === 'customers/repository.ts')).toBe(true);
  });

  it("no room imports another room's repository: it calls that room's service", () => {
    const crossings = imports
      .filter((i) => isRepository(i.to) && roomOf(i.from) !== roomOf(i.to) && roomOf(i.to) !== 'storage')
      .map((i) => `${i.from} -> ${i.to}`);
    expect(crossings).toEqual([]);
  });

  it('only the unit of work opens a transaction (migrations aside)', () => {
    const openers = files
      .map(rel)
      .filter((file) => !file.startsWith('storage/migrations/') && file !== 'storage/unit-of-work.ts')
      .filter((file) => /\.transaction\(\)/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(openers).toEqual([]);
  });

  it('events know nothing of webhooks: the fan-out is a port events declare (events/subscribers.ts)', () => {
    const upward = imports.filter((i) => roomOf(i.from) === 'events' && roomOf(i.to) === 'webhooks');
    expect(upward.map((i) => `${i.from} -> ${i.to}`)).toEqual([]);
  });

  it('no module imports itself back, directly or through others', () => {
    expect(circles(imports).map((circle) => circle.join(' -> '))).toEqual([]);
  });

  it('finds a circle when there is one (the check can fail)', () => {
    const edge = (from: string, to: string) => ({ from, to });
    expect(circles([edge('a', 'b'), edge('b', 'c'), edge('c', 'a')])).toEqual([['a', 'b', 'c', 'a']]);
    expect(circles([edge('a', 'b'), edge('b', 'c')])).toEqual([]);
  });
});
