// A small reader for the Bicep files in infra/ (no Bicep compiler runs here): comments and string contents are
// blanked first (same length, so offsets stay valid), then brackets are matched and object keys collected.
// Shared by the infra.* unit tests and the metric-name tests.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const INFRA = join(__dirname, '..', '..', 'infra');
export const OBSERVABILITY_MODULE = join(INFRA, 'modules', 'observability.bicep');

/**
 * Replaces comments and the contents of string literals ('…', '''…''') with spaces of the same length, so
 * braces and colons inside them cannot mislead the bracket matching. Positions stay valid.
 */
export function blankCommentsAndStrings(src: string): string {
  const out = src.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < src.length) {
    if (src.startsWith('//', i)) {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? src.length : end;
      blank(i, stop);
      i = stop;
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (src.startsWith("'''", i)) {
      const end = src.indexOf("'''", i + 3);
      const stop = end < 0 ? src.length : end + 3;
      blank(i + 3, stop - 3);
      i = stop;
    } else if (src[i] === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== "'") j += src[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
    } else i++;
  }
  return out.join('');
}

/** Index of the bracket closing the one at `open` (on blanked text). */
export function closingBracket(blanked: string, open: number, what = `offset ${open}`): number {
  let depth = 0;
  for (let k = open; k < blanked.length; k++) {
    const c = blanked[k];
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') {
      depth--;
      if (depth === 0) return k;
    }
  }
  throw new Error(`no closing bracket for ${what}`);
}

/** The text between the braces of `var <name> = {` (exclusive), found on the blanked source. */
export function objectBody(original: string, blanked: string, varName: string): { body: string; blankedBody: string } | undefined {
  const m = new RegExp(`\\bvar\\s+${varName}\\s*=\\s*\\{`).exec(blanked);
  if (!m) return undefined;
  const open = m.index + m[0].length - 1;
  const end = closingBracket(blanked, open, `'var ${varName}'`);
  return { body: original.slice(open + 1, end), blankedBody: blanked.slice(open + 1, end) };
}

/** Keys of the object literal's own properties (depth 0 inside the braces), one per line as Bicep writes them. */
export function topLevelKeys(body: string, blankedBody: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let lineStart = 0;
  let depthAtLineStart = 0;
  for (let k = 0; k <= blankedBody.length; k++) {
    const c = blankedBody[k];
    if (k === blankedBody.length || c === '\n') {
      if (depthAtLineStart === 0) {
        // Matched on the blanked line, so text inside strings (multi-line ones too) never looks like a key;
        // a quoted key is blanked to '   ', so its name is read from the original line.
        const blankLine = blankedBody.slice(lineStart, k);
        const bare = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(blankLine);
        const quoted = /^(\s*)'\s*'\s*:/.exec(blankLine);
        if (bare) keys.push(bare[1]!);
        else if (quoted) keys.push(/^\s*'([^']*)'/.exec(body.slice(lineStart, k))![1]!);
      }
      lineStart = k + 1;
      depthAtLineStart = depth;
      continue;
    }
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
  }
  return keys;
}

/** Own keys of the object whose `{` is at `open` (an offset valid in both the original and the blanked text). */
export function objectKeysAt(original: string, blanked: string, open: number): string[] {
  const end = closingBracket(blanked, open);
  return topLevelKeys(original.slice(open + 1, end), blanked.slice(open + 1, end));
}

/** Every .bicep file under `dir`, recursively. */
export function bicepFiles(dir: string = INFRA): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? bicepFiles(join(dir, e.name)) : e.name.endsWith('.bicep') ? [join(dir, e.name)] : [],
  );
}

/**
 * The metric names listed in the header comment of infra/modules/observability.bicep (the contract with the
 * telemetry code): lines like `//   asyncresponse.x.y   kind   dims`.
 */
export function listedMetricNames(src: string = readFileSync(OBSERVABILITY_MODULE, 'utf8')): string[] {
  return [...src.matchAll(/^\/\/\s+(asyncresponse\.[a-z_.]+[a-z_])\s+(counter|gauge|value)\b/gm)].map((m) => m[1]!);
}
