// What the client's redaction of the service's answers costs (client/redact.ts, issue 50 item 2):
// every string of every answer is scanned for any form of the balance token before it goes anywhere.
// Prints the CPU time of redacting a paid draw's answer of 100 units (~480 KB of JSON), the largest
// answer a draw gives, averaged over 20 runs. Run: npx tsx bench/redact.ts
import { redactDeep, tokenRedactor } from '../client/redact.ts';

const token = `lds_bal_${'Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789_-abcdefg'.slice(0, 43)}`;
const redact = tokenRedactor([token]);
const units = Array.from({ length: 100 }, (_, i) => ({
  ref: `eu.eurlex:32016R0679#p${i}`,
  text: 'The Member States shall ensure that the competent authorities under Article 12 of Regulation (EU) 2016/679 '.repeat(42),
  citation_text: `Regulation (EU) 2016/679, Article ${i}`,
}));
const answer = { units, receipt: { draw_id: 'drw_0123456789abcdef', units_sha256: 'a'.repeat(64) } };
const bytes = JSON.stringify(answer).length;
redactDeep(answer, redact); // warm up
const runs = 20;
const before = process.cpuUsage();
for (let i = 0; i < runs; i++) redactDeep(answer, redact);
const used = process.cpuUsage(before);
const ms = (used.user + used.system) / 1000 / runs;
console.log(`redacting a 100-unit answer (${(bytes / 1024).toFixed(0)} KiB): ${ms.toFixed(1)} CPU-ms, ${(bytes / 1024 / 1024 / (ms / 1000)).toFixed(0)} MiB/s`);
