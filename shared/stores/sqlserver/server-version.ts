// The oldest SQL Server the schema runs on. Version 3's publish procedures and the topic copies' ids hash text
// converted under Latin1_General_100_BIN2_UTF8, a collation SQL Server has only from 2019 (15.x); on 2016/2017
// version 3 fails to compile (error 448) and every store operation then fails at the version gate. So the gate
// probes the server first and names what is needed. Azure SQL Database and Managed Instance have it.

import type { Statement } from './statements';

export const UTF8_COLLATION = 'Latin1_General_100_BIN2_UTF8';

/** One row: product_version, product_level, engine_edition, utf8_code_page (65001 from 2019, NULL before). */
export const serverCapabilities: Statement<never> = {
  text: [
    "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS product_version,",
    "       CAST(SERVERPROPERTY('EngineEdition') AS int) AS engine_edition,",
    `       CAST(COLLATIONPROPERTY(N'${UTF8_COLLATION}', 'CodePage') AS int) AS utf8_code_page;`,
  ].join('\n'),
  params: {},
};

export interface ServerCapabilities {
  product_version?: string | null;
  engine_edition?: number | null;
  utf8_code_page?: number | null;
}

/** null when the server can hold the schema; else an actionable message. */
export function serverVersionProblem(row: ServerCapabilities | undefined): string | null {
  if (row && Number(row.utf8_code_page) === 65001) return null;
  const version = row?.product_version ?? 'unknown';
  return (
    `this SQL Server (product version ${version}) lacks the UTF-8 collation ${UTF8_COLLATION}, which the schema's ` +
    'publish procedures and topic copies need: AsyncResponse needs SQL Server 2019 (15.x) or newer, Azure SQL Database ' +
    'or Azure SQL Managed Instance. Upgrade the server, or use a database on one of those.'
  );
}
