// The agent's HTTP API on cpp-httplib (see http_api.h).
//
// Debian builds cpp-httplib as a shared library with OpenSSL, zlib and brotli support; its
// pkg-config Cflags define the matching CPPHTTPLIB_* macros, which CMake passes to every file that
// includes <httplib.h> so the class layouts agree with the library's.
#include "agent/daemon/http_api.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cctype>
#include <exception>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "agent/report/format.h"

namespace rdmactl {
namespace {

constexpr const char* kJson = "application/json";
// Prometheus text exposition format 0.0.4.
constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
// Short: stop() waits for connections kept alive, and serve promises to stop within about a second.
constexpr time_t kKeepAliveSeconds = 1;
constexpr std::chrono::seconds kStartDeadline{5};

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", kJson);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", message}});
}

std::string trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

}  // namespace

Result<ListenAddress> parse_listen_address(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, "\"" + text + "\": " + why + " (ADDR:PORT, e.g. 127.0.0.1:9473)",
                      "--listen");
  };
  ListenAddress out{kDefaultApiHost, kDefaultApiPort};
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return bad("unclosed [");
    out.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("expected :PORT after ]");
      port = text.substr(close + 2);
    }
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (text.find(':') != colon) return bad("an IPv6 address goes in brackets");
    if (colon > 0) out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  } else {
    out.host = text;
  }
  if (out.host.empty()) return bad("empty address");
  if (!port.empty() || text.back() == ':') {
    if (port.empty() || port.size() > 5) return bad("bad port");
    int value = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return bad("bad port");
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) return bad("port out of range 1-65535");
    out.port = value;
  }
  return out;
}

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_errno_error("read the token file", errno, path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string token = trim(bytes.str());
  if (token.empty()) return make_error(ErrorKind::kUsage, "the token file is empty", path);
  return token;
}

bool bearer_token_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (token.empty() || authorization.size() != kScheme.size() + token.size()) return false;
  // The scheme is case-insensitive (RFC 7235); the token is compared without an early exit.
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != std::tolower(static_cast<unsigned char>(kScheme[i]))) {
      return false;
    }
  }
  unsigned char diff = 0;
  const std::string_view given = authorization.substr(kScheme.size());
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i]);
  return diff == 0;
}

HttpApi::HttpApi(Agent& agent, ApiSettings settings)
    : agent_(agent), settings_(std::move(settings)), server_(std::make_unique<httplib::Server>()) {}

HttpApi::~HttpApi() { stop(); }

Result<std::unique_ptr<HttpApi>> HttpApi::bind(Agent& agent, ApiSettings settings) {
  try {
    std::unique_ptr<HttpApi> api(new HttpApi(agent, std::move(settings)));
    api->routes();
    const ListenAddress& at = api->settings_.listen;
    if (at.port == 0) {
      api->port_ = api->server_->bind_to_any_port(at.host);
      if (api->port_ < 0) return make_error(ErrorKind::kPlatform, "cannot listen", at.host);
    } else if (!api->server_->bind_to_port(at.host, at.port)) {
      return make_error(ErrorKind::kPlatform, "cannot listen (address in use, or not on this host)",
                        at.host + ":" + std::to_string(at.port));
    } else {
      api->port_ = at.port;
    }
    return api;
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kPlatform, std::string("HTTP server: ") + e.what(), "--listen");
  }
}

void HttpApi::start() {
  thread_ = std::thread([this] {
    try {
      server_->listen_after_bind();
    } catch (const std::exception& e) {
      spdlog::error("HTTP API stopped: {}", e.what());
    }
    listen_returned_.store(true);
  });
  // cpp-httplib's stop() does nothing until the server runs, so a stop() that came before the
  // thread entered listen would leave it listening and the join waiting forever: return only once
  // it runs (or has already given up).
  const auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
  while (!server_->is_running() && !listen_returned_.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void HttpApi::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpApi::routes() {
  httplib::Server& s = *server_;
  s.set_keep_alive_timeout(kKeepAliveSeconds);
  // cpp-httplib's default sets SO_REUSEPORT, with which a second agent binds the same port and the
  // kernel splits connections between the two. SO_REUSEADDR only: a restart still rebinds at
  // once (TIME_WAIT), a second instance fails to start.
  s.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("HTTP API: {}", what);
    send_error(res, 500, what);
  });
  // Unknown paths (and wrong methods) get a JSON body like every other answer.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404, "no such endpoint: " + req.method + " " + req.path);
    } else {
      send_error(res, res.status, "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path);
    }
  });

  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::string reason;
    if (agent_.ready(&reason)) {
      send_json(res, 200, {{"ready", true}});
    } else {
      send_json(res, 503, {{"ready", false}, {"reason", reason}});
    }
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(agent_.metrics_text(), kPromText);
  });
  s.Get("/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, agent_.status_json());
  });
  s.Get("/v1/plan", [this](const httplib::Request&, httplib::Response& res) {
    auto report = agent_.plan_now();
    if (!report) {
      send_json(res, report.error().kind == ErrorKind::kInvalidSpec ? 409 : 500,
                {{"error", report.error().to_string()}});
      return;
    }
    send_json(res, 200, to_json(*report));
  });
  s.Get("/v1/state", [this](const httplib::Request&, httplib::Response& res) {
    auto state = agent_.last_observed();
    if (!state) {
      send_error(res, 503, "the host has not been observed yet");
      return;
    }
    send_json(res, 200, to_json(*state));
  });

  // The two actions: authorised by the bearer token, or refused outright without a token file.
  auto authorised = [this](const httplib::Request& req, httplib::Response& res) {
    if (!settings_.token) {
      send_error(res, 403, "no --token-file configured");
      return false;
    }
    if (!bearer_token_matches(req.get_header_value("Authorization"), *settings_.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "missing or wrong bearer token");
      return false;
    }
    return true;
  };
  // Handlers with a ContentReader, because for plain handlers cpp-httplib 0.11 answers 400 to a
  // POST without Content-Length, which is what `curl -X POST` sends. The bodies are unused; one
  // that was announced is read, so that a kept-alive connection's next request parses.
  auto discard_body = [](const httplib::Request& req, const httplib::ContentReader& reader) {
    if (req.has_header("Content-Length") || req.get_header_value("Transfer-Encoding") == "chunked") {
      reader([](const char*, size_t) { return true; });
    }
  };
  s.Post("/v1/reconcile", [this, authorised, discard_body](const httplib::Request& req, httplib::Response& res,
                                                           const httplib::ContentReader& reader) {
    discard_body(req, reader);
    if (!authorised(req, res)) return;
    agent_.request_reconcile("POST /v1/reconcile from " + req.remote_addr);
    send_json(res, 202, {{"queued", true}});
  });
  s.Post("/v1/selftest", [this, authorised, discard_body](const httplib::Request& req, httplib::Response& res,
                                                          const httplib::ContentReader& reader) {
    discard_body(req, reader);
    if (!authorised(req, res)) return;
    send_json(res, 200, agent_.selftest_now());
  });
}

}  // namespace rdmactl
