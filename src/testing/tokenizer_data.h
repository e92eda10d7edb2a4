// Where the tests find real tokenizer.json files.
//
// The test suite reads Qwen3, Llama 3 and BERT uncased from the project's shared
// tokenizer data, ../shared/data/tokenizers beside the repository (see its
// README for provenance and licences), or from the folder given to CMake as
// -DTOKENBATCH_TEST_TOKENIZERS=DIR. The product's own copies of Qwen3 and BERT
// live in data/tokenizers; the tests tokenizer_data_matches_shared_* check that
// they are byte-identical to the shared ones.
#pragma once

#include <string>
#include <string_view>

#include "testing/build_paths.h"

namespace tokenbatch::testing {

// The tokenizer.json of a test tokenizer by its short name: "qwen3", "llama3" or
// "bert" (bert-base-uncased); any other name maps to the folder of that name.
// Pure: it does not check that the file exists; loading it does, and the loader's
// error names the path.
inline std::string TestTokenizerPath(std::string_view name) {
  const std::string_view folder = name == "bert" ? std::string_view("bert-base-uncased") : name;
  return SharedTokenizersDir() + "/" + std::string(folder) + "/tokenizer.json";
}

}  // namespace tokenbatch::testing
