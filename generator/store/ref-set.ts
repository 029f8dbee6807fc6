// Remembers which unit references a build has stored, to reject duplicates, in 12 bytes per
// reference instead of a JS string each (a Set of a million strings costs ~100 MB and slows every
// garbage collection). It keeps two independent 32-bit hashes per reference and the unit's
// ingestion number; when both hashes match, the caller confirms against that unit's reference
// before calling it a duplicate.

function fnv1a(s: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

const W = 3; // words per slot: h1 (0: empty, so h1 = 0 is stored as 1), h2, id

export class RefHashSet {
  private table = new Uint32Array(W * 1024);
  private size = 0;

  /**
   * Adds the reference of unit `id`; returns -1, or, when an equal hash pair is already there
   * (maybe a duplicate, and then not added again), the id stored with it.
   */
  add(ref: string, id: number): number {
    const h1 = fnv1a(ref, 2166136261) || 1;
    const h2 = fnv1a(ref, 0x9747b28c);
    if ((this.size + 1) * 2 > this.table.length / W) this.rehash();
    const { table } = this;
    const slots = table.length / W;
    for (let i = h2 % slots; ; i = (i + 1) % slots) {
      const a = table[W * i];
      if (a === 0) {
        table[W * i] = h1;
        table[W * i + 1] = h2;
        table[W * i + 2] = id;
        this.size++;
        return -1;
      }
      if (a === h1 && table[W * i + 1] === h2) return table[W * i + 2];
    }
  }

  private rehash(): void {
    const old = this.table;
    this.table = new Uint32Array(old.length * 2);
    const slots = this.table.length / W;
    for (let j = 0; j < old.length; j += W) {
      if (old[j] === 0) continue;
      let i = old[j + 1] % slots;
      while (this.table[W * i] !== 0) i = (i + 1) % slots;
      this.table.set(old.subarray(j, j + W), W * i);
    }
  }
}
