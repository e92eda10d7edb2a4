# Sourced by the bench/peers comparisons (from the repository root, after
# BUILD is set): the peers' environment, the model, and the workload helper.
# Sets MODEL_DIR, TB, PY, CACHE; make_workload writes a workload and sets
# WORKLOAD and MAX_TOKENS (the model's max_seq_length, where every runtime
# compared truncates).
MODEL_DIR="$PWD/build/cache/models/all-MiniLM-L6-v2"
TB="$BUILD/src/cli/tokenbatch"
PY=build/peers-venv/bin/python
CACHE=build/peers-cache
bash bench/peers/setup_peers.sh >/dev/null
mkdir -p "$CACHE"

make_workload() {  # make_workload MIX REQUESTS FILE: the mix counted with the model's tokenizer
  WORKLOAD="$3"
  "$TB" simulate --mix "$1" --requests "$2" --tokenizer "$MODEL_DIR/tokenizer.json" --save-workload "$WORKLOAD" \
    >/dev/null
  MAX_TOKENS=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['max_seq_length'])" \
    "$MODEL_DIR/sentence_bert_config.json")
}
