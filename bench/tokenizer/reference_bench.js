// Throughput of Hugging Face tokenizers (npm `tokenizers`, prebuilt Rust) on a
// JSON Lines file of texts, single thread. Two ways of calling it:
//   encode:       one await tok.encode(text) per text (includes the Node <-> Rust call cost)
//   encode_batch: one tok.encodeBatch(all texts) per round; run with
//                 RAYON_NUM_THREADS=1 so that Rust uses a single thread
// Each mode runs one untimed warm-up round and then ROUNDS timed rounds.
// Usage: node reference_bench.js TOKENIZER_JSON TEXTS_JSONL [ROUNDS]
'use strict';
const fs = require('fs');
const path = require('path');

const [tokPath, textsPath, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 5);
const { Tokenizer } = require(path.join(__dirname, '..', '..', 'build', 'cache', 'npm', 'node_modules', 'tokenizers'));
const tok = Tokenizer.fromFile(tokPath);
const texts = fs.readFileSync(textsPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l).text);
const bytes = texts.reduce((a, t) => a + Buffer.byteLength(t, 'utf8'), 0);

async function time(mode, oneRound) {
  await oneRound();
  let tokens = 0;
  const start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) tokens += await oneRound();
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ impl: 'huggingface', mode, tokens, seconds: Number(s.toFixed(4)),
    tokens_per_s: Math.round(tokens / s), mb_per_s: Number((bytes * rounds / s / 1e6).toFixed(2)) }));
}

(async () => {
  await time('encode', async () => {
    let n = 0;
    for (const t of texts) n += (await tok.encode(t, null, { addSpecialTokens: true })).getIds().length;
    return n;
  });
  await time('encode_batch', async () => {
    const encs = await tok.encodeBatch(texts, { addSpecialTokens: true });
    return encs.reduce((a, e) => a + e.getIds().length, 0);
  });
})();
