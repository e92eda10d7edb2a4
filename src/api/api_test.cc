// Tests of the JSON shapes, limits and status mapping, without sockets.
#include "api/api.h"
#include "api/json_text.h"

#include <cstring>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

ApiError ErrorOf(const auto& v) {
  if (const ApiError* e = std::get_if<ApiError>(&v)) return *e;
  ADD_FAILURE() << "expected an error";
  return {};
}

TEST(OpenAiParse, StringArrayIdsAndOptions) {
  auto one = ParseOpenAiEmbeddings(R"({"input": "hello", "model": "m", "dimensions": 8})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(one));
  const auto& r = std::get<OpenAiEmbeddingsRequest>(one);
  ASSERT_EQ(r.request.inputs.size(), 1u);
  EXPECT_EQ(r.request.inputs[0].text, "hello");
  EXPECT_FALSE(r.request.inputs[0].is_ids);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.request.dimensions, 8);
  EXPECT_FALSE(r.base64);

  auto many = ParseOpenAiEmbeddings(R"({"input": ["a", "b", "c"], "encoding_format": "base64"})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(many));
  EXPECT_EQ(std::get<OpenAiEmbeddingsRequest>(many).request.inputs.size(), 3u);
  EXPECT_TRUE(std::get<OpenAiEmbeddingsRequest>(many).base64);

  auto ids = ParseOpenAiEmbeddings(R"({"input": [5, 6, 7]})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(ids));
  const auto& in = std::get<OpenAiEmbeddingsRequest>(ids).request.inputs;
  ASSERT_EQ(in.size(), 1u);
  EXPECT_TRUE(in[0].is_ids);
  EXPECT_THAT(in[0].ids, ::testing::ElementsAre(5, 6, 7));

  auto nested = ParseOpenAiEmbeddings(R"({"input": [[1, 2], [3]]})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(nested));
  const auto& n = std::get<OpenAiEmbeddingsRequest>(nested).request.inputs;
  ASSERT_EQ(n.size(), 2u);
  EXPECT_THAT(n[1].ids, ::testing::ElementsAre(3));
}

TEST(OpenAiParse, ErrorsHaveTheirStatusAndNameTheCause) {
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": )", {})).status, 400);
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"([1, 2])", {})).status, 400);
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"model": "m"})", {})).status, 400);
  ApiError wrong = ErrorOf(ParseOpenAiEmbeddings(R"({"input": 5})", {}));
  EXPECT_EQ(wrong.status, 400);
  EXPECT_THAT(wrong.message, HasSubstr("`input` must be a string or an array"));
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": ["a", 1]})", {})).status, 400);
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": [[1.5]]})", {})).status, 400);
  ApiError bad_id = ErrorOf(ParseOpenAiEmbeddings(R"({"input": [1, "a"]})", {}));
  EXPECT_EQ(bad_id.status, 400);
  EXPECT_THAT(bad_id.message, HasSubstr("found string at position 1"));
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "model": 3})", {})).status, 400);
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "dimensions": "8"})", {})).status, 400);
  ApiError empty = ErrorOf(ParseOpenAiEmbeddings(R"({"input": []})", {}));
  EXPECT_EQ(empty.status, 422);
  EXPECT_THAT(empty.message, HasSubstr("must not be empty"));
  ApiError empty_string = ErrorOf(ParseOpenAiEmbeddings(R"({"input": ["a", ""]})", {}));
  EXPECT_EQ(empty_string.status, 422);
  EXPECT_THAT(empty_string.message, HasSubstr("`input`[1] is an empty string"));
  ApiError format = ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "encoding_format": "int8"})", {}));
  EXPECT_EQ(format.status, 422);
  EXPECT_THAT(format.message, HasSubstr("int8"));
  EXPECT_EQ(ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "dimensions": 0})", {})).status, 422);
}

TEST(OpenAiParse, TooManyInputsIs413) {
  ApiError e = ErrorOf(ParseOpenAiEmbeddings(R"({"input": ["a", "b", "c"]})", {.max_client_batch_size = 2}));
  EXPECT_EQ(e.status, 413);
  EXPECT_THAT(e.message, HasSubstr("holds 3 inputs; at most 2"));
}

TEST(PriorityParse, VllmConventionLowerServedFirstOnBothRoutes) {
  // vLLM: lower `priority` is served first; the scheduler's levels run the other way.
  auto urgent = ParseOpenAiEmbeddings(R"({"input": "a", "priority": -5})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(urgent));
  EXPECT_EQ(std::get<OpenAiEmbeddingsRequest>(urgent).request.priority, 5);
  auto tei = ParseTeiEmbed(R"({"inputs": "a", "priority": 7})", {});
  ASSERT_TRUE(std::holds_alternative<TeiEmbedRequest>(tei));
  EXPECT_EQ(std::get<TeiEmbedRequest>(tei).request.priority, -7);
  auto unset = ParseTeiEmbed(R"({"inputs": "a", "priority": null})", {});
  ASSERT_TRUE(std::holds_alternative<TeiEmbedRequest>(unset));
  EXPECT_EQ(std::get<TeiEmbedRequest>(unset).request.priority, 0);

  const ApiError type = ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "priority": "high"})", {}));
  EXPECT_EQ(type.status, 400);
  EXPECT_THAT(type.message, HasSubstr("`priority` must be an integer"));
  EXPECT_EQ(ErrorOf(ParseTeiEmbed(R"({"inputs": "a", "priority": 1.5})", {})).status, 400);
  const ApiError range = ErrorOf(ParseTeiEmbed(R"({"inputs": "a", "priority": 18446744073709551615})", {}));
  EXPECT_EQ(range.status, 422);
  EXPECT_THAT(range.message, HasSubstr("18446744073709551615"));
  EXPECT_EQ(ErrorOf(ParseTeiEmbed(R"({"inputs": "a", "priority": -1000001})", {})).status, 422);
  // A whole number is an integer however it is written; out of range it is 422.
  auto written = ParseTeiEmbed(R"({"inputs": "a", "priority": 3e2, "dimensions": 4.0})", {});
  ASSERT_TRUE(std::holds_alternative<TeiEmbedRequest>(written));
  EXPECT_EQ(std::get<TeiEmbedRequest>(written).request.priority, -300);
  EXPECT_EQ(std::get<TeiEmbedRequest>(written).request.dimensions, 4);
  const ApiError huge = ErrorOf(ParseTeiEmbed(R"({"inputs": "a", "priority": 1e300})", {}));
  EXPECT_EQ(huge.status, 422);
  EXPECT_EQ(huge.message, "`priority` must be in [-1000000, 1000000], got 1e+300");
}

TEST(BodyChecks, InvalidUtf8Is422AndDeepNestingIs400) {
  const std::string bad = "{\"input\": \"ab\xff\"}";
  ApiError e = ErrorOf(ParseOpenAiEmbeddings(bad, {}));
  EXPECT_EQ(e.status, 422);
  EXPECT_THAT(e.message, HasSubstr("byte offset 13"));
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  ApiError d = ErrorOf(ParseTeiEmbed(deep, {}));
  EXPECT_EQ(d.status, 400);
  EXPECT_THAT(d.message, HasSubstr("nested 1000 levels"));
}

TEST(BodyChecks, FindInvalidUtf8) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("a\xC0\xAF"), 1u);          // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("ab\xED\xA0\x80"), 2u);     // UTF-16 surrogate
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("abc\xE4\xB8"), 3u);        // truncated at the end
  EXPECT_EQ(FindInvalidUtf8(std::string_view("a\0b", 3)), std::string_view::npos);
}

TEST(BodyChecks, NestingDepthIgnoresBracketsInStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": [[1]], "b": "[[[[\"{"})"), 3);
  EXPECT_EQ(JsonNestingDepth("1"), 0);
}

TEST(BodyChecks, HugeNumbersAreReplacedOutsideStringsOnly) {
  const ClampedBody c = ClampHugeNumbers(R"({"a": 1e400, "b": "1e400", "c": [-2e400, 18446744073709551616, 12]})");
  EXPECT_EQ(c.body,
            R"({"a": 18446744073709551615, "b": "1e400", "c": [-9223372036854775808, 18446744073709551614, 12]})");
  EXPECT_EQ(c.originals.at("18446744073709551615"), "1e400");
  EXPECT_EQ(c.originals.at("-9223372036854775808"), "-2e400");
  EXPECT_EQ(c.originals.at("18446744073709551614"), "18446744073709551616");
  EXPECT_EQ(c.originals.size(), 3u);
  // A substitute never repeats a number the body holds.
  const ClampedBody d = ClampHugeNumbers("[18446744073709551615, 1e999]");
  EXPECT_EQ(d.body, "[18446744073709551615, 18446744073709551614]");
  // Numbers simdjson holds, underflow to zero, and malformed literals are left alone.
  for (const char* kept : {"[1.5e308, 1e-400, -9223372036854775808, 18446744073709551615]", "[01e999]",
                           "[-]", "[1e]", R"([""", 1])"}) {
    const ClampedBody k = ClampHugeNumbers(kept);
    EXPECT_EQ(k.body, kept);
    EXPECT_TRUE(k.originals.empty()) << kept;
  }
}

TEST(TeiParse, FieldsAndValidation) {
  auto r = ParseTeiEmbed(
      R"({"inputs": ["x", "y"], "normalize": false, "truncate": true, "truncation_direction": "Left", "dimensions": 4})",
      {});
  ASSERT_TRUE(std::holds_alternative<TeiEmbedRequest>(r));
  const EmbedRequest& e = std::get<TeiEmbedRequest>(r).request;
  EXPECT_EQ(e.inputs.size(), 2u);
  EXPECT_EQ(e.normalize, std::optional<bool>(false));
  EXPECT_EQ(e.truncate, std::optional<bool>(true));
  EXPECT_EQ(e.truncation_direction, TruncationDirection::kLeft);
  EXPECT_EQ(e.dimensions, 4);
  auto defaults = ParseTeiEmbed(R"({"inputs": "x"})", {});
  ASSERT_TRUE(std::holds_alternative<TeiEmbedRequest>(defaults));
  EXPECT_FALSE(std::get<TeiEmbedRequest>(defaults).request.normalize.has_value());
  EXPECT_FALSE(std::get<TeiEmbedRequest>(defaults).request.truncate.has_value());

  EXPECT_EQ(ErrorOf(ParseTeiEmbed(R"({"inputs": "x", "normalize": "yes"})", {})).status, 400);
  EXPECT_EQ(ErrorOf(ParseTeiEmbed(R"({"inputs": "x", "truncation_direction": "middle"})", {})).status, 422);
  EXPECT_EQ(ErrorOf(ParseTeiEmbed(R"({"input": "x"})", {})).status, 400);
}

TEST(TokenizeParse, TextsAndSpecialTokens) {
  auto r = ParseTokenize(R"({"inputs": ["a b", "c"], "add_special_tokens": false})", {});
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(r));
  EXPECT_THAT(std::get<TokenizeRequest>(r).texts, ::testing::ElementsAre("a b", "c"));
  EXPECT_FALSE(std::get<TokenizeRequest>(r).add_special_tokens);
  EXPECT_EQ(ErrorOf(ParseTokenize(R"({"inputs": [1, 2]})", {})).status, 400);
}

TEST(Responses, OpenAiShapeWithUsageAndBase64) {
  EmbedResult result{.embeddings = {{1.0f, -2.5f}, {0.5f, 0.25f}}, .tokens = 7};
  const json body = json::parse(OpenAiEmbeddingsBody(result, "tiny", false));
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["total_tokens"], 7);
  ASSERT_EQ(body["data"].size(), 2u);
  EXPECT_EQ(body["data"][1]["index"], 1);
  EXPECT_EQ(body["data"][1]["object"], "embedding");
  EXPECT_EQ(body["data"][0]["embedding"], json({1.0, -2.5}));

  const json b64 = json::parse(OpenAiEmbeddingsBody(result, "tiny", true));
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(b64["data"][0]["embedding"].get<std::string>(), &bytes));
  ASSERT_EQ(bytes.size(), 8u);
  float back[2];
  std::memcpy(back, bytes.data(), 8);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.5f);
  // 1.0f is 00 00 80 3F little-endian.
  EXPECT_EQ(FloatsToBase64({1.0f}), "AACAPw==");
}

TEST(Responses, FloatsAreShortestRoundTripAndNonFiniteIsNull) {
  EXPECT_EQ(TeiEmbedBody(EmbedResult{.embeddings = {{0.1f, -2.0f, NAN}, {}}}), "[[0.1,-2,null],[]]");
  const float third = 1.0f / 3.0f;
  const json back = json::parse(TeiEmbedBody(EmbedResult{.embeddings = {{third}}}));
  EXPECT_EQ(back[0][0].get<float>(), third);  // the float32 value survives exactly
  const json named = json::parse(OpenAiEmbeddingsBody(EmbedResult{.embeddings = {{1.0f}}}, "a\"b", false));
  EXPECT_EQ(named["model"], "a\"b");  // escaped
}

TEST(OpenAiParse, RepeatedFieldsAndManyFieldsAreRefused) {
  const ApiError dup = ErrorOf(ParseOpenAiEmbeddings(R"({"input": "a", "model": "m", "input": "b"})", {}));
  EXPECT_EQ(dup.status, 400);
  EXPECT_THAT(dup.message, HasSubstr("duplicate field `input`"));
  std::string many = R"({"input": "a")";
  for (int i = 0; i < 70; ++i) absl::StrAppend(&many, ", \"f", i, "\": 1");
  many += "}";
  EXPECT_THAT(ErrorOf(ParseOpenAiEmbeddings(many, {})).message, HasSubstr("more than 64 fields"));
}

TEST(OpenAiParse, LargeBodiesParseLikeSmallOnes) {
  // Over 64 KiB a body gets a parser of its own; a small one after it reuses
  // the thread's parser again.
  const std::string text(200'000, 'x');
  auto big = ParseOpenAiEmbeddings(absl::StrCat(R"({"input": [")", text, R"(", "y"]})"), {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(big));
  const auto& inputs = std::get<OpenAiEmbeddingsRequest>(big).request.inputs;
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].text, text);
  EXPECT_EQ(inputs[1].text, "y");
  auto small = ParseOpenAiEmbeddings(R"({"input": "z", "dimensions": 8})", {});
  ASSERT_TRUE(std::holds_alternative<OpenAiEmbeddingsRequest>(small));
  EXPECT_EQ(std::get<OpenAiEmbeddingsRequest>(small).request.inputs[0].text, "z");
  EXPECT_EQ(std::get<OpenAiEmbeddingsRequest>(small).request.dimensions, 8);
}

TEST(Responses, LongestFloatTextsFitTheReservedBuffer) {
  // 17 bytes a value (16 integer digits and a sign): the writer reserves
  // per-value room up front, which an earlier 16-byte bound overran.
  const std::vector<float> big(384, -1.234568e15f);
  const std::string body = TeiEmbedBody(EmbedResult{.embeddings = {big, big}});
  EXPECT_EQ(body.size(), 2 + 2 * (2 + 384 * 17 + 383) + 1);
  const json back = json::parse(body);
  ASSERT_EQ(back.size(), 2u);
  ASSERT_EQ(back[1].size(), 384u);
  EXPECT_EQ(back[1][383].get<float>(), -1.234568e15f);
}

TEST(Responses, TeiShapeAndErrorBodies) {
  EXPECT_EQ(json::parse(TeiEmbedBody(EmbedResult{.embeddings = {{0.5f}, {0.25f}}})), json({{0.5}, {0.25}}));
  const json tei = json::parse(ErrorBody(ApiFlavor::kTei, ApiError{429, "queue full"}));
  EXPECT_EQ(tei["error"], "queue full");
  EXPECT_EQ(tei["error_type"], "Overloaded");
  const json oai = json::parse(ErrorBody(ApiFlavor::kOpenAi, ApiError{401, "wrong API key"}));
  EXPECT_EQ(oai["error"]["message"], "wrong API key");
  EXPECT_EQ(oai["error"]["type"], "authentication_error");
  EXPECT_TRUE(oai["error"]["param"].is_null());
}

TEST(Responses, StatusByErrorKind) {
  EXPECT_EQ(FromStatus(QueueFullError("q")).status, 429);
  EXPECT_EQ(FromStatus(OversizeError("o")).status, 413);
  EXPECT_EQ(FromStatus(InvalidArgumentError("i")).status, 422);
  EXPECT_EQ(FromStatus(ShuttingDownError("s")).status, 503);
  EXPECT_EQ(FromStatus(BackendError("b")).status, 500);
  EXPECT_EQ(FromStatus(OutOfMemoryError("m")).status, 500);
  EXPECT_EQ(FromStatus(absl::InternalError("x")).status, 500);
  EXPECT_EQ(FromStatus(OversizeError("request of 9 tokens")).message, "request of 9 tokens");
}

}  // namespace
}  // namespace tokenbatch::server
