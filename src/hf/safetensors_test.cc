#include "tokenbatch/hf/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "nlohmann/json.hpp"

namespace tokenbatch::hf {
namespace {

namespace fs = std::filesystem;

// A safetensors file: 8-byte little-endian header length, header, data.
std::string Encode(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// Two F32 tensors: a [2, 2] = 1..4 and b [3] = 5..7.
std::string ValidFile() {
  nlohmann::json h;
  h["__metadata__"] = {{"format", "pt"}};
  h["a"] = {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}};
  h["b"] = {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {16, 28}}};
  std::string data(28, '\0');
  for (int i = 0; i < 7; ++i) {
    const float v = static_cast<float>(i + 1);
    std::memcpy(data.data() + 4 * i, &v, 4);
  }
  return Encode(h.dump(), data);
}

class SafetensorsTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& bytes, const std::string& name = "model.safetensors") {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tb_safetensors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SafetensorsTest, ReadsNamesShapesAndBytes) {
  auto f = SafetensorsFile::Open(Write(ValidFile()));
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  const TensorEntry* b = (*f)->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(b->numel(), 3);
  std::span<const std::byte> bytes = (*f)->Bytes(*b);
  ASSERT_EQ(bytes.size(), 12u);
  float v = 0;
  std::memcpy(&v, bytes.data() + 8, 4);
  EXPECT_EQ(v, 7.0f);
  EXPECT_EQ((*f)->Find("c"), nullptr);
}

// Each malformed header is refused with a message naming the problem.
TEST_F(SafetensorsTest, RefusesMalformedHeaders) {
  const std::string data(16, '\0');
  struct Case {
    std::string header;
    std::string expect;
  } cases[] = {
      {"not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"a": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}})", "unknown dtype"},
      {R"({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", "not an integer >= 0"},
      {R"({"a": {"dtype": "F32", "shape": [5], "data_offsets": [0, 16]}})", "need 20"},
      {R"({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})", "outside the data buffer"},
      {R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})", "outside the data buffer"},
      {R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0]}})", "data_offsets"},
      {R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 16]}})", "overflows"},
      {R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", "overlap"},
      {R"({"a": 5})", "not a JSON object"},
  };
  for (const Case& c : cases) {
    auto f = SafetensorsFile::Open(Write(Encode(c.header, data)));
    ASSERT_FALSE(f.ok()) << c.header;
    EXPECT_NE(f.status().message().find(c.expect), std::string::npos) << f.status() << " for " << c.header;
    EXPECT_NE(f.status().message().find("model.safetensors"), std::string::npos) << f.status();
  }
}

TEST_F(SafetensorsTest, RefusesShortFilesAndHugeHeaderLengths) {
  auto tiny = SafetensorsFile::Open(Write("abc"));
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("too short"), std::string::npos) << tiny.status();
  std::string huge = ValidFile();
  huge[7] = '\x7f';
  auto f = SafetensorsFile::Open(Write(huge));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("does not fit"), std::string::npos) << f.status();
  EXPECT_FALSE(SafetensorsFile::Open((dir_ / "absent").string()).ok());
}

// Every truncation of a valid file, and many random corruptions, either fail
// cleanly or yield entries that lie inside the file (ASan would catch a read past it).
TEST_F(SafetensorsTest, TruncatedAndCorruptedFilesNeverReadOutside) {
  const std::string valid = ValidFile();
  for (size_t n = 0; n < valid.size(); ++n) {
    auto f = SafetensorsFile::Open(Write(valid.substr(0, n)));
    EXPECT_FALSE(f.ok()) << "truncated to " << n << " bytes";
  }
  std::mt19937 rng(7);
  int accepted = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    auto f = SafetensorsFile::Open(Write(bytes));
    if (!f.ok()) continue;
    ++accepted;
    for (const TensorEntry& e : (*f)->tensors()) {
      std::span<const std::byte> span = (*f)->Bytes(e);
      ASSERT_LE(span.size(), bytes.size());
      unsigned sum = 0;
      for (std::byte x : span) sum += std::to_integer<unsigned>(x);
      EXPECT_LE(sum, 255u * span.size());
    }
  }
  EXPECT_GT(accepted, 0);  // flips inside the data leave a valid file
}

TEST_F(SafetensorsTest, ShardedCheckpointFollowsTheIndex) {
  nlohmann::json h1;
  h1["x"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
  nlohmann::json h2;
  h2["y"] = {{"dtype", "BF16"}, {"shape", {2}}, {"data_offsets", {0, 4}}};
  Write(Encode(h1.dump(), std::string(4, '\0')), "model-00001-of-00002.safetensors");
  Write(Encode(h2.dump(), std::string(4, '\0')), "model-00002-of-00002.safetensors");
  nlohmann::json index;
  index["weight_map"] = {{"x", "model-00001-of-00002.safetensors"}, {"y", "model-00002-of-00002.safetensors"}};
  Write(index.dump(), "model.safetensors.index.json");
  auto c = Checkpoint::Open(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->Names(), (std::vector<std::string>{"x", "y"}));
  ASSERT_NE(c->Find("y").entry, nullptr);
  EXPECT_EQ(c->Find("y").entry->dtype, "BF16");
  EXPECT_EQ(c->Find("z").entry, nullptr);

  index["weight_map"]["z"] = "model-00002-of-00002.safetensors";
  Write(index.dump(), "model.safetensors.index.json");
  auto lacking = Checkpoint::Open(dir_.string());
  ASSERT_FALSE(lacking.ok());
  EXPECT_NE(lacking.status().message().find("\"z\""), std::string::npos) << lacking.status();

  index["weight_map"] = {{"x", "../escape.safetensors"}};
  Write(index.dump(), "model.safetensors.index.json");
  auto escaping = Checkpoint::Open(dir_.string());
  ASSERT_FALSE(escaping.ok());
  EXPECT_NE(escaping.status().message().find("not a file name inside"), std::string::npos) << escaping.status();
}

TEST_F(SafetensorsTest, DirectoryWithoutWeightsNamesWhatItLooksFor) {
  auto c = Checkpoint::Open(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("model.safetensors"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace tokenbatch::hf
