// Route templates as the Functions host reads them (ASP.NET style): literal segments match without
// regard to case, "{name}" takes one segment, "{name?}" an optional last segment, "{*rest}" everything
// that is left. Constraints ("{id:int}", "{id:guid}", …) are checked for the common kinds and ignored
// otherwise. More literal templates win over more general ones, as in ASP.NET routing.
import type { HttpFunction } from './functions-core';

export interface CompiledRoute {
  fn: HttpFunction;
  match(path: string): Record<string, string> | undefined;
  /** Per segment: 0 literal, 1 mixed, 2 constrained, 3 parameter, 4 optional, 5 catch-all. */
  precedence: number[];
}

export type RouteLookup =
  | { kind: 'found'; fn: HttpFunction; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

const CONSTRAINTS: Record<string, RegExp> = {
  int: /^-?\d+$/,
  long: /^-?\d+$/,
  bool: /^(true|false)$/i,
  guid: /^\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?$/i,
  alpha: /^[a-z]+$/i,
  double: /^-?\d+(\.\d+)?$/,
  float: /^-?\d+(\.\d+)?$/,
  decimal: /^-?\d+(\.\d+)?$/,
};

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compileRoute(fn: HttpFunction): CompiledRoute {
  const names: string[] = [];
  const checks: (RegExp | undefined)[] = [];
  const precedence: number[] = [];
  let pattern = '';
  const segments = fn.route === '' ? [] : fn.route.split('/');
  segments.forEach((segment, i) => {
    const whole = /^\{(\*{1,2})?([A-Za-z_]\w*)((?::[^{}?]+)*)(\?)?\}$/.exec(segment);
    if (whole) {
      const [, star, name = '', constraintText, optional] = whole;
      names.push(name);
      const kinds = (constraintText ?? '').split(':').filter(Boolean);
      checks.push(kinds.map((k) => CONSTRAINTS[k.toLowerCase()]).find((r) => r !== undefined));
      if (star) {
        if (i !== segments.length - 1) throw new Error(`Route "${fn.route}" of "${fn.name}": a catch-all must be last.`);
        pattern += '(?:/(.*))?';
        precedence.push(5);
      } else if (optional) {
        pattern += '(?:/([^/]+))?';
        precedence.push(4);
      } else {
        pattern += '/([^/]+)';
        precedence.push(kinds.length > 0 ? 2 : 3);
      }
      return;
    }
    let literal = true;
    const body = segment.replace(/\{([A-Za-z_]\w*)(?::[^{}?]+)*\}|[^{}]+/g, (part, name?: string) => {
      if (name === undefined) return escape(part);
      literal = false;
      names.push(name);
      checks.push(undefined);
      return '([^/]+?)';
    });
    pattern += `/${body}`;
    precedence.push(literal ? 0 : 1);
  });
  const regex = new RegExp(`^${pattern}/?$`, 'i');

  return {
    fn,
    precedence,
    match(path) {
      const m = regex.exec(path);
      if (!m) return undefined;
      const params: Record<string, string> = {};
      for (let i = 0; i < names.length; i++) {
        const raw = m[i + 1];
        if (raw === undefined || raw === '') continue;
        let value: string;
        try {
          value = decodeURIComponent(raw);
        } catch {
          return undefined;
        }
        if (checks[i] && !checks[i]?.test(value)) return undefined;
        params[names[i] ?? ''] = value;
      }
      return params;
    },
  };
}

function comparePrecedence(a: CompiledRoute, b: CompiledRoute): number {
  for (let i = 0; i < Math.max(a.precedence.length, b.precedence.length); i++) {
    const d = (a.precedence[i] ?? -1) - (b.precedence[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

export class RouteTable {
  readonly routes: CompiledRoute[];

  constructor(functions: readonly HttpFunction[]) {
    this.routes = functions.map(compileRoute).sort(comparePrecedence);
  }

  /** `path` is the part after the route prefix, starting with "/" (or empty). */
  find(method: string, path: string): RouteLookup {
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = route.match(path);
      if (!params) continue;
      if (route.fn.methods.includes(method)) return { kind: 'found', fn: route.fn, params };
      route.fn.methods.forEach((m) => allowed.add(m));
    }
    return allowed.size > 0 ? { kind: 'method-not-allowed', allowed: [...allowed] } : { kind: 'not-found' };
  }
}
