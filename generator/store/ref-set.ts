// Remembers which unit references a build has stored, to reject duplicates, in 8 bytes per
// reference instead of a JS string each (a Set of a million strings costs ~100 MB and slows every
// garbage collection). It keeps two independent 32-bit hashes per reference; when both match,
// the caller confirms against the stored references before calling it a duplicate.

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

export class RefHashSet {
  private table = new Uint32Array(2 * 1024); // pairs (h1, h2); h1 = 0 is stored as 1
  private size = 0;

  /** Adds the reference; false when an equal hash pair was already there (maybe a duplicate). */
  add(ref: string): boolean {
    const h1 = fnv1a(ref, 2166136261) || 1;
    const h2 = fnv1a(ref, 0x9747b28c);
    if ((this.size + 1) * 2 > this.table.length / 2) this.rehash();
    const slots = this.table.length / 2;
    for (let i = h2 % slots; ; i = (i + 1) % slots) {
      const a = this.table[2 * i];
      if (a === 0) {
        this.table[2 * i] = h1;
        this.table[2 * i + 1] = h2;
        this.size++;
        return true;
      }
      if (a === h1 && this.table[2 * i + 1] === h2) return false;
    }
  }

  private rehash(): void {
    const old = this.table;
    this.table = new Uint32Array(old.length * 2);
    const slots = this.table.length / 2;
    for (let j = 0; j < old.length; j += 2) {
      if (old[j] === 0) continue;
      let i = old[j + 1] % slots;
      while (this.table[2 * i] !== 0) i = (i + 1) % slots;
      this.table[2 * i] = old[j];
      this.table[2 * i + 1] = old[j + 1];
    }
  }
}
