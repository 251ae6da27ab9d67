// Which database a CLI command talks to, in one line and without secrets: `npm run schema -- status` names it, so
// an operator sees at once that the settings of this shell point where they meant.
import type { StoreSelection } from '../stores/selection';
import { parseSqlConnectionString } from '../stores/sqlserver/connection';

export function storeLabel(store: StoreSelection): string {
  if (store.kind === 'pglite') return `PGlite at ${store.dataDir}`;
  if (store.kind === 'postgres') {
    try {
      const u = new URL(store.url);
      return `PostgreSQL ${u.hostname}${u.port ? `:${u.port}` : ''}, database ${decodeURIComponent(u.pathname.slice(1)) || '(default)'}`;
    } catch {
      return 'PostgreSQL (DATABASE_URL)';
    }
  }
  let server = store.server;
  let database = store.database;
  if (store.connectionString) {
    try {
      const parsed = parseSqlConnectionString(store.connectionString);
      server ??= parsed.server;
      database ??= parsed.database;
    } catch {
      // an unparsable string fails when the pool opens, with its own message
    }
  }
  return `SQL Server ${server ?? '(server not set)'}, database ${database ?? '(default)'}`;
}
