// A client request to backend inputs (see input_preparation.h).
#include "service/input_preparation.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "service/input_tokens.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

// Code points in valid UTF-8 (the API checked it): every byte but the
// continuation bytes 10xxxxxx starts one.
std::int64_t CountCodePoints(std::string_view text) {
  std::int64_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The prompt a request gets, and how many leading tokens it becomes:
// sentence-transformers' prompt_length, the prompt tokenised alone less its
// trailing special tokens (so the leading [CLS] counts); 0 for no prompt.
struct Prompt {
  std::string text;
  std::int64_t tokens = 0;
};

// sentence-transformers' prompt_length of `text` (see Prompt).
absl::StatusOr<std::int64_t> PromptLength(const tokenizer::Tokenizer& tokenizer, const std::string& text) {
  EmbedInput alone;
  alone.text = text;
  absl::StatusOr<InputTokens> ids = InputToTokens(tokenizer, alone, InputTokenLimits{});
  if (!ids.ok()) return WithMessagePrefix(ids.status(), "prompt: ");
  return static_cast<std::int64_t>(ids->ids.size()) - ids->specials.suffix;
}

absl::StatusOr<Prompt> ResolvePrompt(const tokenizer::Tokenizer& tokenizer, const InputPreparation& how,
                                     const EmbedRequest& request) {
  Prompt prompt{.text = how.default_prompt};
  if (request.prompt_name.has_value() && !request.prompt_name->empty()) {
    auto it = how.prompts.find(*request.prompt_name);
    if (it == how.prompts.end()) {
      std::vector<std::string> names;
      for (const auto& [name, text] : how.prompts) names.push_back(name);
      return InvalidArgumentError(absl::StrCat("prompt_name \"", *request.prompt_name, "\" is not one of the model's ",
                                               "prompts (", names.empty() ? "it has none" : absl::StrJoin(names, ", "),
                                               ")"));
    }
    prompt.text = it->second;
  }
  if (prompt.text.empty()) return prompt;
  auto counted = how.prompt_lengths.find(prompt.text);
  absl::StatusOr<std::int64_t> length =
      counted != how.prompt_lengths.end() ? counted->second : PromptLength(tokenizer, prompt.text);
  if (!length.ok()) return length.status();
  prompt.tokens = *length;
  return prompt;
}

// The prompt's leading tokens in an input of `kept` ids whose text (with the
// prompt) was `prompted`: fewer when a left truncation cut into the prompt
// (after the leading special tokens), never the whole input.
int PromptTokensKept(const tokenizer::Tokenizer& tokenizer, const Prompt& prompt, const InputTokenLimits& limits,
                     const std::string& prompted, const InputTokens& ids) {
  const auto kept = static_cast<std::int64_t>(ids.ids.size());
  std::int64_t prompt_tokens = prompt.tokens;
  if (limits.truncate_to > 0 && limits.direction == TruncationDirection::kLeft) {
    absl::StatusOr<std::size_t> whole = tokenizer.Count(prompted);
    const std::int64_t cut = whole.ok() ? static_cast<std::int64_t>(*whole) - kept : 0;
    prompt_tokens = std::max<std::int64_t>(ids.specials.prefix, prompt_tokens - cut);
  }
  return static_cast<int>(std::min<std::int64_t>(prompt_tokens, kept - 1));
}

}  // namespace

void CountPromptTokens(const tokenizer::Tokenizer& tokenizer, InputPreparation& how) {
  how.prompt_lengths.clear();
  if (!how.default_prompt.empty()) how.prompt_lengths.emplace(how.default_prompt, PromptLength(tokenizer, how.default_prompt));
  for (const auto& [name, text] : how.prompts) {
    if (!text.empty() && !how.prompt_lengths.contains(text)) how.prompt_lengths.emplace(text, PromptLength(tokenizer, text));
  }
}

absl::StatusOr<PreparedInputs> PrepareInputs(const tokenizer::Tokenizer& tokenizer, const InputPreparation& how,
                                             const EmbedRequest& request) {
  if (how.sparse && request.dimensions != 0) {
    return InvalidArgumentError("dimensions does not apply to sparse embeddings (one weight per vocabulary id)");
  }
  if (request.dimensions < 0 || request.dimensions > how.hidden_size) {
    return InvalidArgumentError(
        absl::StrCat("dimensions ", request.dimensions, " outside [1, ", how.hidden_size, "] (the model's width)"));
  }
  const bool cross_encoder = how.cross_encoder_token_types.has_value();
  const InputTokenLimits limits{
      .vocab_size = how.vocab_size,
      .truncate_to = request.truncate.value_or(how.auto_truncate) ? how.max_input_tokens : 0,
      .direction = request.truncation_direction.value_or(how.truncation_direction)};
  absl::StatusOr<Prompt> prompt = ResolvePrompt(tokenizer, how, request);
  if (!prompt.ok()) return prompt.status();
  const bool prompt_named = request.prompt_name.has_value() && !request.prompt_name->empty();

  PreparedInputs out;
  out.inputs.resize(request.inputs.size());
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    const EmbedInput& in = request.inputs[i];
    out.characters += in.is_ids ? static_cast<std::int64_t>(in.ids.size())
                                : CountCodePoints(in.text) + CountCodePoints(in.text_pair.value_or(""));
    // A cross-encoder takes its texts as sent: prompts are an embedding model's.
    const bool prompted = !prompt->text.empty() && !in.is_ids && !cross_encoder;
    if (!prompted && prompt_named && in.is_ids) {
      return InvalidArgumentError(absl::StrCat("input[", i, "]: prompt_name applies to text inputs, not token ids"));
    }
    EmbedInput with_prompt;
    if (prompted) with_prompt.text = absl::StrCat(prompt->text, in.text);
    const EmbedInput& text = prompted ? with_prompt : in;
    absl::StatusOr<InputTokens> ids = InvalidArgumentError("not tokenised");
    if (!in.text_pair.has_value()) {
      ids = InputToTokens(tokenizer, text, limits);
    } else if (!cross_encoder) {
      ids = InvalidArgumentError("a (query, document) pair needs a cross-encoder model; this one embeds");
    } else {
      ids = PairToTokens(tokenizer, in,
                         PairTokenLimits{.vocab_size = how.vocab_size,
                                         .max_input_tokens = how.max_input_tokens,
                                         .truncate = request.truncate.value_or(true),
                                         .truncation = how.pair_truncation,
                                         .direction = limits.direction,
                                         .token_types = *how.cross_encoder_token_types});
    }
    if (!ids.ok()) return WithMessagePrefix(ids.status(), absl::StrCat("input[", i, "]: "));
    backend::EmbeddingInput& item = out.inputs[i];
    if (prompted && prompt->tokens > 0) item.prompt_tokens = PromptTokensKept(tokenizer, *prompt, limits, text.text, *ids);
    out.tokens += static_cast<std::int64_t>(ids->ids.size());
    item.input_ids = std::move(ids->ids);
    item.token_type_ids = std::move(ids->token_type_ids);
    item.special_prefix = static_cast<int>(ids->specials.prefix);
    item.special_suffix = static_cast<int>(ids->specials.suffix);
    item.normalize = request.normalize;
    item.dimensions = request.dimensions;
  }
  return out;
}

}  // namespace tokenbatch::server
