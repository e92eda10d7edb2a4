// The server with the real libtorch backend: the tiny TorchScript model written by
// scripts/gen_models.py, compared with the outputs Python computed for it
// (tiny_reference.json: one request at a time, unpadded). The inputs are token
// ids (the tiny model has a 1000-id vocabulary); they are sent in one request, so
// they are batched (padded) together, and must still match.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/test_client.h"
#include "tokenbatch/backend/encoder.h"
#include "testing/build_paths.h"
#include "testing/float_compare.h"

namespace tokenbatch::server {
namespace {

using nlohmann::json;

TEST(ServerTorch, TinyModelMatchesPythonReference) {
  const std::string dir = tokenbatch::testing::ModelDir();
  std::ifstream in(dir + "/tiny_reference.json");
  ASSERT_TRUE(in) << "missing " << dir << "/tiny_reference.json (run /usr/bin/python3 scripts/gen_models.py)";
  const json ref = json::parse(in);
  auto backend = backend::TorchEncoder::Load({.model_path = dir + "/tiny.pt",
                                              .pooling = backend::Pooling::kMean,
                                              .normalize = true,
                                              .num_threads = 1,
                                              .max_positions = 128,
                                              .vocab_size = 1000});
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto s = testing::StartTestServerWith({}, {}, *std::move(backend));
  ASSERT_NE(s.port, 0);
  auto r = testing::Call(s.port, "POST", "/v1/embeddings", json{{"input", ref["inputs"]}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json b = json::parse(r->body);
  const json& expected = ref["mean_normalized"];
  ASSERT_EQ(b["data"].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    // Python computed each input alone, the server in a padded batch: equal to
    // within the cross-CPU float32 tolerance.
    EXPECT_TRUE(tokenbatch::testing::FloatsNear(b["data"][i]["embedding"].get<std::vector<double>>(),
                                                expected[i].get<std::vector<double>>()))
        << "input " << i;
  }
  // An id outside the model's vocabulary is the client's error, not a crash.
  auto bad = testing::Call(s.port, "POST", "/v1/embeddings", json{{"input", {{1, 1000}}}}.dump());
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  auto h = testing::Call(s.port, "GET", "/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

}  // namespace
}  // namespace tokenbatch::server
