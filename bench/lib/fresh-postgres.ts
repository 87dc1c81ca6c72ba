/** A fresh PostgreSQL database for one benchmark run, dropped afterwards. */
import pg from 'pg';

/** Creates `ss_bench_<pid>_<time>_<n>` on TEST_DATABASE_URL's server (127.0.0.1:5432 by default), a copy of `template` when given. */
export async function freshPostgres(template?: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `ss_bench_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const onMaintenance = async (query: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  };
  // A template is copied whole (it must have no connection open).
  await onMaintenance(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onMaintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
