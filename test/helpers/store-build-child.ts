// Child process for test/store-kill.test.ts: builds a unit store and reports progress on stdout,
// so the parent can kill it with SIGKILL in the middle. Usage: store-build-child.ts <catalog-src> <store-root>
import { loadCatalogSrc } from '../../generator/load.ts';
import { buildUnitStore } from '../../generator/store/build-store.ts';

const [srcDir, storeRoot] = process.argv.slice(2);
const cat = await loadCatalogSrc(srcDir);
const r = await buildUnitStore(cat, {
  storeRoot,
  builtAt: '2026-11-02T00:00:00.000Z',
  skipBadRecords: false,
  progress: (m) => console.log(`progress ${m}`),
});
console.log(`done ${r.store_version}`);
