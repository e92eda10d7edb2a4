// Tests of TorchEncoder against the synthetic models and the reference values that
// scripts/gen_models.py computes with python3-torch (one request at a time, no
// padding), so padding, masking and pooling here are checked independently.
#include "tokenbatch/backend/encoder.h"

#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/build_paths.h"
#include "testing/float_compare.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::backend {
namespace {

// A request (aggregate init would trip -Wmissing-field-initializers).
EmbeddingInput Req(std::vector<int32_t> ids = {}, std::vector<int32_t> types = {},
                   std::optional<bool> normalize = {}, int dimensions = 0) {
  EmbeddingInput in;
  in.input_ids = std::move(ids);
  in.token_type_ids = std::move(types);
  in.normalize = normalize;
  in.dimensions = dimensions;
  return in;
}


const char kHint[] =
    "; generate the test models with: /usr/bin/python3 scripts/gen_models.py --out "
    "build/cache/models (from the repository root)";

std::string ModelPath(const std::string& name) {
  return tokenbatch::testing::ModelDir() + "/" + name + ".pt";
}

// Loads a model, failing the test (never skipping) if it is missing.
std::unique_ptr<TorchEncoder> LoadOrFail(const std::string& name, Pooling pooling,
                                         bool normalize = false) {
  EncoderOptions options;
  options.model_path = ModelPath(name);
  options.pooling = pooling;
  options.normalize = normalize;
  options.vocab_size = 1000;
  options.max_positions = 128;
  options.num_threads = 2;
  if (!std::filesystem::exists(options.model_path)) {
    ADD_FAILURE() << "missing " << options.model_path << kHint;
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<TorchEncoder>> encoder = TorchEncoder::Load(options);
  if (!encoder.ok()) {
    ADD_FAILURE() << encoder.status();
    return nullptr;
  }
  return std::move(*encoder);
}

nlohmann::json Reference() {
  const std::string path = tokenbatch::testing::ModelDir() + "/tiny_reference.json";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "missing " << path << kHint;
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(in);
}

std::vector<EmbeddingInput> ReferenceInputs(const nlohmann::json& ref) {
  std::vector<EmbeddingInput> inputs;
  for (const auto& ids : ref.value("inputs", nlohmann::json::array())) {
    inputs.push_back(Req(ids.get<std::vector<int32_t>>()));
  }
  return inputs;
}

using ::tokenbatch::testing::FloatsNear;

// Every embedding got[i] within the cross-CPU float32 tolerance of want[i].
void ExpectClose(const std::vector<Embedding>& got, const nlohmann::json& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(FloatsNear(got[i].values, want[i].get<std::vector<double>>())) << "request " << i;
  }
}

struct PoolingCase {
  Pooling pooling;
  bool normalize;
  int dimensions;
  const char* reference_key;
};

class ReferencePoolingTest : public ::testing::TestWithParam<PoolingCase> {};

TEST_P(ReferencePoolingTest, PaddedBatchMatchesPythonOnUnpaddedRequests) {
  const PoolingCase& c = GetParam();
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", c.pooling, c.normalize);
  ASSERT_NE(encoder, nullptr);
  EXPECT_EQ(encoder->hidden_size(), 64);
  nlohmann::json ref = Reference();
  std::vector<EmbeddingInput> inputs = ReferenceInputs(ref);
  ASSERT_EQ(inputs.size(), 5u);  // lengths 1, 3, 7, 16, 33: one batch padded to 33
  for (EmbeddingInput& in : inputs) in.dimensions = c.dimensions;
  absl::StatusOr<std::vector<Embedding>> got = encoder->Embed(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectClose(*got, ref[c.reference_key]);
}

INSTANTIATE_TEST_SUITE_P(
    Poolings, ReferencePoolingTest,
    ::testing::Values(PoolingCase{Pooling::kCls, false, 0, "cls"},
                      PoolingCase{Pooling::kMean, false, 0, "mean"},
                      PoolingCase{Pooling::kLast, false, 0, "last"},
                      PoolingCase{Pooling::kMean, true, 0, "mean_normalized"},
                      PoolingCase{Pooling::kCls, true, 16, "cls_normalized_dims_16"}),
    [](const ::testing::TestParamInfo<PoolingCase>& info) {
      return std::string(info.param.reference_key);
    });

TEST(TorchEncoderTest, EmbeddingDoesNotDependOnBatchMates) {
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kMean);
  ASSERT_NE(encoder, nullptr);
  const EmbeddingInput probe = Req({5, 17, 256, 999, 3});
  std::vector<EmbeddingInput> alone = {probe};
  std::vector<EmbeddingInput> crowded = {Req(std::vector<int32_t>(100, 7)), probe,
                                         Req({1, 2})};
  absl::StatusOr<std::vector<Embedding>> a = encoder->Embed(alone);
  absl::StatusOr<std::vector<Embedding>> b = encoder->Embed(crowded);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(b->size(), 3u);
  ASSERT_EQ((*a)[0].values.size(), 64u);
  EXPECT_TRUE(FloatsNear((*b)[1].values, (*a)[0].values));
  // The batch-mates do differ from the probe (the comparison above is not vacuous).
  EXPECT_GT(std::abs((*b)[0].values[0] - (*b)[1].values[0]), 1e-3);
}

TEST(TorchEncoderTest, PerRequestNormalizeAndDimensions) {
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kCls);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> inputs = {Req({4, 8, 15}),
                                        Req({4, 8, 15}, {}, true, 0),
                                        Req({4, 8, 15}, {}, true, 8),
                                        Req({4, 8, 15}, {}, false, 8)};
  absl::StatusOr<std::vector<Embedding>> got = encoder->Embed(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<float>& raw = (*got)[0].values;
  ASSERT_EQ(raw.size(), 64u);
  double norm64 = 0, norm8 = 0;
  for (size_t k = 0; k < 64; ++k) norm64 += double{raw[k]} * raw[k];
  for (size_t k = 0; k < 8; ++k) norm8 += double{raw[k]} * raw[k];
  norm64 = std::sqrt(norm64);
  norm8 = std::sqrt(norm8);
  ASSERT_EQ((*got)[1].values.size(), 64u);
  ASSERT_EQ((*got)[2].values.size(), 8u);
  ASSERT_EQ((*got)[3].values.size(), 8u);
  // The four rows hold the same input, but BLAS need not compute equal rows of one
  // batch bitwise equal: compared within the cross-CPU tolerance.
  std::vector<double> normalized64, normalized8, truncated8;
  for (size_t k = 0; k < 64; ++k) normalized64.push_back(raw[k] / norm64);
  for (size_t k = 0; k < 8; ++k) {
    normalized8.push_back(raw[k] / norm8);
    truncated8.push_back(raw[k]);
  }
  EXPECT_TRUE(FloatsNear((*got)[1].values, normalized64));
  EXPECT_TRUE(FloatsNear((*got)[2].values, normalized8));
  EXPECT_TRUE(FloatsNear((*got)[3].values, truncated8));
}

TEST(TorchEncoderTest, TokenTypeIdsReachTheModel) {
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kMean);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> inputs = {Req({4, 8, 15}),
                                        Req({4, 8, 15}, {0, 0, 0}),
                                        Req({4, 8, 15}, {0, 1, 1})};
  absl::StatusOr<std::vector<Embedding>> got = encoder->Embed(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(FloatsNear((*got)[1].values, (*got)[0].values));  // all-zero types = none
  EXPECT_GT(std::abs((*got)[0].values[3] - (*got)[2].values[3]), 1e-4);
}

TEST(TorchEncoderTest, DictAndTupleOutputsMatchTensorOutput) {
  std::unique_ptr<TorchEncoder> plain = LoadOrFail("tiny", Pooling::kLast);
  std::unique_ptr<TorchEncoder> dict = LoadOrFail("tiny_dict", Pooling::kLast);
  EncoderOptions tuple_options;
  tuple_options.model_path = ModelPath("tiny_tuple");
  tuple_options.pooling = Pooling::kLast;
  tuple_options.output_index = 1;  // (pooler_output, last_hidden_state)
  absl::StatusOr<std::unique_ptr<TorchEncoder>> tuple = TorchEncoder::Load(tuple_options);
  ASSERT_TRUE(plain && dict);
  ASSERT_TRUE(tuple.ok()) << tuple.status() << kHint;
  std::vector<EmbeddingInput> inputs = {Req({9, 9, 9, 1}), Req({2})};
  absl::StatusOr<std::vector<Embedding>> a = plain->Embed(inputs);
  absl::StatusOr<std::vector<Embedding>> b = dict->Embed(inputs);
  absl::StatusOr<std::vector<Embedding>> c = (*tuple)->Embed(inputs);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(FloatsNear((*b)[i].values, (*a)[i].values)) << "dict output, request " << i;
    EXPECT_TRUE(FloatsNear((*c)[i].values, (*a)[i].values)) << "tuple output, request " << i;
  }
  // Element 0 of the tuple is [B, H]: refused at load.
  tuple_options.output_index = 0;
  EXPECT_EQ(GetErrorKind(TorchEncoder::Load(tuple_options).status()),
            ErrorKind::kInvalidArgument);
  // The dict model's forward takes no token_type_ids: non-zero ones are refused.
  std::vector<EmbeddingInput> typed = {Req({1, 2}, {0, 1})};
  EXPECT_EQ(GetErrorKind(dict->Embed(typed).status()), ErrorKind::kInvalidArgument);
}

TEST(TorchEncoderTest, WrongOutputShapeIsRefusedAtLoad) {
  EncoderOptions options;
  options.model_path = ModelPath("tiny_bad_shape");
  ASSERT_TRUE(std::filesystem::exists(options.model_path)) << options.model_path << kHint;
  absl::StatusOr<std::unique_ptr<TorchEncoder>> encoder = TorchEncoder::Load(options);
  EXPECT_EQ(GetErrorKind(encoder.status()), ErrorKind::kInvalidArgument);
  EXPECT_NE(std::string(encoder.status().message()).find("[B, L, H]"), std::string::npos)
      << encoder.status();
}

TEST(TorchEncoderTest, BadOptionsAreRefused) {
  EncoderOptions options;
  options.model_path = ModelPath("does_not_exist");
  EXPECT_EQ(GetErrorKind(TorchEncoder::Load(options).status()), ErrorKind::kInvalidArgument);
  options.model_path = ModelPath("tiny");
  options.device = "tpu:3";
  EXPECT_EQ(GetErrorKind(TorchEncoder::Load(options).status()), ErrorKind::kInvalidArgument);
  options.device = "cpu";
  options.vocab_size = 10;
  options.pad_token_id = 10;
  EXPECT_EQ(GetErrorKind(TorchEncoder::Load(options).status()), ErrorKind::kInvalidArgument);
  // A file that is not TorchScript is a backend error, not a crash.
  options = EncoderOptions{};
  options.model_path = tokenbatch::testing::ModelDir() + "/tiny.json";
  EXPECT_EQ(GetErrorKind(TorchEncoder::Load(options).status()), ErrorKind::kBackend);
}

TEST(TorchEncoderTest, BadRequestsAreInvalidArgumentsAndEmptyBatchIsEmpty) {
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kCls);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> none;
  absl::StatusOr<std::vector<Embedding>> empty = encoder->Embed(none);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  for (const EmbeddingInput& bad :
       {Req(), Req({1000}), Req(std::vector<int32_t>(129, 1)),
        Req({1, 2}, {0}), Req({1}, {}, {}, 65)}) {
    std::vector<EmbeddingInput> batch = {Req({1, 2, 3}), bad};
    EXPECT_EQ(GetErrorKind(encoder->Embed(batch).status()), ErrorKind::kInvalidArgument);
  }
}

TEST(TorchEncoderTest, ModelExceptionIsBackendError) {
  // tiny_raise raises RuntimeError for B >= 4.
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny_raise", Pooling::kCls);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> small(2, Req({1, 2}));
  EXPECT_TRUE(encoder->Embed(small).ok());
  std::vector<EmbeddingInput> large(4, Req({1, 2}));
  absl::Status s = encoder->Embed(large).status();
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kBackend);
  EXPECT_NE(std::string(s.message()).find("synthetic failure for tests"), std::string::npos) << s;

  // An id past the embedding table when vocab_size is not set: torch's index error.
  EncoderOptions options;
  options.model_path = ModelPath("tiny");
  absl::StatusOr<std::unique_ptr<TorchEncoder>> unchecked = TorchEncoder::Load(options);
  ASSERT_TRUE(unchecked.ok());
  std::vector<EmbeddingInput> oov = {Req({5000})};
  EXPECT_EQ(GetErrorKind((*unchecked)->Embed(oov).status()), ErrorKind::kBackend);
}

TEST(TorchEncoderTest, AllocationFailureInModelIsOutOfMemory) {
  // tiny_oom asks the CPU allocator for 16 TiB when B >= 4.
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny_oom", Pooling::kCls);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> small(3, Req({1, 2}));
  EXPECT_TRUE(encoder->Embed(small).ok());
  std::vector<EmbeddingInput> large(4, Req({1, 2}));
  absl::Status s = encoder->Embed(large).status();
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kOutOfMemory) << s;
  EXPECT_NE(std::string(s.message()).find("forward of batch [4, 2]"), std::string::npos) << s;
}

TEST(TorchEncoderTest, RealModelOverAddressSpaceLimitIsOutOfMemory) {
  // The plain tiny model on a batch whose activations (~150 MB: [512, 4, 128, 128]
  // float attention scores are 128 MiB) exceed an address-space limit of 48 MiB
  // above the current size. The limit is restored afterwards.
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kCls);
  ASSERT_NE(encoder, nullptr);
  std::vector<EmbeddingInput> batch(512, Req(std::vector<int32_t>(128, 3)));
  std::vector<EmbeddingInput> warm(2, Req(std::vector<int32_t>(128, 3)));
  ASSERT_TRUE(encoder->Embed(warm).ok());  // threads and lazy state exist before the limit
  std::string status_text;
  {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmSize:", 0) == 0) status_text = line.substr(7);
    }
  }
  const long long vm_kib = std::stoll(status_text);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(vm_kib * 1024 + (48ll << 20));
  ASSERT_EQ(setrlimit(RLIMIT_AS, &tight), 0);
  absl::Status s = encoder->Embed(batch).status();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kOutOfMemory) << s;
  // With the limit lifted the same batch runs.
  EXPECT_TRUE(encoder->Embed(batch).ok());
}

TEST(TorchEncoderTest, ConcurrentCallersGetTheSerialResults) {
  std::unique_ptr<TorchEncoder> encoder = LoadOrFail("tiny", Pooling::kMean, true);
  ASSERT_NE(encoder, nullptr);
  std::vector<std::vector<EmbeddingInput>> batches;
  for (int t = 0; t < 4; ++t) {
    batches.push_back({Req(std::vector<int32_t>(10 + 7 * t, 11 * t + 1)),
                       Req({t, t + 1, t + 2})});
  }
  std::vector<std::vector<Embedding>> serial;
  for (const auto& b : batches) {
    absl::StatusOr<std::vector<Embedding>> r = encoder->Embed(b);
    ASSERT_TRUE(r.ok());
    serial.push_back(*r);
  }
  std::vector<std::vector<Embedding>> parallel(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) {
        absl::StatusOr<std::vector<Embedding>> r = encoder->Embed(batches[t]);
        if (r.ok()) parallel[t] = *r;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(parallel[t].size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(parallel[t][i].values.size(), 64u);
      EXPECT_TRUE(FloatsNear(parallel[t][i].values, serial[t][i].values)) << "thread " << t << ", request " << i;
    }
  }
}

}  // namespace
}  // namespace tokenbatch::backend
