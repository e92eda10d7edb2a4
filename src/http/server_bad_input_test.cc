// Bad inputs against the real server: each gets its status, and the server stays
// healthy afterwards (checked with /health after every case).
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "http/test_client.h"
#include "service/test_gated_encoder.h"
#include "testing/wait_until.h"

namespace tokenbatch::server {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::BuildRequest;
using testing::Call;
using testing::Connection;

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::TestServer(
        testing::StartTestServer({.read_timeout = std::chrono::milliseconds(300)}));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void TearDown() override {
    auto h = Call(port(), "GET", "/health");
    ASSERT_TRUE(h) << "server did not answer /health after the bad input";
    EXPECT_EQ(h->status, 200);
  }
  std::uint16_t port() const { return server_->port; }
  int Status(std::string_view path, std::string_view body) {
    auto r = Call(port(), "POST", path, body);
    if (!r) return -1;
    last_body_ = r->body;
    return r->status;
  }
  std::string last_body_;
  static testing::TestServer* server_;
};
testing::TestServer* BadInputTest::server_ = nullptr;

TEST_F(BadInputTest, MalformedAndTruncatedJsonAre400) {
  EXPECT_EQ(Status("/v1/embeddings", "{not json"), 400);
  EXPECT_THAT(last_body_, HasSubstr("malformed JSON"));
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": ["a", "b")"), 400);
  EXPECT_EQ(Status("/embed", ""), 400);
}

TEST_F(BadInputTest, WrongTypesAre400) {
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": 42})"), 400);
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": {"text": "a"}})"), 400);
  EXPECT_EQ(Status("/embed", R"({"inputs": "a", "truncate": "yes"})"), 400);
  EXPECT_THAT(last_body_, HasSubstr("`truncate` must be a boolean"));
}

TEST_F(BadInputTest, EmptyInputAndEmptyStringAre422) {
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": []})"), 422);
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": ""})"), 422);
  EXPECT_THAT(last_body_, HasSubstr("empty string"));
}

TEST_F(BadInputTest, TenMegabyteBodyIs413) {
  Connection c(port());
  const std::string body(10 * 1000 * 1000, 'a');
  std::thread sender([&] { c.Send(BuildRequest("POST", "/v1/embeddings", body)); });
  auto r = c.Read();
  sender.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_THAT(r->body, HasSubstr("payload limit"));
  EXPECT_THAT(r->body, HasSubstr(R"("message")"));  // OpenAI's error shape on an OpenAI route
}

TEST_F(BadInputTest, HundredThousandInputsAre413) {
  std::string body = R"({"input": [)";
  for (int i = 0; i < 100000; ++i) absl::StrAppend(&body, i ? "," : "", "\"a\"");
  body += "]}";
  EXPECT_EQ(Status("/v1/embeddings", body), 413);
  EXPECT_THAT(last_body_, HasSubstr("holds 100000 inputs"));
}

TEST_F(BadInputTest, InvalidUtf8Is422) {
  EXPECT_EQ(Status("/v1/embeddings", "{\"input\": \"caf\xC3\x28\"}"), 422);
  EXPECT_THAT(last_body_, HasSubstr("not valid UTF-8"));
}

TEST_F(BadInputTest, NulBytes) {
  // A raw NUL inside a JSON string is not JSON (control characters must be escaped).
  EXPECT_EQ(Status("/v1/embeddings", std::string("{\"input\": \"a\0b\"}", 16)), 400);
  // An escaped NUL is a valid character and is embedded.
  EXPECT_EQ(Status("/v1/embeddings", R"({"input": "a\u0000b"})"), 200);
}

TEST_F(BadInputTest, DeeplyNestedJsonIs400) {
  const std::string deep = R"({"input": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(Status("/v1/embeddings", deep), 400);
  EXPECT_THAT(last_body_, HasSubstr("nested"));
}

TEST_F(BadInputTest, HeaderFloodIs431) {
  std::vector<std::string> headers;
  for (int i = 0; i < 2000; ++i) headers.push_back(absl::StrCat("X-Flood-", i, ": ", std::string(40, 'x')));
  Connection c(port());
  std::thread sender([&] { c.Send(BuildRequest("GET", "/health", "", headers)); });
  auto r = c.Read();
  sender.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
}

TEST_F(BadInputTest, GarbageRequestLineIs400) {
  Connection c(port());
  ASSERT_TRUE(c.Send("\x01\x02 nonsense\r\n\r\n"));
  auto r = c.Read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

TEST_F(BadInputTest, SlowClientIsDisconnectedAfterTheReadTimeout) {
  Connection c(port());
  ASSERT_TRUE(c.Send("POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"inputs\""));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.WaitForClose(std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(BadInputTest, ClientClosingMidBodyLeavesServerHealthy) {
  Connection c(port());
  ASSERT_TRUE(c.Send("POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"inp"));
  c.Close();
}

int MetricValue(const std::string& metrics, const std::string& series) {
  const std::size_t at = metrics.find("\n" + series + " ");  // a sample line, not HELP/TYPE
  if (at == std::string::npos) return -1;
  return std::atoi(metrics.c_str() + at + series.size() + 2);
}

// A client sends five inputs, which queue behind a batch held at the backend's
// gate, and closes its connection `linger` after they are queued. The disconnect
// watch starts once a request has been pending for a few ms
// (http_connection.cc, AgedEntries); a client gone before that is noticed then.
// The gate stays shut until all five are cancelled, so they can only have been
// cancelled, never computed.
void ExpectQueuedInputsOfALeaverCancelled(std::chrono::milliseconds linger) {
  ServiceOptions one_at_a_time;
  one_at_a_time.batcher.scheduler.max_batch_size = 1;
  auto gate = std::make_shared<tokenbatch::testing::Gate>();
  auto s = testing::StartTestServerWith(
      {}, one_at_a_time,
      std::make_unique<tokenbatch::testing::GatedEncoder>(backend::MakeNoopEncoder({.hidden_size = 16}), gate));
  ASSERT_NE(s.port, 0);
  Connection busy(s.port);  // occupies the only worker until the gate opens
  ASSERT_TRUE(busy.Send(BuildRequest("POST", "/embed", json{{"inputs", "busy"}}.dump())));
  ASSERT_TRUE(gate->WaitForArrivals(1));
  {
    Connection leaver(s.port);
    ASSERT_TRUE(leaver.Send(BuildRequest("POST", "/embed", json{{"inputs", {"a", "b", "c", "d", "e"}}}.dump())));
    if (linger > std::chrono::milliseconds(0)) {
      ASSERT_TRUE(tokenbatch::testing::WaitUntil([&] { return s.service->metrics().requests_submitted == 6; }));
      std::this_thread::sleep_for(linger);
    }
  }  // closes with all five inputs still queued behind "busy"
  const auto cancelled = [&] {
    const MetricsSnapshot m = s.service->metrics();
    const auto it = m.failures_by_kind.find("cancelled");
    return it == m.failures_by_kind.end() ? 0u : it->second;
  };
  EXPECT_TRUE(tokenbatch::testing::WaitUntil([&] { return cancelled() == 5; })) << cancelled() << " cancelled";
  gate->Open();
  auto r = busy.Read(std::chrono::seconds(60));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto m = Call(s.port, "GET", "/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(MetricValue(m->body, "tokenbatch_inputs_total{model=\"tokenbatch\",outcome=\"cancelled\"}"), 5) << m->body;
  EXPECT_EQ(MetricValue(m->body, "tokenbatch_inputs_total{model=\"tokenbatch\",outcome=\"success\"}"), 1);
  EXPECT_EQ(MetricValue(m->body, "tokenbatch_batches_total{model=\"tokenbatch\"}"), 1);  // only "busy" was computed
  EXPECT_EQ(gate->arrived(), 1);
  auto h = Call(s.port, "GET", "/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(ServerDisconnect, QueuedInputsOfAClientThatLeftAreCancelledNotComputed) {
  ExpectQueuedInputsOfALeaverCancelled(std::chrono::milliseconds(100));  // watched by then
}

TEST(ServerDisconnect, AClientGoneBeforeItsWatchStartsIsNoticedWhenItDoes) {
  ExpectQueuedInputsOfALeaverCancelled(std::chrono::milliseconds(0));
}

}  // namespace
}  // namespace tokenbatch::server
