// The request's absolute URL from its Host header and target. A Host that is not host[:port] (spaces, a port
// above 65535, a lone '%', an unclosed IPv6 literal, userinfo, a path) is the client's error: undefined, a 400.

const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;
const IP_LITERAL = /^\[[0-9A-Fa-f:.]+\]$/;

export function validHostHeader(value: string): boolean {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{0,5}))?$/.exec(value);
  if (!m) return false;
  const [, name = '', port] = m;
  if (!REG_NAME.test(name) && !IP_LITERAL.test(name)) return false;
  return port === undefined || port === '' || Number(port) <= 65535;
}

/** `fallbackHost` (the bound address) stands in when the client sent no Host (HTTP/1.0). */
export function requestUrl(hostHeader: string | undefined, target: string, fallbackHost: string): URL | undefined {
  const host = hostHeader ?? fallbackHost;
  if (!validHostHeader(host)) return undefined;
  try {
    return new URL(target, `http://${host}`);
  } catch {
    return undefined; // the host's own URL parser refuses it (an IPv6 literal that is not one, a bad target)
  }
}
