// The HTTP API on 127.0.0.1 (an ephemeral port) in front of an Agent with a fake driver: token
// handling, probes, status codes and bodies. The loop itself is agent_test.cpp's.
#include "agent/daemon/http_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace {

using namespace std::chrono_literals;

constexpr auto kRequestWait = 30s;

TEST(BearerToken, MatchesOnlyTheExactToken) {
  EXPECT_TRUE(bearer_token_matches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearer_token_matches("bearer s3cret", "s3cret"));  // the scheme is case-insensitive
  EXPECT_FALSE(bearer_token_matches("Bearer s3creT", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("Bearer s3crett", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("s3cret", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("", "s3cret"));
  EXPECT_FALSE(bearer_token_matches("Bearer ", ""));  // an empty token never authorises
}

TEST(TokenFile, IsTrimmedAndMustNotBeEmpty) {
  test::TempTree tree;
  tree.write("/token", "  s3cret\n");
  tree.write("/empty", " \n");
  auto token = read_token_file(tree.root() + "/token");
  ASSERT_TRUE(token) << token.error().to_string();
  EXPECT_EQ(*token, "s3cret");
  EXPECT_FALSE(read_token_file(tree.root() + "/empty"));
  EXPECT_FALSE(read_token_file(tree.root() + "/missing"));
}

TEST(ListenAddress, Parses) {
  auto a = parse_listen_address("127.0.0.1:9000");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9000);
  auto b = parse_listen_address(":8080");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "127.0.0.1");
  EXPECT_EQ(b->port, 8080);
  auto c = parse_listen_address("[::1]:9473");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "::1");
  auto d = parse_listen_address("10.0.0.1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, kDefaultApiPort);
  for (const char* bad : {"", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:http", "::1:80", "[::1"}) {
    EXPECT_FALSE(parse_listen_address(bad)) << bad;
  }
}

class Driver : public HostDriver {
 public:
  ReconcileOutcome reconcile(const NodeSpec&, bool) override {
    ++reconciles;
    ReconcileOutcome out;
    out.report.node = "n1";
    out.observed = HostState{};
    return out;
  }
  Result<Report> plan(const NodeSpec&) override {
    Report r;
    r.node = "n1";
    return r;
  }
  nlohmann::json selftest(const NodeSpec*) override { return {{"result", "skipped"}}; }
  std::atomic<int> reconciles{0};
};

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.write("/spec.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\n");
    AgentSettings settings;
    settings.spec_path = tree_.root() + "/spec.yaml";
    settings.node = "n1";
    auto driver = std::make_unique<Driver>();
    driver_ = driver.get();
    agent_ = std::make_unique<Agent>(settings, std::move(driver));
  }
  void serve(std::optional<std::string> token) {
    ApiSettings settings;
    settings.listen = {"127.0.0.1", 0};
    settings.token = std::move(token);
    auto api = HttpApi::bind(*agent_, settings);
    ASSERT_TRUE(api) << api.error().to_string();
    api_ = std::move(*api);
    api_->start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", api_->port());
    // cpp-httplib waits up to 300 s for a connection or an answer by default, beyond the test's
    // CTest timeout: a server that never answers should fail the request, generously bounded for
    // a loaded machine or the sanitizer build, and not hang until CTest kills the test.
    client_->set_connection_timeout(kRequestWait);
    client_->set_read_timeout(kRequestWait);
    client_->set_write_timeout(kRequestWait);
  }
  void TearDown() override {
    if (api_) api_->stop();
  }

  test::TempTree tree_;
  Driver* driver_ = nullptr;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpApiTest, ProbesFollowTheFirstReconcile) {
  serve(std::nullopt);
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto before = client_->Get("/readyz");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);
  EXPECT_FALSE(nlohmann::json::parse(before->body)["reason"].get<std::string>().empty());
  agent_->reconcile_once("test");
  auto after = client_->Get("/readyz");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("rdmactl_reconciles_total{node=\"n1\"} 1"), std::string::npos) << metrics->body;
  auto status = client_->Get("/v1/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(nlohmann::json::parse(status->body)["node"], "n1");
  auto plan = client_->Get("/v1/plan");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->status, 200);
  EXPECT_EQ(nlohmann::json::parse(plan->body)["kind"], "Plan");
  auto state = client_->Get("/v1/state");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->status, 200);
}

TEST_F(HttpApiTest, UnknownPathIsJson404) {
  serve(std::nullopt);
  auto res = client_->Get("/v2/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_TRUE(nlohmann::json::parse(res->body).contains("error"));
}

TEST_F(HttpApiTest, PostsNeedTheBearerToken) {
  serve("s3cret");
  auto none = client_->Post("/v1/reconcile");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  auto wrong = client_->Post("/v1/reconcile", httplib::Headers{{"Authorization", "Bearer nope"}}, "", "text/plain");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto selftest_denied = client_->Post("/v1/selftest");
  ASSERT_TRUE(selftest_denied);
  EXPECT_EQ(selftest_denied->status, 401);

  const httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  auto queued = client_->Post("/v1/reconcile", auth, "", "text/plain");
  ASSERT_TRUE(queued);
  EXPECT_EQ(queued->status, 202);
  EXPECT_EQ(nlohmann::json::parse(queued->body)["queued"], true);
  auto selftest = client_->Post("/v1/selftest", auth, "", "text/plain");
  ASSERT_TRUE(selftest);
  EXPECT_EQ(selftest->status, 200);
  EXPECT_EQ(nlohmann::json::parse(selftest->body)["result"], "skipped");
  // Only queued: the agent was not started, so nothing ran.
  EXPECT_EQ(driver_->reconciles.load(), 0);
}

TEST_F(HttpApiTest, WithoutATokenFileThePostsAreForbidden) {
  serve(std::nullopt);
  auto res = client_->Post("/v1/reconcile", httplib::Headers{{"Authorization", "Bearer anything"}}, "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_NE(res->body.find("no --token-file configured"), std::string::npos);
}

// Also: stop() right after start() returns (cpp-httplib ignores a stop before it runs).
TEST_F(HttpApiTest, ASecondServerCannotTakeTheSamePort) {
  serve(std::nullopt);
  ApiSettings settings;
  settings.listen = {"127.0.0.1", api_->port()};
  EXPECT_FALSE(HttpApi::bind(*agent_, settings));
}

}  // namespace
}  // namespace rdmactl
