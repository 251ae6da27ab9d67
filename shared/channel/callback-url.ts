// Callback targets: https only (http for localhost), and the host must be on CALLBACK_ALLOWED_HOSTS, so a
// registration cannot turn this app into a request forwarder to arbitrary hosts.

const LOCAL = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function callbackUrlProblem(raw: unknown, allowedHosts: readonly string[]): string | null {
  if (typeof raw !== 'string' || raw.length === 0) return 'must be a URL string';
  if (raw.length > 2048) return 'must be at most 2048 characters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a valid URL';
  }
  const host = url.hostname.toLowerCase();
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOCAL.has(host))) return 'must use https (http only for localhost)';
  if (url.username || url.password) return 'must not carry credentials';
  if (!isAllowed(url, allowedHosts)) {
    return allowedHosts.length === 0
      ? 'no callback hosts are allowed (set CALLBACK_ALLOWED_HOSTS)'
      : `host '${url.host}' is not in CALLBACK_ALLOWED_HOSTS`;
  }
  return null;
}

function isAllowed(url: URL, allowed: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowed.some((entry) => {
    const [pattern, entryPort] = entry.split(':') as [string, string | undefined];
    if (entryPort !== undefined && entryPort !== port) return false;
    if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
    return host === pattern;
  });
}
