// The README is the front door and docs/ holds the rest (issue 27): every docs/*.md page must be reachable from the
// README, and every relative link of the README and the pages must lead to a file that exists and, with a
// `#fragment` into a Markdown file, to a heading there (GitHub's anchors: lower case, punctuation dropped, spaces
// to hyphens, `-1`, `-2` for repeats). Links inside code blocks and inline code are not links.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
const pages = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
const files = ['README.md', ...pages];
const text = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** The lines outside fenced code blocks, with inline code blanked out. */
function prose(markdown: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fenced = false;
  markdown.split('\n').forEach((l, i) => {
    if (/^\s*```/.test(l)) {
      fenced = !fenced;
      return;
    }
    if (!fenced) out.push({ line: i + 1, text: l.replace(/`[^`]*`/g, '``') });
  });
  return out;
}

/** GitHub's anchor for a heading's text. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text: l } of prose(markdown)) {
    const m = /^#{1,6} (.*)$/.exec(l);
    if (!m) continue;
    const base = slug(m[1]!.replace(/``/g, ''));
    const n = seen.get(base);
    seen.set(base, (n ?? -1) + 1);
    out.add(n === undefined ? base : `${base}-${n + 1}`);
  }
  return out;
}

/** Every `](target)` of the prose (links and images), with its line. */
function links(file: string): Array<{ where: string; target: string }> {
  const out: Array<{ where: string; target: string }> = [];
  for (const { line, text: l } of prose(text(file))) {
    for (const m of l.matchAll(/\]\(([^)\s]+)\)/g)) out.push({ where: `${file}:${line}`, target: m[1]! });
  }
  return out;
}

describe('docs links', () => {
  it('GitHub anchors: lower case, punctuation dropped, spaces to hyphens', () => {
    expect(slug('Quick start on SQL Server / Azure SQL')).toBe('quick-start-on-sql-server--azure-sql');
    expect(slug('Backoff on 429 and 503 (Retry-After)')).toBe('backoff-on-429-and-503-retry-after');
    expect(slug('Try it: request/response and dead letters')).toBe('try-it-requestresponse-and-dead-letters');
    expect([...anchors('# A\n```\n# not a heading\n```\n## A\n')]).toEqual(['a', 'a-1']);
  });

  it('has pages, and the README links every one of them', () => {
    expect(pages.length).toBeGreaterThan(10);
    const linked = new Set(
      links('README.md')
        .map((l) => l.target.split('#')[0]!)
        .filter((t) => t !== '' && !/^[a-z]+:/.test(t))
        .map((t) => path.normalize(t)),
    );
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
  });

  it('every relative link of the README and the pages resolves to a file, and a fragment to a heading there', () => {
    const broken: string[] = [];
    const headings = new Map<string, Set<string>>();
    for (const file of files) {
      for (const { where, target } of links(file)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [filePart, fragment] = target.split('#') as [string, string | undefined];
        const resolved = filePart === '' ? file : path.normalize(path.join(path.dirname(file), decodeURI(filePart)));
        if (resolved.startsWith('..') || !existsSync(path.join(root, resolved))) {
          broken.push(`${where}: ${target} (no file ${resolved})`);
          continue;
        }
        if (fragment === undefined) continue;
        if (!resolved.endsWith('.md')) {
          broken.push(`${where}: ${target} (a fragment into a file that is not Markdown)`);
          continue;
        }
        if (!headings.has(resolved)) headings.set(resolved, anchors(text(resolved)));
        if (!headings.get(resolved)!.has(fragment)) broken.push(`${where}: ${target} (no heading #${fragment} in ${resolved})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
