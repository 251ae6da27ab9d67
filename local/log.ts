import { format } from 'node:util';

/** Receives one finished log line at a time (no trailing newline). */
export type HostLogger = (line: string) => void;

export const consoleLogger: HostLogger = (line) => console.log(line);

/** `[time] message`, or `[time] [source] message`; levels other than information are spelled out. */
export function logLine(logger: HostLogger, source: string | undefined, level: string, args: unknown[]): void {
  const tag = level === 'information' ? '' : `${level}: `;
  const where = source ? `[${source}] ` : '';
  logger(`[${new Date().toISOString()}] ${where}${tag}${format(...args)}`);
}
