// Which database the stores open, and the pool they share: the stores' own connection options (the settings
// readers in shared/settings build them from SQL_* / DATABASE_URL / PGLITE_DATA_DIR; a program writes them).

export type StoreSelection =
  | {
      kind: 'sqlserver';
      connectionString?: string;
      server?: string;
      database?: string;
      user?: string;
      password?: string;
      port?: number;
      trustServerCertificate?: boolean;
    }
  | { kind: 'postgres'; url: string }
  | { kind: 'pglite'; dataDir: string };

export interface PoolOptions {
  max: number;
  min: number;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
}
