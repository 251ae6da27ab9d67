// Readers for the SQL Server statement objects the stores build (text + typed mssql parameters), shared by the
// statement-shape tests of the transport and the channel.

import type { Statement } from '../../shared/stores/sqlserver/statements';

/** `DATEADD` of `p` milliseconds on the database clock, split into seconds and milliseconds (int-safe). */
export const SPLIT = (p: string, base = 'SYSUTCDATETIME()') =>
  `DATEADD(SECOND, CAST(${p} / 1000 AS int), DATEADD(MILLISECOND, CAST(${p} % 1000 AS int), ${base}))`;

type ParamShape = { type: { name: string }; length?: number; scale?: number };
const param = (statement: Statement, name: string) => statement.params[name] as unknown as ParamShape;

/** The mssql type name of a statement parameter (NVarChar, BigInt, UniqueIdentifier, …). */
export const typeName = (statement: Statement, name: string) => param(statement, name).type.name;
export const length = (statement: Statement, name: string) => param(statement, name).length;
export const scale = (statement: Statement, name: string) => param(statement, name).scale;
