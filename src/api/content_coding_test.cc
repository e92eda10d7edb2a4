// DecodeContentEncoding against bodies compressed here with zlib: each coding,
// lists of codings, the payload limit while inflating, and broken data.
#include "api/content_coding.h"

#include <zlib.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/zlib_compress.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;

using tokenbatch::testing::Gzip;
std::string Compress(const std::string& data, int window_bits) {
  return tokenbatch::testing::ZlibCompress(data, window_bits);
}

const std::string kBody = R"({"inputs": ["长文本", "a longer sentence, repeated; a longer sentence, repeated"]})";

std::string Decoded(std::string_view coding, std::string body, std::size_t limit = 1 << 20) {
  auto r = DecodeContentEncoding(coding, std::move(body), limit);
  if (auto* e = std::get_if<ApiError>(&r)) return "error " + std::to_string(e->status) + ": " + e->message;
  return std::get<std::string>(r);
}
ApiError Error(std::string_view coding, std::string body, std::size_t limit = 1 << 20) {
  auto r = DecodeContentEncoding(coding, std::move(body), limit);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << "decoded instead of failing";
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(ContentCoding, GzipDeflateAndIdentityDecodeToTheBody) {
  EXPECT_EQ(Decoded("", kBody), kBody);
  EXPECT_EQ(Decoded("identity", kBody), kBody);
  EXPECT_EQ(Decoded("gzip", Gzip(kBody)), kBody);
  EXPECT_EQ(Decoded("GZip", Gzip(kBody)), kBody);  // coding names are case-insensitive (RFC 9110 section 8.4.1)
  EXPECT_EQ(Decoded("x-gzip", Gzip(kBody)), kBody);
  EXPECT_EQ(Decoded("deflate", Compress(kBody, MAX_WBITS)), kBody);   // zlib format, as RFC 9110 defines it
  EXPECT_EQ(Decoded("deflate", Compress(kBody, -MAX_WBITS)), kBody);  // raw deflate, as some clients send
}

TEST(ContentCoding, AListIsUndoneFromTheLastCodingApplied) {
  // "deflate, gzip": deflated first, then gzipped.
  EXPECT_EQ(Decoded("deflate, gzip", Gzip(Compress(kBody, MAX_WBITS))), kBody);
  EXPECT_EQ(Decoded(" gzip ,, identity", Gzip(kBody)), kBody);
  EXPECT_EQ(Error("gzip, gzip, gzip, gzip, gzip", kBody).status, 415);  // more than four
}

TEST(ContentCoding, ConcatenatedGzipMembersAreOneBody) {
  EXPECT_EQ(Decoded("gzip", Gzip("{\"inputs\": ") + Gzip("\"abc\"}")), "{\"inputs\": \"abc\"}");
}

TEST(ContentCoding, UnknownCodingIs415NamingIt) {
  const ApiError e = Error("br", kBody);
  EXPECT_EQ(e.status, 415);
  EXPECT_THAT(e.message, HasSubstr("Content-Encoding \"br\" is not supported"));
  EXPECT_THAT(e.message, HasSubstr("gzip, deflate"));
  EXPECT_EQ(Error("gzip, zstd", Gzip(kBody)).status, 415);
}

TEST(ContentCoding, TheLimitAppliesToTheDecodedSizeWhileInflating) {
  // 64 MiB of zeros compress to about 64 KiB: refused once the output passes
  // the limit, long before 64 MiB are allocated.
  const std::string bomb = Gzip(std::string(64 << 20, '\0'));
  ASSERT_LT(bomb.size(), 100'000u);
  const ApiError e = Error("gzip", bomb, 2'000'000);
  EXPECT_EQ(e.status, 413);
  EXPECT_THAT(e.message, HasSubstr("larger than the payload limit of 2000000 bytes once decoded"));
  // Exactly at the limit is accepted, one byte more is not.
  const std::string exact(1000, 'a');
  EXPECT_EQ(Decoded("gzip", Gzip(exact), 1000), exact);
  EXPECT_EQ(Error("gzip", Gzip(exact + "a"), 1000).status, 413);
}

TEST(ContentCoding, BrokenDataIs400) {
  const std::string gz = Gzip(kBody);
  EXPECT_THAT(Error("gzip", kBody).message, HasSubstr("not valid gzip data"));  // not compressed at all
  EXPECT_EQ(Error("gzip", kBody).status, 400);
  EXPECT_THAT(Error("gzip", gz.substr(0, gz.size() / 2)).message, HasSubstr("truncated"));
  EXPECT_THAT(Error("gzip", "").message, HasSubstr("empty"));
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x55;  // inside the CRC-32 trailer
  EXPECT_EQ(Error("gzip", bad_crc).status, 400);
  EXPECT_THAT(Error("deflate", Compress(kBody, MAX_WBITS) + "xyz").message,
              HasSubstr("3 bytes after the end of the compressed data"));
  EXPECT_EQ(Error("deflate", "\xff\xff\xff\xff").status, 400);
}

}  // namespace
}  // namespace tokenbatch::server
