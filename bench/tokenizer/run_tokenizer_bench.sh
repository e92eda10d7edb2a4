#!/usr/bin/env bash
# Runs our tokenizer and Hugging Face's (npm `tokenizers`) on the same texts
# (testdata/tokenizer/realtext.jsonl, 2,043 texts, 1.1 MB), alternating ours and
# theirs REPS times in one run, single thread, for Qwen3 and BERT; prints the best
# figure of each (impl, mode) over the repetitions and the ratios ours / best
# Hugging Face mode. Best-of-REPS damps noise from other processes on the machine.
# Usage: bench/tokenizer/run_tokenizer_bench.sh BUILD_DIR [ROUNDS] [REPS]
#   BUILD_DIR holds the built tokenizer_bench (found anywhere below it).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:?usage: run_tokenizer_bench.sh BUILD_DIR [ROUNDS]}"
ROUNDS="${2:-5}"
REPS="${3:-2}"
BIN="$(find "$BUILD" -name tokenizer_bench -type f -perm -u+x | head -1)"
[ -n "$BIN" ] || { echo "tokenizer_bench not found under $BUILD" >&2; exit 2; }
TEXTS=testdata/tokenizer/realtext.jsonl
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
for model in qwen3 bert; do
  TOK="build/cache/$model/tokenizer.json"
  [ -f "$TOK" ] || { echo "$TOK missing: run scripts/setup.sh" >&2; exit 2; }
  ours=""; ref=""
  for _ in $(seq "$REPS"); do
    ours+="$("$BIN" "$TOK" "$TEXTS" "$ROUNDS")"$'\n'
    ref+="$(node bench/tokenizer/reference_bench.js "$TOK" "$TEXTS" "$ROUNDS")"$'\n'
  done
  node -e '
    const [model, ours, ref] = process.argv.slice(1);
    // Best of the repetitions for each mode.
    const parse = (s) => {
      const best = new Map();
      for (const x of s.trim().split("\n").map((l) => JSON.parse(l))) {
        if (!best.has(x.mode) || best.get(x.mode).tokens_per_s < x.tokens_per_s) best.set(x.mode, x);
      }
      return [...best.values()];
    };
    const o = parse(ours), r = parse(ref);
    const get = (a, m) => a.find((x) => x.mode === m).tokens_per_s;
    const hf = Math.max(get(r, "encode"), get(r, "encode_batch"));
    console.log(`${model}:`);
    for (const x of r) console.log(`  huggingface ${x.mode.padEnd(18)} ${String(x.tokens_per_s).padStart(10)} tokens/s  (${x.mb_per_s} MB/s)`);
    for (const x of o) console.log(`  tokenbatch  ${x.mode.padEnd(18)} ${String(x.tokens_per_s).padStart(10)} tokens/s  (${x.mb_per_s} MB/s)  ratio vs best HF: ${(x.tokens_per_s / hf).toFixed(2)}x`);
    if (o[0].tokens !== r[0].tokens) console.log(`  WARNING: token totals differ: ours ${o[0].tokens}, HF ${r[0].tokens}`);
  ' "$model" "$ours" "$ref"
done
