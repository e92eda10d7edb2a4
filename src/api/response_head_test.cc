#include "api/response_head.h"

#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

TEST(ResponseHead, StatusLineHeadersLengthAndBlankLine) {
  const std::vector<std::pair<std::string_view, std::string>> extra = {{"x-compute-tokens", "9"},
                                                                  {"x-request-id", "r42"}};
  const std::string head = SerializeResponseHead({.status = 200,
                                                  .reason = "OK",
                                                  .content_type = "application/json",
                                                  .headers = &extra,
                                                  .content_length = 4560,
                                                  .keep_alive = true});
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\n"
            "Server: tokenbatch\r\n"
            "Content-Type: application/json\r\n"
            "x-compute-tokens: 9\r\n"
            "x-request-id: r42\r\n"
            "Content-Length: 4560\r\n"
            "\r\n");
}

TEST(ResponseHead, CloseAndNoExtraHeaders) {
  const std::string head = SerializeResponseHead(
      {.status = 413, .reason = "Payload Too Large", .content_type = "application/json", .content_length = 0,
       .keep_alive = false});
  EXPECT_EQ(head,
            "HTTP/1.1 413 Payload Too Large\r\n"
            "Server: tokenbatch\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 0\r\n"
            "Connection: close\r\n"
            "\r\n");
}

TEST(ResponseHead, NoContentHasNeitherLengthNorType) {
  const std::vector<std::pair<std::string_view, std::string>> extra = {{"Allow", "POST, OPTIONS"}};
  EXPECT_EQ(SerializeResponseHead({.status = 204, .reason = "No Content", .headers = &extra}),
            "HTTP/1.1 204 No Content\r\n"
            "Server: tokenbatch\r\n"
            "Allow: POST, OPTIONS\r\n"
            "\r\n");
}

// A client-chosen value (x-request-id) must not be able to inject a header or
// end the head early.
TEST(ResponseHead, UnsafeHeadersAreLeftOut) {
  const std::vector<std::pair<std::string_view, std::string>> extra = {
      {"x-request-id", "abc\r\nSet-Cookie: x=1"}, {"bad name", "v"}, {"x-ok", "tab\tand spaces"},
      {"x-nul", std::string("a\0b", 3)},          {"", "v"},        {"x-del", "\x7f"}};
  const std::string head = SerializeResponseHead(
      {.status = 200, .reason = "OK", .content_type = "text/plain", .headers = &extra, .content_length = 1});
  EXPECT_EQ(head.find("Set-Cookie"), std::string::npos);
  EXPECT_EQ(head.find("bad name"), std::string::npos);
  EXPECT_EQ(head.find("x-nul"), std::string::npos);
  EXPECT_EQ(head.find("x-del"), std::string::npos);
  EXPECT_NE(head.find("x-ok: tab\tand spaces\r\n"), std::string::npos);
  EXPECT_TRUE(IsSafeHeader("X-Request-Id", "r1"));
  EXPECT_FALSE(IsSafeHeader("x:y", "v"));
  EXPECT_FALSE(IsSafeHeader("x", "a\nb"));
}

}  // namespace
}  // namespace tokenbatch::server
