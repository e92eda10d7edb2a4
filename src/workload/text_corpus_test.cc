#include "tokenbatch/workload/text_corpus.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace tokenbatch::workload {
namespace {

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(TextCorpusTest, FortunesAreSplitCleanedAndFilteredByLength) {
  const std::string path =
      WriteTemp("f1", "short one\n%\n\x1b[33m  彩色\x1b[m 文本 \n%\n" + std::string(50, 'x') + "\n%\n");
  auto entries = LoadFortunes({path}, 20);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0], "short one");
  EXPECT_EQ((*entries)[1], "彩色 文本");
  EXPECT_EQ(CodePoints((*entries)[1]), 5u);
}

TEST(TextCorpusTest, PassagesAreCutAtWhitespaceNearTheLength) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "word" + std::to_string(i) + "\n ";
  auto passages = LoadPassages({WriteTemp("p1", text)}, 50);
  ASSERT_TRUE(passages.ok());
  ASSERT_GT(passages->size(), 5u);
  for (const auto& p : *passages) {
    EXPECT_GE(CodePoints(p), 25u);
    EXPECT_EQ(p.find("  "), std::string::npos);
    EXPECT_NE(p.back(), ' ');
  }
  EXPECT_EQ((*passages)[0].substr(0, 12), "word0 word1 ");
}

TEST(TextCorpusTest, MixHasTheRequestedShareAndIsReproducible) {
  const std::vector<std::string> shorts = {"a", "b"}, longs = {"LONG"};
  auto mix = MixTexts(shorts, longs, 100, 0.5, 7);
  ASSERT_EQ(mix.size(), 100u);
  EXPECT_EQ(std::count(mix.begin(), mix.end(), "LONG"), 50);
  EXPECT_EQ(mix, MixTexts(shorts, longs, 100, 0.5, 7));
  EXPECT_NE(mix, MixTexts(shorts, longs, 100, 0.5, 8));
}

TEST(TextCorpusTest, MissingFileIsNamed) {
  auto r = LoadFortunes({"/nonexistent/fortune"}, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/fortune"), std::string_view::npos);
}

}  // namespace
}  // namespace tokenbatch::workload
