// SPDX-License-Identifier: Apache-2.0
// The agent's HTTP API (docs/agent.md): probes, Prometheus metrics, status,
// a fresh plan, the observed state, and two authenticated actions (reconcile, self-test).
//
// Handlers only read the Agent's snapshots or ask it for work, so the API never blocks a reconcile
// and a reconcile never blocks /healthz or /readyz (Agent::ready takes only the status mutex, which
// no reconcile holds while it works). cpp-httplib may throw (std::bad_alloc, a std::system_error
// from a thread); that is caught here, at the boundary, and becomes a 500 or an Error.
//
// Hostile or broken clients are bounded. The connections (http_server.h): a request's line and
// headers (431), the time to send them and the body (408), the connections waiting for their
// request, the workers, and a lane of its own for the probes, so that slow clients cannot hold
// /healthz back. The requests (here): every known path answers other methods 405 with Allow;
// unknown paths 404; bodies are refused from what the head announces, before any is read (413).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "agent/core/result.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/http_server.h"

namespace rdmactl {

constexpr const char* kDefaultApiHost = "127.0.0.1";
constexpr int kDefaultApiPort = 9473;

// The POST bodies are unused: a small bound is no limit on use.
constexpr size_t kMaxRequestBody = 64 * 1024;
// A bearer token guessable in a lifetime is no guard: at least this many bytes (openssl rand -hex 32
// gives 64); and a file this long is not a token.
constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenFileBytes = 4096;

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "ADDR:PORT", "ADDR" (port 9473), ":PORT" (127.0.0.1), "[v6addr]:PORT".
Result<ListenAddress> parse_listen_address(const std::string& text);

// Whether `host` (an address, or a name that resolves only to such addresses) is loopback:
// 127.0.0.0/8, ::1, ::ffff:127.x.y.z. 0.0.0.0, :: and every other address are not.
bool is_loopback_host(const std::string& host);

// The token of --token-file, surrounding whitespace trimmed. An unreadable or empty file is an
// error: an agent that cannot check tokens must not start with its actions open or closed by surprise.
// So are (kUsage) a token shorter than kMinTokenBytes or with spaces or control characters inside,
// and a file that group or others may read or write (mode & 077), unless `insecure` (then a warning).
Result<std::string> read_token_file(const std::string& path, bool insecure = false);

// Whether an Authorization header carries exactly "Bearer <token>". The token comparison takes the
// same time wherever the first difference is.
bool bearer_token_matches(std::string_view authorization, std::string_view token);

struct ApiSettings {
  ListenAddress listen{kDefaultApiHost, kDefaultApiPort};
  std::optional<std::string> token;  // without one, the POST endpoints answer 403
};

class HttpApi {
 public:
  // Binds the socket now (so a busy port fails start-up, not a thread later); serve with start().
  static Result<std::unique_ptr<HttpApi>> bind(Agent& agent, ApiSettings settings);
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;
  ~HttpApi();  // stops and joins

  void start();
  void stop();
  int port() const { return port_; }

 private:
  HttpApi(Agent& agent, ApiSettings settings);
  void routes();
  void probe_routes();
  void report_routes();
  // The two actions: POST /v1/reconcile and /v1/selftest.
  void action_routes();

  Agent& agent_;
  ApiSettings settings_;
  std::unique_ptr<ApiServer> server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
};

}  // namespace rdmactl
