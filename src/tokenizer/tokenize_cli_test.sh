#!/usr/bin/env bash
# End-to-end check of `tokenbatch tokenize` (src/cli/cmd_tokenize.cc) with BERT:
# ids per line in input order, special tokens on/off, an error line naming the
# cause for each bad line, and exit status 1 after the last line; the same for
# --decode (ids back to text).
# Usage: tokenize_cli_test.sh TOKENBATCH_BINARY BERT_TOKENIZER_JSON
set -uo pipefail
BIN="$1"
TOK="$2"
if [ ! -f "$TOK" ]; then
  echo "FAIL: $TOK is missing: run scripts/setup.sh to fetch the tokenizers"
  exit 1
fi
fail() { echo "FAIL: $*"; exit 1; }

input='{"text": "Hello, world!"}
not json
{"text": 42}
{"text": ""}
{"text": "[CLS] hi"}'
out="$(printf '%s\n' "$input" | "$BIN" tokenize --tokenizer "$TOK")"
rc=$?
[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1 (bad lines present)"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "expected 5 output lines, got: $out"
line() { printf '%s\n' "$out" | sed -n "${1}p"; }
[ "$(line 1)" = '{"ids":[101,7592,1010,2088,999,102],"tokens":6}' ] || fail "line 1: $(line 1)"
[ "$(line 2)" = '{"error":"line 2: not valid JSON"}' ] || fail "line 2: $(line 2)"
[ "$(line 3)" = '{"error":"line 3: expected an object with a string field \"text\""}' ] || fail "line 3: $(line 3)"
[ "$(line 4)" = '{"ids":[101,102],"tokens":2}' ] || fail "line 4: $(line 4)"
[ "$(line 5)" = '{"ids":[101,101,7632,102],"tokens":4}' ] || fail "line 5: $(line 5)"

out="$(printf '%s\n' '{"text": "Hello, world!"}' | "$BIN" tokenize --tokenizer "$TOK" --no-special-tokens)"
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc with only good lines"
[ "$out" = '{"ids":[7592,1010,2088,999],"tokens":4}' ] || fail "--no-special-tokens: $out"

# --decode: ids back to text; [CLS]/[SEP] skipped unless --keep-special-tokens;
# an id outside the vocabulary or a malformed line is an error line.
input='{"ids": [101,7592,1010,2088,999,102]}
{"ids": [7592, 30522]}
{"ids": [7592, -1]}
{"ids": []}'
out="$(printf '%s\n' "$input" | "$BIN" tokenize --decode --tokenizer "$TOK")"
rc=$?
[ "$rc" -eq 1 ] || fail "--decode: exit status $rc, expected 1 (bad lines present)"
line() { printf '%s\n' "$out" | sed -n "${1}p"; }
[ "$(line 1)" = '{"text":"hello, world!"}' ] || fail "--decode line 1: $(line 1)"
[ "$(line 2)" = '{"error":"line 2: id 30522 at position 1 is not in the vocabulary of 30522 tokens"}' ] || fail "--decode line 2: $(line 2)"
case "$(line 3)" in '{"error":"line 3: expected an object with an array \"ids\"'*) ;; *) fail "--decode line 3: $(line 3)";; esac
[ "$(line 4)" = '{"text":""}' ] || fail "--decode line 4: $(line 4)"
out="$(printf '%s\n' '{"ids": [101,7592,102]}' | "$BIN" tokenize --decode --keep-special-tokens --tokenizer "$TOK")"
[ "$out" = '{"text":"[CLS] hello [SEP]"}' ] || fail "--decode --keep-special-tokens: $out"

"$BIN" tokenize --tokenizer /nonexistent/tokenizer.json </dev/null 2>/dev/null
rc=$?
[ "$rc" -eq 2 ] || fail "missing tokenizer file: exit status $rc, expected 2"
echo "tokenize_cli_test: 1 passed, 0 failed"
