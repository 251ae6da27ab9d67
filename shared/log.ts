// A minimal logger the engine writes to. Functions pass one that forwards to the InvocationContext so logs
// correlate with the invocation; the local host and tests use the console one.

export interface Logger {
  debug(message: string, ...details: unknown[]): void;
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
  error(message: string, ...details: unknown[]): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function consoleLogger(level: LogLevel = 'info', prefix = ''): Logger {
  const on = (l: LogLevel) => ORDER[l] >= ORDER[level];
  const p = prefix ? `${prefix} ` : '';
  return {
    debug: (m, ...d) => on('debug') && console.debug(`${p}${m}`, ...d),
    info: (m, ...d) => on('info') && console.info(`${p}${m}`, ...d),
    warn: (m, ...d) => on('warn') && console.warn(`${p}${m}`, ...d),
    error: (m, ...d) => on('error') && console.error(`${p}${m}`, ...d),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A logger that never throws: a failing sink must not end a loop or lose a settlement. */
export function safeLogger(inner: Logger): Logger {
  const wrap =
    (f: (m: string, ...d: unknown[]) => void) =>
    (m: string, ...d: unknown[]) => {
      try {
        f(m, ...d);
      } catch {
        /* logging is best effort */
      }
    };
  return { debug: wrap(inner.debug), info: wrap(inner.info), warn: wrap(inner.warn), error: wrap(inner.error) };
}
