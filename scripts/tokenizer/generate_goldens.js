// Generates the golden ids that src/tokenizer/golden_test.cc compares against,
// using Hugging Face's own `tokenizers` npm package (prebuilt Rust) as the
// reference. Run scripts/setup.sh first (it fetches the tokenizers and the package).
//
// For each tokenizer (qwen3, llama3, bert from build/cache, plus the variants in
// testdata/tokenizer/variants/*.json: a base tokenizer with some top-level fields
// replaced, and the small tokenizers of testdata/tokenizer/synthetic/*.json) it writes testdata/tokenizer/golden/<name>.corpus.jsonl: one line per
// corpus text with the ids with and without special tokens and the byte offsets
// (plus, for the real tokenizers, the ids with setTruncation(16)).
// For the three real tokenizers it also writes <name>.realtext.jsonl: the token
// count and an FNV-1a-64 hash of the ids of each real text (the hash keeps the
// committed file small; the test compares every id through it and prints the ids
// on a mismatch). Long documents (names long_doc*) are stored the same way.
// Usage: node scripts/tokenizer/generate_goldens.js   (from the repo root)
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const cache = path.join(root, 'build', 'cache');
const data = path.join(root, 'testdata', 'tokenizer');
const { Tokenizer } = require(path.join(cache, 'npm', 'node_modules', 'tokenizers'));

const readJsonl = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

// Hugging Face reports offsets in code points; the C++ API reports UTF-8 bytes.
function byteOffsets(text, offsets) {
  const cps = Array.from(text);
  const prefix = [0];
  for (const c of cps) prefix.push(prefix[prefix.length - 1] + Buffer.byteLength(c, 'utf8'));
  return offsets.map(([b, e]) => [prefix[b], prefix[e]]);
}

// FNV-1a 64 over the ids, one 32-bit id at a time (see golden_test.cc).
function hashIds(ids) {
  let h = 0xcbf29ce484222325n;
  for (const id of ids) {
    h ^= BigInt(id);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

function loadVariant(file) {
  const v = JSON.parse(fs.readFileSync(file, 'utf8'));
  const base = JSON.parse(fs.readFileSync(path.join(cache, v.base, 'tokenizer.json'), 'utf8'));
  Object.assign(base, v.replace || {});
  if (v.extra_added_tokens) base.added_tokens = base.added_tokens.concat(v.extra_added_tokens);
  Object.assign(base.model, v.model_options || {});
  return Tokenizer.fromString(JSON.stringify(base));
}

async function main() {
  const corpus = readJsonl(path.join(data, 'corpus.jsonl'));
  const real = readJsonl(path.join(data, 'realtext.jsonl'));
  const tokenizers = ['qwen3', 'llama3', 'bert'].map((n) => [n, Tokenizer.fromFile(path.join(cache, n, 'tokenizer.json')), true]);
  for (const f of fs.readdirSync(path.join(data, 'variants')).sort()) {
    if (f.endsWith('.json')) tokenizers.push([f.slice(0, -5), loadVariant(path.join(data, 'variants', f)), false]);
  }
  // Small hand-made tokenizers for options the real ones do not use (byte_fallback,
  // fuse_unk, continuing_subword_prefix, end_of_word_suffix, merges as pairs).
  for (const f of fs.readdirSync(path.join(data, 'synthetic')).sort()) {
    if (f.endsWith('.json')) tokenizers.push([f.slice(0, -5), Tokenizer.fromFile(path.join(data, 'synthetic', f)), false]);
  }
  for (const [name, tok, withReal] of tokenizers) {
    // The same tokenizer with Hugging Face's truncation to 16 tokens, for
    // Tokenizer::EncodeTruncated (real tokenizers only).
    const truncating = withReal ? Tokenizer.fromFile(path.join(cache, name, 'tokenizer.json')) : null;
    if (truncating) truncating.setTruncation(16);
    const lines = [];
    for (const { name: textName, text } of corpus) {
      const withSpecial = await tok.encode(text, null, { addSpecialTokens: true });
      const without = await tok.encode(text, null, { addSpecialTokens: false });
      const truncated16 = truncating ? (await truncating.encode(text, null, { addSpecialTokens: true })).getIds() : undefined;
      const offsets = byteOffsets(text, withSpecial.getOffsets());
      if (textName.startsWith('long_doc')) {
        // Long documents: counts and hashes only, to keep the committed files small.
        lines.push(JSON.stringify({
          name: textName,
          n: withSpecial.getIds().length,
          ids_hash: hashIds(withSpecial.getIds()),
          n_no_special: without.getIds().length,
          ids_no_special_hash: hashIds(without.getIds()),
          offsets_hash: hashIds(offsets.flat()),
          truncated_16: truncated16,
        }));
      } else {
        lines.push(JSON.stringify({
          name: textName,
          ids: withSpecial.getIds(),
          ids_no_special: without.getIds(),
          offsets,
          truncated_16: truncated16,
        }));
      }
    }
    fs.writeFileSync(path.join(data, 'golden', `${name}.corpus.jsonl`), lines.join('\n') + '\n');
    if (!withReal) continue;
    const realLines = [];
    for (const { name: textName, text } of real) {
      const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      realLines.push(JSON.stringify({ name: textName, n: ids.length, hash: hashIds(ids) }));
    }
    fs.writeFileSync(path.join(data, 'golden', `${name}.realtext.jsonl`), realLines.join('\n') + '\n');
  }
  console.log(`goldens for ${tokenizers.map((t) => t[0]).join(', ')}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
