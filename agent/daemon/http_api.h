// The agent's HTTP API (CONTRACT.md, "The agent's HTTP API"): probes, Prometheus metrics, status,
// a fresh plan, the observed state, and two authenticated actions (reconcile, self-test).
//
// cpp-httplib serves it on its own thread pool; handlers only read the Agent's snapshots or ask it
// for work, so the API never blocks a reconcile and a reconcile never blocks /healthz. cpp-httplib
// may throw (std::bad_alloc, a std::system_error from a thread); that is caught here, at the
// boundary, and becomes a 500 or an Error.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "agent/core/result.h"
#include "agent/daemon/agent.h"

namespace httplib {
class Server;
}

namespace rdmactl {

constexpr const char* kDefaultApiHost = "127.0.0.1";
constexpr int kDefaultApiPort = 9473;

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "ADDR:PORT", "ADDR" (port 9473), ":PORT" (127.0.0.1), "[v6addr]:PORT".
Result<ListenAddress> parse_listen_address(const std::string& text);

// The token of --token-file, surrounding whitespace trimmed. An unreadable or empty file is an
// error: an agent that cannot check tokens must not start with its actions open or closed by surprise.
Result<std::string> read_token_file(const std::string& path);

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

  Agent& agent_;
  ApiSettings settings_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
};

}  // namespace rdmactl
