// Writes testdata/tokenizer/corpus.jsonl (hand-picked corner cases plus long
// documents) and testdata/tokenizer/realtext.jsonl (a few thousand texts of real
// prose and poetry from Debian's fortunes, fortunes-zh and common-licenses
// packages). Deterministic: run it again and the files come out the same.
// Usage: node scripts/tokenizer/make_corpus.js   (from the repo root)
'use strict';
const fs = require('fs');
const path = require('path');

const out = path.join(__dirname, '..', '..', 'testdata', 'tokenizer');
const read = (f) => fs.readFileSync(f, 'utf8');

const cases = [
  ['empty', ''],
  ['space', ' '],
  ['whitespace_only', '   \t\n  '],
  ['newlines_only', '\n\n\n'],
  ['hello', 'Hello, world!'],
  ['upper_contractions', "HELLO WORLD I'M HERE. YOU'RE, WE'VE, THEY'LL, SHE'D, IT'S DON'T"],
  ['lower_contractions', "don't can't won't I'm you're we've they'll she'd it's"],
  ['crlf', 'line one\r\nline two\r\n\r\nline three\r\n'],
  ['whitespace_runs', 'a    b\t\t\tc     \n   d  \u00a0 e\u3000f'],
  ['trailing_spaces', 'end   '],
  ['leading_spaces', '    start'],
  ['long_digits', '1234567890123456789012345 and 007 and 3.14159 2,000,000 10^9'],
  ['chinese', '我爱北京天安门。今天天气很好，我们去公园吧！'],
  ['japanese', '東京は日本の首都です。カタカナとひらがな、漢字。'],
  ['korean', '안녕하세요 세계. 한국어 텍스트입니다.'],
  ['cjk_ext', '\u{20000}\u{20001}\u{2A700}\u{2B740}\u{2B820}\u{2B920}\u{2CEA0}\u{2F800}\u{30000}'],
  ['cjk_compat', '\uF900\uF901\uFA0E 豈 更'],
  ['mixed_scripts', 'Привет мир, γειά σου κόσμε, مرحبا بالعالم, שלום עולם, नमस्ते दुनिया, สวัสดีชาวโลก'],
  ['mixed_inline', 'GPU显存16GB，batch_size=32时throughput达到1200 tokens/s。'],
  ['emoji', '👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇯🇵 😀😃😄 #️⃣'],
  ['combining', 'e\u0301 a\u0308 o\u0302\u0323 Z\u0351\u0352a\u0353l\u0354g\u0355o'],
  ['precomposed_accents', 'café naïve résumé Ångström Ærøskøbing Crème Brûlée'],
  ['decomposed_accents', 'cafe\u0301 nai\u0308ve re\u0301sume\u0301'],
  ['full_width', 'ＡＢＣ１２３！？ｈｅｌｌｏ　ｗｏｒｌｄ（テスト）'],
  ['ligatures_compat', 'ﬁne ﬂow ① ² ½ ™ Ⅻ ㎏ ｶﾀｶﾅ'],
  ['long_word_150', 'a'.repeat(150)],
  ['long_word_mixed', 'supercalifragilistic'.repeat(8)],
  ['long_url', 'see https://example.com/' + 'x'.repeat(120) + '?q=1&r=2 now'],
  ['long_cjk_run', '的'.repeat(120)],
  ['qwen_special_inline', 'foo<|im_start|>bar<|im_end|>baz<|endoftext|>'],
  ['chat', '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n'],
  ['partial_special', '<|im_start <|im_end| <|endoftext|'],
  ['bert_special_inline', '[CLS] hello [SEP] world [MASK]. [UNK][PAD]'],
  ['llama_special_inline', '<|begin_of_text|>hi<|eot_id|><|start_header_id|>user<|end_header_id|>'],
  ['control_chars', 'a\u0000b\u0007c\u001bd\u200be\ufefff\u00adg'],
  ['replacement_char', 'bad\ufffdchar'],
  ['code', 'def foo(x):\n    return x**2  # comment\n\n\tif (a && b) { c++; }\n'],
  ['json', '{"a": [1, 2, 3], "b": {"c": null}}'],
  ['turkish', 'İstanbul DİYARBAKIR ıi İi'],
  ['german', 'Straße STRASSE Grüße'],
  ['greek_sigma', 'ΟΔΥΣΣΕΥΣ Σίσυφος'],
  ['punctuation_runs', '!!!??? ... --- *** ___ ~~~ ``` \'\'\' """'],
  ['apostrophes', "rock 'n' roll, the '90s, O'Neil's 'quoted'"],
  ['newline_mix', 'a\n\nb\r\rc\u2028d\u2029e\u0085f'],
  ['tabs', '\tindented\n\t\tdouble\n'],
  ['numbers_mixed', 'v1.2.3 0x1F 1e-5 ١٢٣ ४५६ ¾'],
  ['math', '∀x∈ℝ: x²≥0 ∑ ∫ √2 ≈ 1.414'],
  ['private_use', 'a\uE000b\u{F0000}c'],
  ['new_emoji_u15', 'shaking \u{1FAE8} face'],
  ['unicode_15_1_and_16', 'ext-I \u{2EBF0}\u{2EBF1} bags \u{1FAE9} garay \u{10D50}\u{10D51} legacy \u{1CC00}'],
  ['added_token_forms', 'Tokenbatch tokenbatch xTokenbatch Tokenbatchy TOKENBATCH! a  <sep>  b<sep>c STRASSE Straße'],
  ['hangul_jamo', '\u1100\u1161\u11A8 \u1112\u1161\u11AB'],
  ['bom_and_zero_width', '\ufeffstart\u200c\u200d end\u2060'],
];

const docs = [];
const gpl = read('/usr/share/common-licenses/GPL-3');
docs.push(['long_doc_gpl3', gpl.slice(0, 20000)]);
const tang = read('/usr/share/games/fortunes/tang300').split('\n%\n').slice(0, 60).join('\n');
docs.push(['long_doc_tang300', tang]);
const mixed = read('/usr/share/common-licenses/Apache-2.0').slice(0, 6000) + '\n\n' +
  read('/usr/share/games/fortunes/song100').split('\n%\n').slice(0, 30).join('\n');
docs.push(['long_doc_mixed', mixed]);

const lines = cases.concat(docs).map(([name, text]) => JSON.stringify({ name, text }));
fs.writeFileSync(path.join(out, 'corpus.jsonl'), lines.join('\n') + '\n');

// Real text: fortune entries (split on "%" lines) and license paragraphs.
const fortunes = (f, n) => read(path.join('/usr/share/games/fortunes', f)).split(/\n%\n/)
  .map((s) => s.trim()).filter((s) => s.length > 0).slice(0, n);
const paragraphs = (f, n) => read(path.join('/usr/share/common-licenses', f)).split(/\n\s*\n/)
  .map((s) => s.trim()).filter((s) => s.length > 0).slice(0, n);
const real = [];
const add = (source, texts) => texts.forEach((text, i) => real.push({ name: `${source}#${i}`, text }));
add('fortunes/fortunes', fortunes('fortunes', 400));
add('fortunes/literature', fortunes('literature', 300));
add('fortunes/computers', fortunes('computers', 300));
add('fortunes/science', fortunes('science', 200));
add('fortunes/chinese', fortunes('chinese', 250));
add('fortunes/tang300', fortunes('tang300', 300));
add('fortunes/song100', fortunes('song100', 100));
add('licenses/GPL-3', paragraphs('GPL-3', 300));
add('licenses/Apache-2.0', paragraphs('Apache-2.0', 200));
add('licenses/MPL-2.0', paragraphs('MPL-2.0', 200));
fs.writeFileSync(path.join(out, 'realtext.jsonl'), real.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(`corpus: ${lines.length} texts; realtext: ${real.length} texts`);
