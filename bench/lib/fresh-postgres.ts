/** A fresh PostgreSQL database for one benchmark run, dropped afterwards. */
import pg from 'pg';

/** Creates `ss_bench_<pid>_<time>` on TEST_DATABASE_URL's server (127.0.0.1:5432 by default). */
export async function freshPostgres(): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `ss_bench_${process.pid}_${Date.now()}`;
  const onMaintenance = async (query: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  };
  await onMaintenance(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onMaintenance(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
