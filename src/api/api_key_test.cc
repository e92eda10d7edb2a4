// The API key's check and key file.
#include "api/api_key.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenbatch::server {
namespace {

TEST(BearerMatchesTest, AcceptsTheExactKeyWithTheSchemeInAnyCase) {
  EXPECT_TRUE(BearerMatches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerMatches("bearer s3cret", "s3cret"));
  EXPECT_TRUE(BearerMatches("BEARER s3cret", "s3cret"));
}

TEST(BearerMatchesTest, RefusesEveryOtherCredential) {
  EXPECT_FALSE(BearerMatches("", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer ", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearer s3cre", "s3cret"));    // a prefix
  EXPECT_FALSE(BearerMatches("Bearer s3crett", "s3cret"));  // longer
  EXPECT_FALSE(BearerMatches("Bearer S3cret", "s3cret"));   // the key is case-sensitive
  EXPECT_FALSE(BearerMatches("Bearer s3cret ", "s3cret"));
  EXPECT_FALSE(BearerMatches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("Bearers3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches("Token s3cret", "s3cret"));
  EXPECT_FALSE(BearerMatches(std::string_view("Bearer s3cret\0", 14), "s3cret"));
}

class ApiKeyFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& content) {
    std::ofstream(path_, std::ios::binary) << content;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("tokenbatch_api_key_" + std::to_string(::getpid()) + ".txt");
};

TEST_F(ApiKeyFileTest, ReadsTheKeyWithoutItsLineEnd) {
  EXPECT_EQ(*ReadApiKeyFile(Write("k-123\n")), "k-123");
  EXPECT_EQ(*ReadApiKeyFile(Write("k-123\r\n")), "k-123");
  EXPECT_EQ(*ReadApiKeyFile(Write("k-123")), "k-123");
}

TEST_F(ApiKeyFileTest, RefusesAMissingEmptyOrUnsendableKeyNamingTheFile) {
  const auto missing = ReadApiKeyFile("/nonexistent/tokenbatch.key");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("/nonexistent/tokenbatch.key"));
  for (const std::string content : {"", "\n", "two words\n", "k\n\n", "tab\tkey", "caf\xc3\xa9"}) {
    const auto key = ReadApiKeyFile(Write(content));
    ASSERT_FALSE(key.ok()) << content;
    EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(key.status().message()), ::testing::HasSubstr(path_.string()));
  }
  const auto directory = ReadApiKeyFile(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(std::string(directory.status().message()), ::testing::HasSubstr("not a regular file"));
  const auto large = ReadApiKeyFile(Write(std::string(5000, 'k')));
  ASSERT_FALSE(large.ok());
  EXPECT_THAT(std::string(large.status().message()), ::testing::HasSubstr("5000 bytes"));
}

TEST(ApiKeyTest, TheDigestKeptFromStartUpMatchesAsBearerMatchesDoes) {
  const ApiKey key("s3cret");
  EXPECT_FALSE(key.empty());
  EXPECT_TRUE(key.Matches("Bearer s3cret"));
  EXPECT_TRUE(key.Matches("bearer s3cret"));
  EXPECT_FALSE(key.Matches("Bearer s3cre"));
  EXPECT_FALSE(key.Matches("Bearer s3crett"));
  EXPECT_FALSE(key.Matches("Basic s3cret"));
  // No key configured: nothing matches, not even an empty credential.
  const ApiKey none("");
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.Matches("Bearer "));
}

}  // namespace
}  // namespace tokenbatch::server
