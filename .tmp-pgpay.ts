import { spawnSync } from 'node:child_process';
import { startEmbeddedPostgres, freshDatabase } from './test/helpers/pg.ts';
const srv = await startEmbeddedPostgres();
try {
  const url = await freshDatabase(srv);
  const args = process.argv.slice(2);
  spawnSync(process.execPath, [...args, '/tmp/perf-tools/pay.mjs'], { stdio: 'inherit', env: { ...process.env, PGURL: url } });
} finally { await srv.stop(); }
