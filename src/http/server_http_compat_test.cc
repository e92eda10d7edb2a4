// HTTP behaviour clients of other servers rely on, over a real socket: CORS
// preflights and headers, HEAD, compressed request bodies, TEI's
// x-compute-characters and /tokenize shape, WWW-Authenticate on 401, and numbers
// beyond 64 bits. Each test starts from the smallest request that showed a fault
// and checks the exact answer.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"
#include "testing/zlib_compress.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::Call;
using testing::Connection;
using testing::Response;
using testing::StartTestServer;
using tokenbatch::testing::Gzip;

std::string Error(const Response& r) {
  const json j = json::parse(r.body);
  return j["error"].is_string() ? j["error"].get<std::string>() : j["error"]["message"].get<std::string>();
}

TEST(HttpCompat, CorsPreflightIs204WithTheAllowHeadersForAnAllowedOrigin) {
  auto s = StartTestServer({.cors_allow_origins = {"http://example.com"}});
  ASSERT_NE(s.port, 0);
  const std::vector<std::string> preflight = {"Origin: http://example.com", "Access-Control-Request-Method: POST",
                                              "Access-Control-Request-Headers: content-type"};
  auto r = Call(s.port, "OPTIONS", "/v1/embeddings", {}, preflight);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(r->header("content-length"), "");  // a 204 has none (RFC 9110 section 8.6)
  EXPECT_EQ(r->header("allow"), "POST, OPTIONS");
  EXPECT_EQ(r->header("access-control-allow-origin"), "http://example.com");
  EXPECT_EQ(r->header("access-control-allow-methods"), "POST");
  EXPECT_EQ(r->header("access-control-allow-headers"), "content-type");  // what the page asked for
  EXPECT_EQ(r->header("access-control-max-age"), "600");
  // Every route answers preflights; a GET route lists GET and HEAD.
  auto get = Call(s.port, "OPTIONS", "/health", {},
                  {"Origin: http://example.com", "Access-Control-Request-Method: GET"});
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 204);
  EXPECT_EQ(get->header("access-control-allow-methods"), "GET, HEAD");
  EXPECT_THAT(get->header("access-control-allow-headers"), HasSubstr("Authorization"));  // asked for none
  // Another origin's preflight is answered without the Allow headers: its browser refuses.
  auto evil = Call(s.port, "OPTIONS", "/embed", {},
                   {"Origin: http://evil.example", "Access-Control-Request-Method: POST"});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 204);
  EXPECT_EQ(evil->header("access-control-allow-origin"), "");
  EXPECT_EQ(evil->header("access-control-allow-methods"), "");
  // An unknown path is still 404.
  EXPECT_EQ(Call(s.port, "OPTIONS", "/nope", {}, preflight)->status, 404);
}

TEST(HttpCompat, CrossOriginRepliesCarryAllowOriginOnSuccessAndErrors) {
  auto s = StartTestServer({.payload_limit = 1000, .cors_allow_origins = {"http://example.com"}});
  ASSERT_NE(s.port, 0);
  const std::vector<std::string> origin = {"Origin: http://example.com"};
  auto ok = Call(s.port, "POST", "/embed", R"({"inputs":"hello"})", origin);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->header("access-control-allow-origin"), "http://example.com");
  EXPECT_THAT(ok->header("access-control-expose-headers"), HasSubstr("x-compute-tokens"));
  auto bad = Call(s.port, "POST", "/v1/embeddings", R"({"input":""})", origin);  // 422 from the router
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  EXPECT_EQ(bad->header("access-control-allow-origin"), "http://example.com");
  // Refused by the socket layer before routing (body over the payload limit).
  auto big = Call(s.port, "POST", "/embed", json{{"inputs", std::string(2000, 'a')}}.dump(), origin);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(big->header("access-control-allow-origin"), "http://example.com");
  // Without the flag no origin is allowed.
  auto closed = StartTestServer();
  ASSERT_NE(closed.port, 0);
  auto none = Call(closed.port, "POST", "/embed", R"({"inputs":"hello"})", origin);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200);
  EXPECT_EQ(none->header("access-control-allow-origin"), "");
  auto preflight = Call(closed.port, "OPTIONS", "/v1/embeddings", {},
                        {"Origin: http://example.com", "Access-Control-Request-Method: POST"});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->header("access-control-allow-origin"), "");
}

TEST(HttpCompat, AnInvalidCorsOriginStopsTheServerFromStarting) {
  auto s = StartTestServer();
  ASSERT_NE(s.port, 0);
  Router router({.port = 0, .cors_allow_origins = {"example.com"}}, s.service.get());
  auto http = HttpServer::Start(&router);
  ASSERT_FALSE(http.ok());
  EXPECT_THAT(http.status().message(), HasSubstr("\"example.com\" is not an origin"));
}

TEST(HttpCompat, HeadAnswersEveryGetRouteWithoutABody) {
  auto s = StartTestServer();
  ASSERT_NE(s.port, 0);
  Connection c(s.port);
  for (const char* path : {"/health", "/info", "/v1/models", "/metrics"}) {
    auto head = c.Call("HEAD", path);
    ASSERT_TRUE(head) << path;
    EXPECT_EQ(head->status, 200) << path;
    EXPECT_EQ(head->body, "") << path;
    // The same connection goes on: had a body been sent, this would read it as the reply.
    auto get = c.Call("GET", path);
    ASSERT_TRUE(get) << path;
    EXPECT_EQ(get->status, 200) << path;
    if (std::string(path) != "/metrics") {  // /metrics changes between the two calls
      EXPECT_EQ(head->header("content-length"), std::to_string(get->body.size())) << path;
    }
  }
  // HEAD and GET pipelined in one write: the HEAD reply must end at its head.
  ASSERT_TRUE(c.Send(testing::BuildRequest("HEAD", "/info", {}) + testing::BuildRequest("GET", "/health", {})));
  auto piped_head = c.Read(std::chrono::seconds(10), /*has_body=*/false);
  auto piped_get = c.Read();
  ASSERT_TRUE(piped_head && piped_get);
  EXPECT_EQ(piped_head->status, 200);
  EXPECT_EQ(piped_get->status, 200);
  EXPECT_EQ(piped_get->body, R"({"status":"ok"})");
  auto post_route = c.Call("HEAD", "/embed");
  ASSERT_TRUE(post_route);
  EXPECT_EQ(post_route->status, 405);
  EXPECT_EQ(post_route->header("allow"), "POST, OPTIONS");
  EXPECT_EQ(c.Call("GET", "/health")->status, 200);
  auto put = c.Call("PUT", "/health");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->header("allow"), "GET, HEAD, OPTIONS");
}

TEST(HttpCompat, GzipAndDeflateBodiesAreDecodedOnEveryPostRoute) {
  auto s = StartTestServer({.payload_limit = 100'000});
  ASSERT_NE(s.port, 0);
  const std::string body = R"({"inputs":"hello world"})";
  auto plain = Call(s.port, "POST", "/embed", body);
  auto gz = Call(s.port, "POST", "/embed", Gzip(body), {"Content-Encoding: gzip"});
  ASSERT_TRUE(plain && gz);
  ASSERT_EQ(gz->status, 200) << gz->body;
  EXPECT_EQ(gz->body, plain->body);
  EXPECT_EQ(gz->header("x-compute-tokens"), plain->header("x-compute-tokens"));
  for (const auto& [path, json_body] : std::vector<std::pair<std::string, std::string>>{
           {"/v1/embeddings", R"({"input":"hello"})"},
           {"/tokenize", R"({"inputs":"hello"})"},
           {"/decode", R"({"ids":[14990]})"},
           {"/detokenize", R"({"tokens":[14990]})"}}) {
    auto r = Call(s.port, "POST", path, Gzip(json_body), {"Content-Encoding: gzip"});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
  }
  // Two Content-Encoding lines are one list (RFC 9110 section 5.3): gzipped twice.
  auto twice = Call(s.port, "POST", "/embed", Gzip(Gzip(body)), {"Content-Encoding: gzip", "Content-Encoding: gzip"});
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 200) << twice->body;
  EXPECT_EQ(twice->body, plain->body);
  // A small body that inflates past the payload limit: 413, not an allocation of it all.
  auto bomb = Call(s.port, "POST", "/embed", Gzip(json{{"inputs", std::string(1 << 20, 'a')}}.dump()),
                   {"Content-Encoding: gzip"});
  ASSERT_TRUE(bomb);
  EXPECT_EQ(bomb->status, 413);
  EXPECT_THAT(Error(*bomb), HasSubstr("payload limit of 100000 bytes once decoded"));
  // An unknown coding: 415 naming it, with the codings accepted (RFC 9110 section 15.5.16).
  auto br = Call(s.port, "POST", "/embed", body, {"Content-Encoding: br"});
  ASSERT_TRUE(br);
  EXPECT_EQ(br->status, 415);
  EXPECT_EQ(br->header("accept-encoding"), "gzip, deflate, identity");
  EXPECT_THAT(Error(*br), HasSubstr("\"br\""));
  auto corrupt = Call(s.port, "POST", "/v1/embeddings", body, {"Content-Encoding: gzip"});
  ASSERT_TRUE(corrupt);
  EXPECT_EQ(corrupt->status, 400);
  EXPECT_THAT(Error(*corrupt), HasSubstr("not valid gzip data"));
}

TEST(HttpCompat, ComputeCharactersCountsCharactersNotBytes) {
  auto s = StartTestServer({}, {.prompts = {{"query", "query: "}}});
  ASSERT_NE(s.port, 0);
  auto tei = Call(s.port, "POST", "/embed", R"({"inputs":"长文本"})");
  ASSERT_TRUE(tei);
  ASSERT_EQ(tei->status, 200) << tei->body;
  EXPECT_EQ(tei->header("x-compute-characters"), "3");
  auto openai = Call(s.port, "POST", "/v1/embeddings", R"({"input":["长文本", "é😀"]})");
  ASSERT_TRUE(openai);
  EXPECT_EQ(openai->header("x-compute-characters"), "5");
  // A token-id input counts its ids, as in TEI.
  auto ids = Call(s.port, "POST", "/v1/embeddings", R"({"input":[[1, 2, 3, 4]]})");
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->status, 200) << ids->body;
  EXPECT_EQ(ids->header("x-compute-characters"), "4");
  // The client's text: a prompt the server prepends is not counted.
  auto prompted = Call(s.port, "POST", "/embed", R"({"inputs":"长文本","prompt_name":"query"})");
  ASSERT_TRUE(prompted);
  ASSERT_EQ(prompted->status, 200) << prompted->body;
  EXPECT_EQ(prompted->header("x-compute-characters"), "3");
}

TEST(HttpCompat, TokenizeNamesSpecialTokensWithNullOffsets) {
  auto s = testing::StartTestServerWith({}, {}, backend::MakeNoopEncoder({.hidden_size = 8}), "bert");
  ASSERT_NE(s.port, 0);
  auto r = Call(s.port, "POST", "/tokenize", R"({"inputs":"Héllo"})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body), json::parse(R"([[
      {"id":101,"special":true,"start":null,"stop":null,"text":"[CLS]"},
      {"id":7592,"special":false,"start":0,"stop":6,"text":"Héllo"},
      {"id":102,"special":true,"start":null,"stop":null,"text":"[SEP]"}]])"));
}

TEST(HttpCompat, Unauthorized401SaysHowToAuthenticate) {
  auto s = StartTestServer({.api_key = "KEY"});
  ASSERT_NE(s.port, 0);
  for (const char* path : {"/v1/embeddings", "/embed", "/info", "/metrics"}) {
    const bool get = std::string(path) == "/info" || std::string(path) == "/metrics";
    auto missing = Call(s.port, get ? "GET" : "POST", path, get ? "" : R"({"input":"a","inputs":"a"})");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 401) << path;
    EXPECT_EQ(missing->header("www-authenticate"), "Bearer") << path;
  }
  auto wrong = Call(s.port, "POST", "/embed", R"({"inputs":"a"})", {"Authorization: Bearer nope"});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(wrong->header("www-authenticate"), R"(Bearer error="invalid_token")");
  // A browser's preflight carries no credentials and is answered in full; the
  // request itself needs the key.
  auto cors = StartTestServer({.api_key = "KEY", .cors_allow_origins = {"http://example.com"}});
  ASSERT_NE(cors.port, 0);
  auto preflight = Call(cors.port, "OPTIONS", "/embed", {},
                        {"Origin: http://example.com", "Access-Control-Request-Method: POST",
                         "Access-Control-Request-Headers: authorization, content-type"});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->header("access-control-allow-origin"), "http://example.com");
  EXPECT_EQ(preflight->header("access-control-allow-headers"), "authorization, content-type");
  auto refused = Call(cors.port, "POST", "/embed", R"({"inputs":"a"})", {"Origin: http://example.com"});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);  // and readable by the page
  EXPECT_EQ(refused->header("access-control-allow-origin"), "http://example.com");
  EXPECT_EQ(Call(s.port, "POST", "/embed", R"({"inputs":"a"})", {"Authorization: Bearer KEY"})->status, 200);
}

TEST(HttpCompat, NumbersBeyond64BitsAre422NamingTheFieldAndItsRange) {
  auto s = StartTestServer();
  ASSERT_NE(s.port, 0);
  auto dimensions = Call(s.port, "POST", "/v1/embeddings", R"({"input":"a","dimensions":100000000000000000000})");
  ASSERT_TRUE(dimensions);
  EXPECT_EQ(dimensions->status, 422);
  EXPECT_EQ(Error(*dimensions), "`dimensions` must be in [1, 1048576], got 100000000000000000000");
  auto priority = Call(s.port, "POST", "/embed", R"({"inputs":"a","priority":1e400})");
  ASSERT_TRUE(priority);
  EXPECT_EQ(priority->status, 422);
  EXPECT_EQ(Error(*priority), "`priority` must be in [-1000000, 1000000], got 1e400");
  auto negative = Call(s.port, "POST", "/embed", R"({"inputs":"a","priority":-1E+400})");
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->status, 422);
  EXPECT_EQ(Error(*negative), "`priority` must be in [-1000000, 1000000], got -1E+400");
  auto id = Call(s.port, "POST", "/decode", R"({"ids":[1, 18446744073709551616]})");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->status, 422);
  EXPECT_EQ(Error(*id), "`ids` holds token id 18446744073709551616, out of range [0, 2^32), at position 1");
  auto input_id = Call(s.port, "POST", "/v1/embeddings", R"({"input":[[5, -99999999999999999999]]})");
  ASSERT_TRUE(input_id);
  EXPECT_EQ(input_id->status, 422);
  EXPECT_EQ(Error(*input_id), "`input`[0] holds token id -99999999999999999999, out of range [0, 2^32), at position 1");
  auto single = Call(s.port, "POST", "/v1/embeddings", R"({"input":[5, 18446744073709551616]})");
  ASSERT_TRUE(single);
  EXPECT_EQ(single->status, 422);
  EXPECT_EQ(Error(*single), "`input` holds token id 18446744073709551616, out of range [0, 2^32), at position 1");
  // A huge number in a field the API ignores is still valid JSON.
  auto ignored = Call(s.port, "POST", "/embed", R"({"inputs":"a","extra":1e999})");
  ASSERT_TRUE(ignored);
  EXPECT_EQ(ignored->status, 200) << ignored->body;
  // Malformed numbers stay malformed.
  auto malformed = Call(s.port, "POST", "/embed", R"({"inputs":"a","priority":01})");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
}

}  // namespace
}  // namespace tokenbatch::server
