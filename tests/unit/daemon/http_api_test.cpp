// SPDX-License-Identifier: Apache-2.0
// The HTTP API on 127.0.0.1 (an ephemeral port) in front of an Agent with a fake driver: token
// handling, probes, status codes and bodies, and its bounds against hostile clients (methods,
// bodies, endless headers, slow and silent connections). The loop itself is agent_test.cpp's; what
// /v1/status shows while a spec file is written slowly is here.
#include "agent/daemon/http_api.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace daemon_http_api_test {

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

// A token file as an operator makes it: install -m 0600.
std::string private_file(const test::TempTree& tree, const std::string& name, const std::string& text,
                         mode_t mode = 0600) {
  tree.write(name, text);
  const std::string path = tree.root() + name;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

TEST(TokenFile, IsTrimmedAndMustNotBeEmpty) {
  test::TempTree tree;
  auto token = read_token_file(private_file(tree, "/token", "  0123456789abcdef\n"));
  ASSERT_TRUE(token) << token.error().to_string();
  EXPECT_EQ(*token, "0123456789abcdef");
  EXPECT_FALSE(read_token_file(private_file(tree, "/empty", " \n")));
  EXPECT_FALSE(read_token_file(tree.root() + "/missing"));
}

TEST(TokenFile, ATokenShorterThan16BytesIsRefusedEvenInsecure) {
  test::TempTree tree;
  const std::string path = private_file(tree, "/token", "0123456789abcde\n");  // 15 bytes
  for (bool insecure : {false, true}) {
    auto token = read_token_file(path, insecure);
    ASSERT_FALSE(token);
    EXPECT_EQ(token.error().kind, ErrorKind::kUsage);
    EXPECT_NE(token.error().message.find("at least 16"), std::string::npos) << token.error().message;
  }
  EXPECT_TRUE(read_token_file(private_file(tree, "/sixteen", "0123456789abcdef")));
}

TEST(TokenFile, AFileGroupOrOthersCanReachIsRefusedWithoutInsecure) {
  test::TempTree tree;
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602, 0620}) {
    const std::string path = private_file(tree, "/token", "0123456789abcdef0123\n", mode);
    auto refused = read_token_file(path);
    ASSERT_FALSE(refused) << std::oct << mode;
    EXPECT_EQ(refused.error().kind, ErrorKind::kUsage);
    EXPECT_NE(refused.error().message.find("chmod 600"), std::string::npos) << refused.error().message;
    auto accepted = read_token_file(path, true);  // --insecure: a warning, and the token
    ASSERT_TRUE(accepted) << std::oct << mode << ": " << accepted.error().to_string();
    EXPECT_EQ(*accepted, "0123456789abcdef0123");
  }
  for (mode_t mode : {0600, 0400}) {
    EXPECT_TRUE(read_token_file(private_file(tree, "/token", "0123456789abcdef0123\n", mode))) << std::oct << mode;
  }
}

TEST(TokenFile, WhatCannotBeATokenIsRefused) {
  test::TempTree tree;
  EXPECT_FALSE(read_token_file(private_file(tree, "/spaces", "0123456789 abcdef0123\n")));
  EXPECT_FALSE(read_token_file(private_file(tree, "/lines", "0123456789abcdef\n0123456789abcdef\n")));
  EXPECT_FALSE(read_token_file(private_file(tree, "/huge", std::string(kMaxTokenFileBytes + 1, 'a'))));
  EXPECT_FALSE(read_token_file(tree.root()));  // a directory
}

// Issue 24 item 4: a FIFO as --token-file (nobody writes it) is refused at once; the old open(2)
// blocked for ever, and with it serve's start. /dev/zero is refused before it is read.
TEST(TokenFile, AFifoOrADeviceIsRefusedWithoutBlocking) {
  test::TempTree tree;
  const std::string fifo = tree.root() + "/token";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = std::async(std::launch::async, [&] { return read_token_file(fifo); });
  if (from_fifo.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked open go
    if (writer >= 0) ::close(writer);
    FAIL() << "read_token_file blocked on a FIFO";
  }
  auto refused = from_fifo.get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "the token file is not a regular file");
  auto zero = read_token_file("/dev/zero");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message, "the token file is not a regular file");
}

TEST(ListenAddress, OnlyLoopbackIsLoopback) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "192.168.100.11", "::ffff:10.0.0.1", "fe80::1",
                           "no-such-host.invalid"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
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

// A raw TCP connection to the API, for what httplib::Client will not send: bodies on GET, lies in
// Content-Length, endless headers, silence. Every call is bounded by kRequestWait.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval wait{static_cast<time_t>(kRequestWait.count()), 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection() { ::close(fd_); }

  bool connected() const { return connected_; }
  // false when the server closed or reset the connection, or took nothing for kRequestWait.
  bool send_all(const std::string& bytes) {
    for (size_t sent = 0; sent < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        stalled_ = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  bool stalled() const { return stalled_; }
  // The answer, up to the server closing the connection (or kRequestWait of silence).
  std::string read_until_closed() {
    std::string out;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd_, buffer, sizeof buffer, 0)) > 0) out.append(buffer, static_cast<size_t>(n));
    closed_ = n == 0 || (n < 0 && errno == ECONNRESET);
    return out;
  }
  bool closed() const { return closed_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool stalled_ = false;
  bool closed_ = false;
};

// "HTTP/1.1 413 Payload Too Large\r\n..." -> 413; 0 without a status line.
int status_of(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0 || answer.size() < 12) return 0;
  return std::atoi(answer.substr(9, 3).c_str());
}

class Driver : public HostDriver {
 public:
  ReconcileOutcome reconcile(const ReconcileRequest&) override {
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

// GET /v1/plan in every report format, and as a FleetPlan of this one node (plan --states' shape).
TEST_F(HttpApiTest, PlanComesInEveryFormatAndAsAOneNodeFleet) {
  serve(std::nullopt);
  agent_->reconcile_once("test");
  auto text = client_->Get("/v1/plan?format=text");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 200);
  EXPECT_EQ(text->body.rfind("Plan for node n1", 0), 0u) << text->body;
  auto junit = client_->Get("/v1/plan?format=junit");
  ASSERT_TRUE(junit);
  EXPECT_NE(junit->body.find("<testsuite name=\"rdmactl plan n1\""), std::string::npos) << junit->body;
  auto prom = client_->Get("/v1/plan?format=prom");
  ASSERT_TRUE(prom);
  EXPECT_NE(prom->body.find("rdmactl_drift_changes{node=\"n1\"} 0"), std::string::npos) << prom->body;
  auto fleet = client_->Get("/v1/plan?format=fleet");
  ASSERT_TRUE(fleet);
  EXPECT_EQ(fleet->status, 200);
  const auto body = nlohmann::json::parse(fleet->body);
  EXPECT_EQ(body["kind"], "FleetPlan");
  EXPECT_EQ(body["summary"]["nodes"], 1);
  EXPECT_EQ(body["summary"]["converged"], 1);
  EXPECT_EQ(body["nodes"][0]["node"], "n1");
  auto bad = client_->Get("/v1/plan?format=xml");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
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

TEST_F(HttpApiTest, OtherMethodsAre405WithAllow) {
  serve("0123456789abcdef");
  for (const char* path : {"/v1/reconcile", "/v1/selftest"}) {
    auto res = client_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 405) << path;
    EXPECT_EQ(res->get_header_value("Allow"), "POST") << path;
    EXPECT_TRUE(nlohmann::json::parse(res->body).contains("error")) << res->body;
  }
  auto post = client_->Post("/healthz", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  auto put = client_->Put("/v1/status", "", "text/plain");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  auto del = client_->Delete("/metrics");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  auto patch = client_->Patch("/v1/plan", "", "text/plain");
  ASSERT_TRUE(patch);
  EXPECT_EQ(patch->status, 405);
  auto options = client_->Options("/readyz");
  ASSERT_TRUE(options);
  EXPECT_EQ(options->status, 405);
  EXPECT_EQ(options->get_header_value("Allow"), "GET, HEAD");
  auto head = client_->Head("/healthz");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(driver_->reconciles.load(), 0);
}

// Refused from the request head, before a byte of the body is read: the client below announces a
// gigabyte and sends none, so an agent that waited for the body would not answer 413.
TEST_F(HttpApiTest, BodiesAreBoundedBeforeTheyAreRead) {
  serve("0123456789abcdef");
  struct Case {
    std::string request;
    int status;
  };
  const std::string gigabyte = "Content-Length: 1073741824\r\n\r\n";
  const std::vector<Case> cases = {
      {"POST /v1/reconcile HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer 0123456789abcdef\r\n" + gigabyte, 413},
      {"POST /v1/reconcile HTTP/1.1\r\nHost: t\r\nContent-Length: 65537\r\n\r\n", 413},
      {"GET /v1/status HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789", 413},
      {"GET /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", 413},
      {"GET /v1/state HTTP/1.1\r\nHost: t\r\n" + gigabyte, 413},
      {"POST /v1/status HTTP/1.1\r\nHost: t\r\n" + gigabyte, 405},
      {"PUT /nothing HTTP/1.1\r\nHost: t\r\n" + gigabyte, 404},
      {"POST /v1/selftest HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST /v1/selftest HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
      {"POST /v1/selftest HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    RawConnection conn(api_->port());
    ASSERT_TRUE(conn.connected());
    ASSERT_TRUE(conn.send_all(c.request));
    const std::string answer = conn.read_until_closed();
    EXPECT_EQ(status_of(answer), c.status) << c.request << "\n->\n" << answer;
    EXPECT_TRUE(conn.closed()) << "the unread body must not be taken for the next request: " << c.request;
  }
  EXPECT_EQ(driver_->reconciles.load(), 0);

  // A chunked body (no Content-Length to check) is counted as it is read: 413 past 64 KiB.
  RawConnection chunked(api_->port());
  ASSERT_TRUE(chunked.connected());
  std::string request = "POST /v1/reconcile HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer 0123456789abcdef\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 32; ++i) request += "1000\r\n" + std::string(4096, 'x') + "\r\n";  // 128 KiB
  request += "0\r\n\r\n";
  chunked.send_all(request);  // the server may close before it has all
  const std::string answer = chunked.read_until_closed();
  EXPECT_EQ(status_of(answer), 413) << answer;

  // Within the bound, a body is fine.
  const httplib::Headers auth{{"Authorization", "Bearer 0123456789abcdef"}};
  auto small = client_->Post("/v1/reconcile", auth, std::string(1000, '{'), "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 202);
}

// cpp-httplib 0.11 keeps reading header lines as long as they come (a test sending 200 MB of them
// grew a server by 400 MB). The head is bounded: the server closes the connection, and the client
// cannot send much more than what the kernel's socket buffers hold (a few MB on loopback).
TEST_F(HttpApiTest, EndlessHeadersAreCutOff) {
  serve(std::nullopt);
  RawConnection conn(api_->port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n"));
  const std::string line = "X-Pad: " + std::string(1000, 'a') + "\r\n";
  std::string block;
  for (int i = 0; i < 64; ++i) block += line;
  constexpr size_t kCap = 256u << 20;
  size_t sent = 0;
  while (sent < kCap && conn.send_all(block)) sent += block.size();
  EXPECT_FALSE(conn.stalled()) << "the server neither read nor closed for " << kRequestWait.count() << " s";
  EXPECT_LT(sent, kCap) << "the server took " << (sent >> 20) << " MiB of headers";
  // And it still answers others.
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// A header line every half second: each read is in time, the request as a whole is not. Without a
// deadline for the whole request the connection would stay open as long as the client likes.
TEST_F(HttpApiTest, ATrickledRequestIsCutOffAtItsDeadline) {
  serve(std::nullopt);
  RawConnection conn(api_->port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\n"));
  const auto begin = std::chrono::steady_clock::now();
  bool cut = false;
  std::string answer;
  while (!cut && std::chrono::steady_clock::now() - begin < kRequestWait) {
    if (!conn.send_all("X-Slow: y\r\n")) {
      cut = true;
      break;
    }
    pollfd pfd{conn.fd(), POLLIN, 0};
    if (::poll(&pfd, 1, 500) > 0) {
      answer = conn.read_until_closed();
      cut = conn.closed();
    }
  }
  EXPECT_TRUE(cut) << "still open after " << kRequestWait.count() << " s of trickling";
  EXPECT_NE(status_of(answer), 200) << answer;
}

// Clients that connect and send nothing, or half a request, wait in the waiting room (until the
// idle timeout, 1 s, or the request deadline, 5 s), not on a worker. The bound is generous for the
// sanitizer build; with cpp-httplib's defaults (8 workers, a read timeout of 5 s per byte) these 48
// clients held /healthz back for about 15 s. SlowClientsDoNotHoldTheProbesBack, below, is the
// tighter check.
TEST_F(HttpApiTest, SilentAndSlowClientsDoNotStarveHealthz) {
  constexpr auto kHealthBound = 10s;
  serve(std::nullopt);
  std::vector<std::unique_ptr<RawConnection>> crowd;
  for (int i = 0; i < 48; ++i) {
    crowd.push_back(std::make_unique<RawConnection>(api_->port()));
    ASSERT_TRUE(crowd.back()->connected()) << i;
    if (i % 2 == 1) {
      ASSERT_TRUE(crowd.back()->send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n"));
    }
  }
  const auto begin = std::chrono::steady_clock::now();
  auto health = client_->Get("/healthz");
  const auto took = std::chrono::steady_clock::now() - begin;
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(took, kHealthBound) << std::chrono::duration<double>(took).count() << " s";
}

// Also: stop() right after start() returns (cpp-httplib ignores a stop before it runs).
TEST_F(HttpApiTest, ASecondServerCannotTakeTheSamePort) {
  serve(std::nullopt);
  ApiSettings settings;
  settings.listen = {"127.0.0.1", api_->port()};
  EXPECT_FALSE(HttpApi::bind(*agent_, settings));
}

// Records the spec each reconcile was given: the MTU of every interface, in order.
class RecordingDriver : public HostDriver {
 public:
  ReconcileOutcome reconcile(const ReconcileRequest& request) override {
    const NodeSpec& spec = request.node_spec;
    std::vector<int> mtus;
    for (const InterfaceSpec& iface : spec.interfaces) mtus.push_back(iface.mtu.value_or(0));
    std::lock_guard lock(mutex);
    seen.push_back(mtus);
    ReconcileOutcome out;
    out.report.node = "n1";
    out.observed = HostState{};
    return out;
  }
  Result<Report> plan(const NodeSpec&) override { return Report{}; }
  nlohmann::json selftest(const NodeSpec*) override { return {{"result", "skipped"}}; }
  std::vector<std::vector<int>> specs_seen() {
    std::lock_guard lock(mutex);
    return seen;
  }

  std::mutex mutex;
  std::vector<std::vector<int>> seen;
};

// A spec written in place, a few bytes at a time (as cat, scp or a slow network file system write
// it), while the watcher polls and the timer reconciles all the time: no reconcile may get a
// prefix of the file (each one is invalid YAML, an invalid spec or a smaller valid one), and
// /v1/status must never show the half-written file as an invalid spec. The pieces come 20 ms apart
// and the agent waits for 2 s of quiet here: only a writer stalled for 2 s could be read half-way.
TEST(SpecFileWrite, AHalfWrittenSpecIsNeverReadNorReportedInvalid) {
  constexpr auto kPieceGap = 20ms;
  constexpr size_t kPieceBytes = 8;
  const std::string header = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\n";
  const std::string before = header + "defaults:\n  interfaces:\n    - name: eth9\n      mtu: 1500\n";
  const std::string after = header +
                            "defaults:\n  interfaces:\n    - name: eth9\n      mtu: 9000\n      state: up\n"
                            "    - name: eth8\n      mtu: 4200\n";
  test::TempTree tree;
  tree.write("/spec.yaml", before);
  AgentSettings settings;
  settings.spec_path = tree.root() + "/spec.yaml";
  settings.node = "n1";
  settings.interval = 50ms;  // timer reconciles during the write: each reads the file
  settings.spec_poll = 10ms;
  settings.spec_settle = 2s;
  auto owned = std::make_unique<RecordingDriver>();
  RecordingDriver* driver = owned.get();
  Agent agent(settings, std::move(owned));
  ApiSettings api_settings;
  api_settings.listen = {"127.0.0.1", 0};
  auto api = HttpApi::bind(agent, api_settings);
  ASSERT_TRUE(api) << api.error().to_string();
  (*api)->start();
  agent.start();

  // The status as the API shows it, sampled over HTTP until the write is over and applied.
  std::atomic<bool> sampling{true};
  std::vector<std::string> bad_statuses;
  std::thread sampler([&] {
    httplib::Client client("127.0.0.1", (*api)->port());
    client.set_connection_timeout(kRequestWait);
    client.set_read_timeout(kRequestWait);
    while (sampling.load()) {
      if (auto res = client.Get("/v1/status"); res && res->status == 200) {
        const auto status = nlohmann::json::parse(res->body);
        const bool invalid = !status["spec"]["valid"].get<bool>() ||
                             (status["lastReconcile"].is_object() && status["lastReconcile"]["result"] == "invalidSpec");
        if (invalid && status["reconciles"].get<int>() > 0) bad_statuses.push_back(res->body);
      }
      std::this_thread::sleep_for(5ms);
    }
  });

  const auto wait_for = [&](auto done) {
    const auto deadline = std::chrono::steady_clock::now() + kRequestWait;
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return !driver->specs_seen().empty(); }));
  {
    std::ofstream out(settings.spec_path, std::ios::trunc);  // the truncation is the first half-way state
    for (size_t at = 0; at < after.size(); at += kPieceBytes) {
      out << after.substr(at, kPieceBytes) << std::flush;
      std::this_thread::sleep_for(kPieceGap);
    }
  }
  const std::vector<int> whole{9000, 4200};
  const bool applied = wait_for([&] { return driver->specs_seen().back() == whole; });
  sampling.store(false);
  sampler.join();
  agent.stop();
  (*api)->stop();

  EXPECT_TRUE(applied) << "the whole new spec was not applied within " << kRequestWait.count() << " s";
  for (const std::vector<int>& spec : driver->specs_seen()) {
    EXPECT_TRUE(spec == std::vector<int>{1500} || spec == whole)
        << "a reconcile got part of the file: " << ::testing::PrintToString(spec);
  }
  EXPECT_EQ(agent.failure_count(), 0u);
  EXPECT_TRUE(bad_statuses.empty()) << bad_statuses.size() << " statuses showed an invalid spec, e.g.\n"
                                    << (bad_statuses.empty() ? "" : bad_statuses.front());
}

// ---- Slow clients and the probes (issue 24): the waiting room and the health lane (http_server.h).

// The bound on a probe's answer under attack: well within the kubelet's 5 s probe timeout, and
// generous for the sanitizer build on a loaded 2-core machine. Before the waiting room, 100 slow
// clients held /healthz back for 4.5 s and more.
constexpr auto kProbeBound = 2s;

double seconds_of(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Reads HTTP answers one at a time from a raw connection (several may come in one segment when
// requests were pipelined). Each read is bounded by the connection's kRequestWait.
class AnswerReader {
 public:
  explicit AnswerReader(RawConnection& connection) : connection_(connection) {}

  // The next whole answer (head and Content-Length body); "" when the connection closed or stalled.
  std::string next() {
    for (int reads = 0; reads < 1000; ++reads) {
      const size_t head_end = pending_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const std::string head = pending_.substr(0, head_end + 4);
        size_t length = 0;
        if (const size_t at = lowercase(head).find("\r\ncontent-length:"); at != std::string::npos) {
          length = std::strtoul(head.c_str() + at + 17, nullptr, 10);
        }
        if (pending_.size() >= head.size() + length) {
          std::string answer = pending_.substr(0, head.size() + length);
          pending_.erase(0, answer.size());
          return answer;
        }
      }
      char buffer[4096];
      const ssize_t n = ::recv(connection_.fd(), buffer, sizeof buffer, 0);
      if (n <= 0) return "";
      pending_.append(buffer, static_cast<size_t>(n));
    }
    return "";
  }

  // Whether the server closes the connection (without sending more) within kRequestWait.
  bool closed() {
    char byte;
    const ssize_t n = ::recv(connection_.fd(), &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  static std::string lowercase(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  }

  RawConnection& connection_;
  std::string pending_;
};

// A crowd of clients that never finish their requests, as an attacker (or a broken client) sends
// them: headers trickled a byte at a time, a head that stops half-way, a body announced and
// trickled, a chunked body trickled, and connections that send nothing. The tricklers send a byte
// to each of theirs every kTrickleGap, for at most kCrowdLifetime, until the crowd is dropped.
class SlowCrowd {
 public:
  static constexpr auto kTrickleGap = 250ms;
  static constexpr auto kCrowdLifetime = 20s;

  SlowCrowd(int port, int size) {
    const std::vector<std::string> starts = {
        "GET /v1/status HTTP/1.1\r\nHost: t\r\nX-Slow: ",                                     // trickled headers
        "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Half",                                         // stops half-way
        "POST /v1/reconcile HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{",            // trickled body
        "POST /v1/selftest HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n",  // trickled chunks
        "",                                                                                   // silent
    };
    for (int i = 0; i < size; ++i) {
      const std::string& start = starts[static_cast<size_t>(i) % starts.size()];
      connections_.push_back(std::make_unique<RawConnection>(port));
      connected_ = connected_ && connections_.back()->connected();
      if (!start.empty()) connections_.back()->send_all(start);
      // The half-way heads and the silent ones just wait; the rest trickle.
      if (i % 5 != 1 && i % 5 != 4) trickled_.push_back(connections_.back().get());
    }
    trickler_ = std::thread([this] {
      const auto until = std::chrono::steady_clock::now() + kCrowdLifetime;
      std::unique_lock lock(mutex_);
      while (!stop_ && std::chrono::steady_clock::now() < until) {
        for (RawConnection* c : trickled_) ::send(c->fd(), "y", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        cv_.wait_for(lock, kTrickleGap, [this] { return stop_; });
      }
    });
  }
  SlowCrowd(const SlowCrowd&) = delete;
  SlowCrowd& operator=(const SlowCrowd&) = delete;
  ~SlowCrowd() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    trickler_.join();
  }

  bool connected() const { return connected_; }

 private:
  std::vector<std::unique_ptr<RawConnection>> connections_;
  std::vector<RawConnection*> trickled_;
  bool connected_ = true;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread trickler_;
};

// The attack of issue 24: 100 slow clients, then the kubelet's probes (a new connection each).
// /healthz and /readyz answer within kProbeBound every time, and so do a plain GET /v1/status and
// the refusals (401, 405, 413): the slow clients wait in the waiting room, not on workers.
TEST_F(HttpApiTest, SlowClientsDoNotHoldTheProbesBack) {
  constexpr int kCrowd = 100;
  constexpr int kRounds = 3;
  serve("0123456789abcdef");
  agent_->reconcile_once("test");  // /readyz: 200
  SlowCrowd crowd(api_->port(), kCrowd);
  ASSERT_TRUE(crowd.connected());
  std::this_thread::sleep_for(300ms);  // the server has taken them all in

  struct Probe {
    const char* what;
    std::function<httplib::Result()> send;
    int status;
  };
  const std::vector<Probe> probes = {
      {"GET /healthz", [&] { return client_->Get("/healthz"); }, 200},
      {"GET /readyz", [&] { return client_->Get("/readyz"); }, 200},
      {"GET /v1/status", [&] { return client_->Get("/v1/status"); }, 200},
      {"POST /v1/reconcile without the token", [&] { return client_->Post("/v1/reconcile"); }, 401},
      {"GET /v1/selftest", [&] { return client_->Get("/v1/selftest"); }, 405},
      {"GET /v1/state with a body", [&] { return client_->Get("/v1/state", httplib::Headers{{"Content-Length", "3"}}); }, 413},
  };
  for (int round = 0; round < kRounds; ++round) {
    for (const Probe& probe : probes) {
      const auto begin = std::chrono::steady_clock::now();
      auto res = probe.send();
      const auto took = std::chrono::steady_clock::now() - begin;
      ASSERT_TRUE(res) << probe.what << ": " << httplib::to_string(res.error());
      EXPECT_EQ(res->status, probe.status) << probe.what << ": " << res->body;
      EXPECT_LT(took, kProbeBound) << probe.what << " took " << seconds_of(took) << " s behind " << kCrowd
                                   << " slow clients (round " << round << ")";
    }
    std::this_thread::sleep_for(200ms);
  }
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->body, "ok\n");
  EXPECT_EQ(driver_->reconciles.load(), 1);  // the test's own only
}

// More slow clients than the waiting room holds (kMaxWaitingConnections): each newcomer makes the
// longest waiting one leave, with a 503, so a probe (which sends its request at once) still gets
// in and is answered.
TEST_F(HttpApiTest, AFullWaitingRoomTurnsAwayTheLongestWaiting) {
  constexpr size_t kCrowd = kMaxWaitingConnections + 44;
  serve(std::nullopt);
  std::vector<std::unique_ptr<RawConnection>> crowd;
  for (size_t i = 0; i < kCrowd; ++i) {
    crowd.push_back(std::make_unique<RawConnection>(api_->port()));
    ASSERT_TRUE(crowd.back()->connected()) << i;
    ASSERT_TRUE(crowd.back()->send_all("GET /v1/status HTTP/1.1\r\nHost: t\r\n"));
  }
  const auto begin = std::chrono::steady_clock::now();
  auto health = client_->Get("/healthz");
  const auto took = std::chrono::steady_clock::now() - begin;
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(took, kProbeBound) << seconds_of(took) << " s behind " << kCrowd << " half-sent requests";
  // The first one came first and waited longest: turned away, with an answer that says why.
  const std::string answer = crowd.front()->read_until_closed();
  EXPECT_EQ(status_of(answer), 503) << answer;
  EXPECT_NE(answer.find("waited longest"), std::string::npos) << answer;
  EXPECT_TRUE(crowd.front()->closed());
}

// A head or a body that does not arrive whole within kRequestReadDeadline of its first byte: 408,
// and the connection closes, however steadily the bytes trickle in (each one in time for any
// per-read timeout).
TEST_F(HttpApiTest, ARequestThatDoesNotArriveWholeIsAnswered408) {
  serve("0123456789abcdef");
  for (const std::string start : {"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ",
                                  "POST /v1/reconcile HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n"}) {
    RawConnection conn(api_->port());
    ASSERT_TRUE(conn.connected());
    ASSERT_TRUE(conn.send_all(start));
    const auto begin = std::chrono::steady_clock::now();
    std::string answer;
    for (int i = 0; i < 99 && std::chrono::steady_clock::now() - begin < kRequestWait; ++i) {
      pollfd pfd{conn.fd(), POLLIN, 0};
      if (::poll(&pfd, 1, 300) > 0) {
        answer = conn.read_until_closed();
        break;
      }
      if (!conn.send_all("y")) break;
    }
    const auto took = std::chrono::steady_clock::now() - begin;
    EXPECT_EQ(status_of(answer), 408) << start << "\n->\n" << answer;
    EXPECT_TRUE(conn.closed()) << start;
    EXPECT_GE(took, kRequestReadDeadline - 500ms) << start << ": cut off early, at " << seconds_of(took) << " s";
  }
  EXPECT_EQ(driver_->reconciles.load(), 0);
}

// A head over kMaxRequestHead: 431 at once, not a wait for the end of it.
TEST_F(HttpApiTest, AHeadOverTheBoundIsAnswered431) {
  serve(std::nullopt);
  RawConnection conn(api_->port());
  ASSERT_TRUE(conn.connected());
  std::string head = "GET /healthz HTTP/1.1\r\nHost: t\r\n";
  while (head.size() <= kMaxRequestHead) head += "X-Pad: " + std::string(100, 'a') + "\r\n";
  ASSERT_TRUE(conn.send_all(head));
  const std::string answer = conn.read_until_closed();
  EXPECT_EQ(status_of(answer), 431) << answer;
  EXPECT_TRUE(conn.closed());
}

// Keep-alive: a connection serves one request after the other, pipelined ones too (waiting in the
// room between them, not on a worker), up to kKeepAliveMaxRequests, whose answer says
// "Connection: close"; a request with "Connection: close" ends it; an idle one is closed after
// kIdleTimeout.
TEST_F(HttpApiTest, KeepAliveServesOneRequestAfterAnother) {
  serve(std::nullopt);
  agent_->reconcile_once("test");
  {
    RawConnection conn(api_->port());
    ASSERT_TRUE(conn.connected());
    AnswerReader answers(conn);
    ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::string answer = answers.next();
    EXPECT_EQ(status_of(answer), 200) << answer;
    EXPECT_NE(answer.find("Keep-Alive: timeout=1, max=20"), std::string::npos) << answer;
    ASSERT_TRUE(conn.send_all("GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n"));
    answer = answers.next();
    EXPECT_EQ(status_of(answer), 200) << answer;
    EXPECT_NE(answer.find("\"node\": \"n1\""), std::string::npos) << answer;
    // Three at once, a probe among them: answered in order.
    ASSERT_TRUE(conn.send_all("GET /readyz HTTP/1.1\r\nHost: t\r\n\r\nGET /nothing HTTP/1.1\r\nHost: t\r\n\r\n"
                              "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_EQ(status_of(answers.next()), 200);
    EXPECT_EQ(status_of(answers.next()), 404);
    answer = answers.next();
    EXPECT_EQ(status_of(answer), 200);
    EXPECT_NE(answer.find("\r\n\r\nok\n"), std::string::npos) << answer;
    // Up to the 20th request; its answer closes the connection.
    for (size_t i = 6; i < kKeepAliveMaxRequests; ++i) {
      ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
      EXPECT_EQ(status_of(answers.next()), 200) << i;
    }
    ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
    answer = answers.next();
    EXPECT_EQ(status_of(answer), 200);
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
    EXPECT_TRUE(answers.closed());
  }
  {
    RawConnection conn(api_->port());
    AnswerReader answers(conn);
    ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    EXPECT_EQ(status_of(answers.next()), 200);
    EXPECT_TRUE(answers.closed());
  }
  {
    RawConnection conn(api_->port());
    AnswerReader answers(conn);
    ASSERT_TRUE(conn.send_all("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"));
    EXPECT_EQ(status_of(answers.next()), 200);
    const auto begin = std::chrono::steady_clock::now();
    EXPECT_TRUE(answers.closed());
    const auto idle = std::chrono::steady_clock::now() - begin;
    EXPECT_GE(idle, kIdleTimeout - 200ms) << seconds_of(idle) << " s";
  }
  // httplib's own client, keeping its connection: several requests on it.
  client_->set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto res = client_->Get(i % 2 ? "/healthz" : "/v1/status");
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i;
  }
}

// A reconcile that takes long (an apply with verify retries, a self-test) holds the host mutex;
// the probes and the status never wait for it.
class BlockingDriver : public HostDriver {
 public:
  ReconcileOutcome reconcile(const ReconcileRequest&) override {
    std::unique_lock lock(mutex);
    const int call = ++calls;
    if (call > 1) {
      entered = true;
      cv.notify_all();
      cv.wait_for(lock, kRequestWait, [this] { return released; });
    }
    ReconcileOutcome out;
    out.report.node = "n1";
    out.observed = HostState{};
    return out;
  }
  Result<Report> plan(const NodeSpec&) override { return Report{}; }
  nlohmann::json selftest(const NodeSpec*) override { return {{"result", "skipped"}}; }

  std::mutex mutex;
  std::condition_variable cv;
  int calls = 0;
  bool entered = false;
  bool released = false;
};

TEST(HttpApiProbes, DoNotWaitForALongReconcile) {
  test::TempTree tree;
  tree.write("/spec.yaml", "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: t\n");
  AgentSettings settings;
  settings.spec_path = tree.root() + "/spec.yaml";
  settings.node = "n1";
  auto owned = std::make_unique<BlockingDriver>();
  BlockingDriver* driver = owned.get();
  Agent agent(settings, std::move(owned));
  agent.reconcile_once("first");  // quick: /readyz 200 from here on
  ApiSettings api_settings;
  api_settings.listen = {"127.0.0.1", 0};
  auto api = HttpApi::bind(agent, api_settings);
  ASSERT_TRUE(api) << api.error().to_string();
  (*api)->start();
  std::thread slow([&] { agent.reconcile_once("slow"); });
  {
    std::unique_lock lock(driver->mutex);
    ASSERT_TRUE(driver->cv.wait_for(lock, kRequestWait, [&] { return driver->entered; }));
  }
  httplib::Client client("127.0.0.1", (*api)->port());
  client.set_connection_timeout(kRequestWait);
  client.set_read_timeout(kRequestWait);
  for (const char* path : {"/healthz", "/readyz", "/v1/status", "/metrics"}) {
    const auto begin = std::chrono::steady_clock::now();
    auto res = client.Get(path);
    const auto took = std::chrono::steady_clock::now() - begin;
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path << ": " << res->body;
    EXPECT_LT(took, kProbeBound) << path << " took " << seconds_of(took) << " s during a reconcile";
  }
  {
    std::lock_guard lock(driver->mutex);
    driver->released = true;
  }
  driver->cv.notify_all();
  slow.join();
  (*api)->stop();
}

}  // namespace daemon_http_api_test
}  // namespace rdmactl
