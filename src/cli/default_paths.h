// The `tokenbatch` program's default files, found in the source tree it was
// built from: the committed tokenizers (data/tokenizers) and the models that
// scripts/prepare_assets.sh writes (build/cache/models).
//
// The paths live in one translation unit that CMake generates in the build
// folder (default_paths.cc.in) rather than in -D definitions on every command's
// file, so that a second clone's build finds those files in ccache: only the
// generated file differs between clones. Each function returns an absolute
// path; pure and thread-safe; it does not check that the file exists (loading
// it does, and that error names the path).
#pragma once

#include <string>

namespace tokenbatch::cli {

// The server's and demo's default tokenizer: data/tokenizers/qwen3/tokenizer.json.
std::string DefaultTokenizerPath();

// BERT uncased (data/tokenizers/bert-base-uncased/tokenizer.json), the tokenizer
// of the synthetic MiniLM TorchScript model that bench and simulate default to.
std::string BertTokenizerPath();

// The generated models folder: build/cache/models.
std::string ModelsDir();

}  // namespace tokenbatch::cli
