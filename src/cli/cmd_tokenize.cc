// `tokenbatch tokenize --tokenizer FILE [--no-special-tokens]`: JSON Lines in,
// JSON Lines out. Each stdin line {"text": "..."} gives one stdout line
// {"ids": [...], "tokens": N}, in input order.
// `tokenbatch tokenize --decode --tokenizer FILE [--keep-special-tokens]`: the
// reverse; each line {"ids": [...]} gives {"text": "..."} (Tokenizer::Decode,
// special tokens skipped unless --keep-special-tokens, as TEI's /decode).
// A line that is not a JSON object with a string "text" (or, with --decode, an
// array "ids" of integers), whose text is not valid UTF-8 or whose ids are not
// in the vocabulary gives {"error": "line K: <cause>"} instead; the command then
// exits 1 after the last line (it never stops early and never crashes on input).
// A tokenizer that cannot be loaded exits 2 before reading stdin.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/fail.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::cli {
namespace {

constexpr Command kCommand{"tokenize", 2};

struct TokenizeFlags {
  std::string tokenizer_path;
  bool no_special_tokens = false;
  bool decode = false;
  bool keep_special_tokens = false;
};

// One output line for one input line; sets `failed` on an error line.
std::string ProcessLine(const tokenizer::Tokenizer& tok, const std::string& line, size_t line_no,
                        const TokenizeFlags& flags, bool& failed) {
  const auto error = [&](const std::string& cause) {
    failed = true;
    nlohmann::json out;
    out["error"] = "line " + std::to_string(line_no) + ": " + cause;
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  nlohmann::json in = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded()) return error("not valid JSON");
  if (flags.decode) {
    const auto ids = in.is_object() ? in.find("ids") : in.end();
    if (ids == in.end() || !ids->is_array() ||
        !std::all_of(ids->begin(), ids->end(), [](const nlohmann::json& x) {
          return x.is_number_unsigned() && x.get<uint64_t>() <= UINT32_MAX;
        })) {
      return error("expected an object with an array \"ids\" of token ids (integers from 0 to 2^32-1)");
    }
    auto text = tok.Decode(ids->get<std::vector<uint32_t>>(), !flags.keep_special_tokens);
    if (!text.ok()) return error(std::string(text.status().message()));
    nlohmann::json out;
    out["text"] = *text;
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
    return error("expected an object with a string field \"text\"");
  }
  tokenizer::EncodeOptions options;
  options.add_special_tokens = !flags.no_special_tokens;
  options.with_offsets = false;
  auto enc = tok.Encode(in["text"].get_ref<const std::string&>(), options);
  if (!enc.ok()) return error(std::string(enc.status().message()));
  nlohmann::json out;
  out["ids"] = enc->ids;
  out["tokens"] = enc->ids.size();
  return out.dump();
}

// Exits 2 when the tokenizer cannot be loaded, 1 when a line failed.
void RunTokenize(const TokenizeFlags& flags) {
  const auto tok = OrFail(kCommand, tokenizer::Tokenizer::FromFile(flags.tokenizer_path), "loading the tokenizer");
  std::ios::sync_with_stdio(false);
  bool failed = false;
  std::string line;
  size_t line_no = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::cout << ProcessLine(*tok, line, line_no, flags, failed) << '\n';
  }
  std::cout.flush();
  if (failed) throw CLI::RuntimeError(1);  // each failed line already says why on stdout
}

}  // namespace

void AddTokenizeCommand(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Encode JSON Lines {\"text\": ...} (or, with --decode, decode {\"ids\": [...]}) from stdin with a Hugging Face tokenizer.json");
  cmd->add_option("--tokenizer", flags->tokenizer_path, "path to tokenizer.json")->required();
  CLI::Option* no_special = cmd->add_flag("--no-special-tokens", flags->no_special_tokens,
                                          "do not add the post-processor's special tokens ([CLS]/[SEP], ...)");
  CLI::Option* decode =
      cmd->add_flag("--decode", flags->decode, "decode: read {\"ids\": [...]} lines, write {\"text\": ...}")
          ->excludes(no_special);
  cmd->add_flag("--keep-special-tokens", flags->keep_special_tokens,
                "with --decode: keep special tokens in the text (default: skipped, as TEI's /decode)")
      ->needs(decode);
  cmd->callback([flags] { RunTokenize(*flags); });
}

}  // namespace tokenbatch::cli
