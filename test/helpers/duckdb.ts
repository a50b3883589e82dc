/**
 * An independent reader for the file sink's committed files: DuckDB (its Node API, a native
 * build of DuckDB's own C++ Parquet and CSV readers), not the library that wrote them. Rows come
 * back as JSON-ready objects (BIGINT as a decimal string, TIMESTAMP as "YYYY-MM-DD HH:MM:SS").
 */
import { DuckDBInstance } from '@duckdb/node-api';

type Row = Record<string, unknown>;

async function query(sql: string): Promise<Row[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    return (await c.runAndReadAll(sql)).getRowObjectsJson() as Row[];
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

const list = (files: readonly string[]) => `[${files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ')}]`;

/** Every row of the Parquet files (each read and checked by DuckDB). */
export function readParquet(files: readonly string[]): Promise<Row[]> {
  return query(`select * from read_parquet(${list(files)})`);
}

/** Each file's row count and number of row groups, from DuckDB's reading of the footer. */
export async function parquetLayout(file: string): Promise<{ rows: number; rowGroups: number }> {
  const [r] = await query(`select sum(row_group_num_rows) / count(distinct path_in_schema) as rows, count(distinct row_group_id) as rowGroups from parquet_metadata('${file.replace(/'/g, "''")}')`);
  return { rows: Number(r!.rows), rowGroups: Number(r!.rowGroups) };
}

/** Column name: DuckDB type, of the files' schema. */
export async function parquetSchema(file: string): Promise<Record<string, string>> {
  const rows = await query(`describe select * from read_parquet('${file.replace(/'/g, "''")}')`);
  return Object.fromEntries(rows.map((r) => [r.column_name as string, r.column_type as string]));
}

/** Every row of CSV files with a header line, every column read as text. */
export function readCsv(files: readonly string[]): Promise<Row[]> {
  return query(`select * from read_csv(${list(files)}, header = true, all_varchar = true)`);
}
