// The engine's optional peer dependencies (issue 27: the library installed the whole Functions app, 333 packages):
// the store drivers and the tracing API are the user's to install, for the store they use, as knex and kysely do.
// Each is loaded when first needed, through here, so a missing one fails with the package named and the command
// to install it, not a bare "Cannot find module". The app (functions/, local/) depends on all of them.

/** The optional peers and what needs each (package.json peerDependencies, peerDependenciesMeta optional). */
export const OPTIONAL_PEERS = {
  pg: 'the PostgreSQL store (store: { kind: "postgres" })',
  '@electric-sql/pglite': 'the embedded PGlite store (store: { kind: "pglite" })',
  mssql: 'the SQL Server / Azure SQL store (store: { kind: "sqlserver" })',
  '@azure/identity': 'Entra authentication to SQL Server (a connection without a password)',
  '@opentelemetry/api': 'tracing spans (a registered OpenTelemetry SDK)',
} as const;

export type OptionalPeer = keyof typeof OPTIONAL_PEERS;

/** A peer the options need is not installed. */
export class MissingPeerError extends Error {
  constructor(readonly packageName: OptionalPeer) {
    super(
      `${OPTIONAL_PEERS[packageName]} needs the package '${packageName}', which is not installed: it is an optional ` +
        `peer dependency of asyncresponse-functions. Install it in your project: npm install ${packageName}`,
    );
    this.name = 'MissingPeerError';
  }
}

function missing(err: unknown, name: string): boolean {
  const e = err as NodeJS.ErrnoException;
  return (e?.code === 'MODULE_NOT_FOUND' || e?.code === 'ERR_MODULE_NOT_FOUND') && typeof e.message === 'string' && e.message.includes(`'${name}'`);
}

/** The peer's module; a MissingPeerError naming it when it is not installed. */
export function requirePeer<T>(name: OptionalPeer): T {
  try {
    return require(name) as T;
  } catch (err) {
    if (missing(err, name)) throw new MissingPeerError(name);
    throw err;
  }
}
