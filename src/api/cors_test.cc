// CorsPolicy: which --cors-allow-origin values are accepted, and the headers a
// reply and a preflight get for allowed, other and absent origins.
#include "api/cors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using Headers = CorsPolicy::Headers;

CorsPolicy Policy(const std::vector<std::string>& origins) {
  absl::StatusOr<CorsPolicy> p = CorsPolicy::Create(origins);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : CorsPolicy();
}

Headers Reply(const CorsPolicy& p, std::string_view origin) {
  Headers h;
  p.AppendReplyHeaders(origin, h);
  return h;
}

TEST(Cors, OriginsMustBeSchemeHostAndPort) {
  for (const char* bad : {"example.com", "http://", "http://example.com/app", "null", "http://a b", "://x",
                          "http://example.com?q", "1http://x"}) {
    absl::StatusOr<CorsPolicy> p = CorsPolicy::Create({bad});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_THAT(p.status().message(), HasSubstr(std::string("\"") + bad + "\" is not an origin"));
  }
  EXPECT_FALSE(CorsPolicy::Create({"*", "http://a.com"}).ok());
  EXPECT_TRUE(CorsPolicy::Create({"http://localhost:3000", "https://app.example.com"}).ok());
}

TEST(Cors, NothingIsAllowedByDefault) {
  const CorsPolicy none;
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(Reply(none, "http://example.com").empty());
  EXPECT_FALSE(Policy({}).enabled());
}

TEST(Cors, AnAllowedOriginIsEchoedAndTheAnswerVariesByOrigin) {
  const CorsPolicy p = Policy({"http://example.com", "HTTPS://App.Example.com/"});
  EXPECT_EQ(Reply(p, "http://example.com"),
            (Headers{{"Vary", "Origin"},
                     {"Access-Control-Allow-Origin", "http://example.com"},
                     {"Access-Control-Expose-Headers", std::string(kCorsExposedResponseHeaders)}}));
  // Case-insensitive, and the trailing slash of the flag's value dropped.
  const Headers second = Reply(p, "https://app.example.com");
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[1].second, "https://app.example.com");
  // Another origin, or none, gets only Vary: the browser refuses to show the answer.
  EXPECT_EQ(Reply(p, "http://evil.example"), (Headers{{"Vary", "Origin"}}));
  EXPECT_EQ(Reply(p, "http://example.com:8080"), (Headers{{"Vary", "Origin"}}));
  EXPECT_EQ(Reply(p, ""), (Headers{{"Vary", "Origin"}}));
}

TEST(Cors, StarAllowsEveryOriginOnEveryReplyWithoutVary) {
  const CorsPolicy p = Policy({"*"});
  const Headers expected = {{"Access-Control-Allow-Origin", "*"},
                            {"Access-Control-Expose-Headers", std::string(kCorsExposedResponseHeaders)}};
  EXPECT_EQ(Reply(p, "http://anything.example"), expected);
  // The same without an Origin: a cached copy then serves browsers too.
  EXPECT_EQ(Reply(p, ""), expected);
}

TEST(Cors, PreflightsGetMethodsHeadersAndMaxAgeOnlyForAllowedOrigins) {
  const CorsPolicy p = Policy({"http://example.com"});
  Headers h;
  p.AppendPreflightHeaders("http://example.com", "POST", "", h);
  EXPECT_EQ(h, (Headers{{"Access-Control-Allow-Methods", "POST"},
                        {"Access-Control-Allow-Headers", std::string(kCorsAllowedRequestHeaders)},
                        {"Access-Control-Max-Age", "600"}}));
  // The headers the page asks for are allowed (the OpenAI SDK sends its own).
  Headers asked;
  p.AppendPreflightHeaders("http://example.com", "POST", "content-type,x-stainless-os, authorization", asked);
  EXPECT_EQ(asked, (Headers{{"Access-Control-Allow-Methods", "POST"},
                            {"Access-Control-Allow-Headers", "content-type,x-stainless-os, authorization"},
                            {"Vary", "Access-Control-Request-Headers"},
                            {"Access-Control-Max-Age", "600"}}));
  // A list that is not header names falls back to the fixed list.
  Headers odd;
  p.AppendPreflightHeaders("http://example.com", "POST", "a\r\nSet-Cookie: x", odd);
  ASSERT_EQ(odd.size(), 3u);
  EXPECT_EQ(odd[1].second, std::string(kCorsAllowedRequestHeaders));
  Headers other;
  p.AppendPreflightHeaders("http://evil.example", "POST", "content-type", other);
  EXPECT_TRUE(other.empty());
}

}  // namespace
}  // namespace tokenbatch::server
