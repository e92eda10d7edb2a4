#include "tokenbatch/workload/man_page.h"

#include <zlib.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tokenbatch/workload/text_corpus.h"

namespace tokenbatch::workload {
namespace {

TEST(ManPageTest, KeepsBodyTextAndTextMacroArgumentsOnly) {
  const char* troff =
      ".\\\" a comment\n"
      ".TH TCPDUMP 8 \"1998\"\n"
      ".de }1\n"
      ".ds ]X \\&\\\\*(]B\\\\\n"
      "..\n"
      ".SH \"描述 (DESCRIPTION)\"\n"
      ".LP\n"
      "\\fITcpdump\\fP 打印出 报文 的 报头\\(em 匹配 \\fB\\-i\\fR 的\\(lq界面\\(rq.\n"
      ".B \"对于 Linux:\" \\\" trailing comment\n"
      ".if n Bash is Copyright\n"
      "大小 \\s-1ABC\\s0 与 \\h'3n'间距\\*(Ab\\n(XY 和 \\[co] 2002\\e\n";
  EXPECT_EQ(TroffToText(troff),
            "描述 (DESCRIPTION)\n"
            "Tcpdump 打印出 报文 的 报头\u2014 匹配 -i 的\u201c界面\u201d.\n"
            "对于 Linux: \n"
            "大小 ABC 与 间距 和 \u00a9 2002\\\n");
}

TEST(ManPageTest, MalformedEscapesAreDroppedNotReadPastTheEnd) {
  EXPECT_EQ(TroffToText("a\\"), "a\n");
  EXPECT_EQ(TroffToText("a\\(x"), "a\n");
  EXPECT_EQ(TroffToText("a\\[unterminated"), "a\n");
  EXPECT_EQ(TroffToText("a\\h'3n"), "a\n");
  EXPECT_EQ(TroffToText(".de X\nnever closed\n"), "");
  EXPECT_EQ(TroffToText(""), "");
}

TEST(ManPageTest, ReadsGzipAndPlainFiles) {
  const std::string dir = ::testing::TempDir();
  const std::string gz = dir + "/page.1.gz", plain = dir + "/page.1";
  const std::string troff = ".SH 名称\n\\fBls\\fP \\- 列目录内容\n";
  gzFile out = gzopen(gz.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, troff.data(), static_cast<unsigned>(troff.size())), static_cast<int>(troff.size()));
  gzclose(out);
  {
    gzFile p = gzopen(plain.c_str(), "wT");  // "T": written without compression
    ASSERT_NE(p, nullptr);
    gzwrite(p, troff.data(), static_cast<unsigned>(troff.size()));
    gzclose(p);
  }
  for (const std::string& path : {gz, plain}) {
    auto text = ReadManPageText(path);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, "名称\nls - 列目录内容\n") << path;
  }
  auto missing = ReadManPageText(dir + "/no-such-page.1.gz");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove(gz);
  std::filesystem::remove(plain);
}

TEST(ManPageTest, DefaultChinesePassagesAreMostlyCjk) {
  // The installed manpages-zh pages (scripts/setup.sh): passages of ~1,500 code
  // points whose characters are mostly CJK, as the seed's Chinese slices.
  std::vector<std::string> zh;
  for (const std::string& f : DefaultLongTextFiles()) {
    if (f.find("/zh_CN/") != std::string::npos) zh.push_back(f);
  }
  ASSERT_EQ(zh.size(), 4u);
  auto passages = LoadPassages(zh, 1500);
  ASSERT_TRUE(passages.ok()) << passages.status();
  EXPECT_GT(passages->size(), 40u);
  std::size_t cjk = 0, total = 0;
  for (const std::string& p : *passages) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const auto c = static_cast<unsigned char>(p[i]);
      if ((c & 0xC0) == 0x80) continue;
      ++total;
      cjk += c >= 0xE4 && c <= 0xE9 ? 1 : 0;  // lead bytes of U+4E00..U+9FFF
    }
    EXPECT_GE(CodePoints(p), 750u);
    // Literal backslashes are content (bash documents "\\a alert"); font changes
    // and string references are not.
    for (const char* escape : {"\\fB", "\\fI", "\\fR", "\\fP", "\\*(", ".SH ", ".TP"}) {
      EXPECT_EQ(p.find(escape), std::string::npos) << escape << " survived: " << p.substr(0, 200);
    }
  }
  EXPECT_GT(static_cast<double>(cjk) / static_cast<double>(total), 0.3);
}

}  // namespace
}  // namespace tokenbatch::workload
