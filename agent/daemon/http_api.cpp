// SPDX-License-Identifier: Apache-2.0
// The agent's HTTP API on cpp-httplib (see http_api.h): its endpoints and their checks. How
// connections are held and served is ApiServer's (http_server.h).
//
// Debian builds cpp-httplib as a shared library with OpenSSL, zlib and brotli support; its
// pkg-config Cflags define the matching CPPHTTPLIB_* macros, which CMake passes to every file that
// includes <httplib.h> so the class layouts agree with the library's.
#include "agent/daemon/http_api.h"

#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"
#include "agent/core/text.h"
#include "agent/fleet/fleet.h"
#include "agent/report/format.h"
#include "agent/safety/audit.h"

namespace rdmactl {
namespace {

constexpr const char* kJson = "application/json";
// Prometheus text exposition format 0.0.4.
constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::chrono::seconds kStartDeadline{5};

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body, 2) + "\n", kJson);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", message}});
}

// The endpoints and the methods each takes (HEAD with GET, as cpp-httplib serves it).
struct Endpoint {
  const char* path;
  const char* method;
};
constexpr std::array<Endpoint, 8> kEndpoints{{{"/healthz", "GET"},
                                              {"/readyz", "GET"},
                                              {"/metrics", "GET"},
                                              {"/v1/status", "GET"},
                                              {"/v1/plan", "GET"},
                                              {"/v1/state", "GET"},
                                              {"/v1/reconcile", "POST"},
                                              {"/v1/selftest", "POST"}}};

// A refusal before routing: the connection closes after it when a body was announced (unread).
httplib::Server::HandlerResponse refuse(httplib::Response& res, int status, const std::string& message,
                                       bool close) {
  send_error(res, status, message);
  if (close) {
    res.set_header("Connection", "close");
    ApiServer::close_after_answer();
  }
  return httplib::Server::HandlerResponse::Handled;
}

// Checks what cpp-httplib 0.11 does not before a handler runs and any body is read: the path and
// method (404, 405 with Allow), and the body as announced (GET and HEAD take none; a
// Content-Length over kMaxRequestBody; a Transfer-Encoding other than chunked, or with a
// Content-Length, is how requests are smuggled past proxies: 400). A chunked body is counted as it
// is read (discard_body).
httplib::Server::HandlerResponse check_request(const httplib::Request& req, httplib::Response& res) {
  const bool has_length = req.has_header("Content-Length");
  const bool has_encoding = req.has_header("Transfer-Encoding");
  const bool announced = has_length || has_encoding;
  const auto endpoint = std::find_if(kEndpoints.begin(), kEndpoints.end(),
                                     [&](const Endpoint& e) { return req.path == e.path; });
  if (endpoint == kEndpoints.end()) {
    return refuse(res, 404, "no such endpoint: " + req.method + " " + req.path, announced);
  }
  const bool get = std::string_view(endpoint->method) == "GET";
  if (req.method != endpoint->method && !(get && req.method == "HEAD")) {
    res.set_header("Allow", get ? "GET, HEAD" : "POST");
    return refuse(res, 405, req.method + " is not allowed on " + req.path + " (" + endpoint->method + ")", announced);
  }
  uint64_t length = 0;
  if (has_length) {
    const std::string text = req.get_header_value("Content-Length");
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
    if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size() ||
        req.get_header_value_count("Content-Length") != 1) {
      return refuse(res, 400, "bad Content-Length", true);
    }
    if (ec == std::errc::result_out_of_range) length = UINT64_MAX;
  }
  if (has_encoding && (has_length || req.get_header_value_count("Transfer-Encoding") != 1 ||
                       !equal_ignoring_case(req.get_header_value("Transfer-Encoding"), "chunked"))) {
    return refuse(res, 400, "only Transfer-Encoding: chunked, without Content-Length, is taken", true);
  }
  if (get && (has_encoding || length > 0)) {
    return refuse(res, 413, req.method + " takes no request body", true);
  }
  if (length > kMaxRequestBody) {
    return refuse(res, 413, "request body over " + std::to_string(kMaxRequestBody) + " bytes", true);
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// The server's bounds, socket options and the handlers of what no route answers.
void configure(httplib::Server& s) {
  // The bounds of http_server.h, as httplib knows them: ApiServer applies its own deadlines and
  // budgets; httplib sends the keep-alive pair in each answer's Keep-Alive header, ApiServer closes
  // a connection after keep_alive_max_count requests, and both bound a body by the payload length
  // (ApiServer in what its waiting room reads, httplib in its own check of a Content-Length).
  s.set_keep_alive_timeout(kIdleTimeout.count());
  s.set_keep_alive_max_count(kKeepAliveMaxRequests);
  s.set_read_timeout(kRequestReadTimeout);
  s.set_write_timeout(kResponseWriteTimeout);
  s.set_payload_max_length(kMaxRequestBody);
  s.set_pre_routing_handler(check_request);
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
  // Errors that httplib answers itself (a request it cannot parse: 400) get a JSON body like every
  // other answer.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404, "no such endpoint: " + req.method + " " + req.path);
    } else {
      send_error(res, res.status, "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.path);
    }
  });
}

}  // namespace

HttpApi::HttpApi(Agent& agent, ApiSettings settings)
    : agent_(agent), settings_(std::move(settings)), server_(std::make_unique<ApiServer>()) {}

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
    if (auto started = api->server_->start_rooms(); !started) return started.error();
    if (!api->server_->widen_backlog()) {
      spdlog::warn("HTTP API: cannot raise the listen backlog to {}: {}", kListenBacklog, std::strerror(errno));
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
  configure(*server_);
  probe_routes();
  report_routes();
  action_routes();
}

// /healthz and /readyz (the probes), /metrics and /v1/status: snapshots of the agent.
void HttpApi::probe_routes() {
  httplib::Server& s = *server_;
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
}

// /v1/plan (a fresh plan) and /v1/state (the host as last observed).
void HttpApi::report_routes() {
  httplib::Server& s = *server_;
  // ?format=json (the default), text, yaml, junit or prom renders the plan as `rdmactl plan`
  // does; ?format=fleet answers a FleetPlan of this one node, the shape of `plan --states`.
  s.Get("/v1/plan", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "json";
    std::optional<Format> rendered;
    if (format != "fleet") {
      auto parsed = parse_format(format);
      if (!parsed) {
        send_error(res, 400, "format: " + parsed.error().message + "; or fleet");
        return;
      }
      rendered = *parsed;
    }
    FabricSpec spec;
    std::optional<HostState> observed;
    auto report = agent_.plan_now(&spec, &observed);
    if (!report) {
      send_json(res, report.error().kind == ErrorKind::kInvalidSpec ? 409 : 500,
                {{"error", report.error().to_string()}});
      return;
    }
    if (!rendered) {
      FleetReport fleet;
      fleet.states_dir = "(serve: this node, live)";
      FleetNode node;
      node.node = report->node;
      const NodeSpec merged = merge_for_node(spec, node.node);
      FleetChecker checker;
      checker.add({node.node, &merged, observed ? &*observed : nullptr});
      node.take_plan(std::move(*report));
      fleet.nodes.push_back(std::move(node));
      finish_fleet(spec, fleet, checker);
      send_json(res, 200, to_json(fleet));
      return;
    }
    if (*rendered == Format::kJson) {
      send_json(res, 200, to_json(*report));
    } else {
      res.status = 200;
      res.set_content(*rendered == Format::kProm ? render_prom(*report, nullptr) : render_report(*report, *rendered),
                      *rendered == Format::kProm ? kPromText : *rendered == Format::kJunit ? "application/xml" : "text/plain");
    }
  });
  s.Get("/v1/state", [this](const httplib::Request&, httplib::Response& res) {
    auto state = agent_.last_observed();
    if (!state) {
      send_error(res, 503, "the host has not been observed yet");
      return;
    }
    send_json(res, 200, to_json(*state));
  });
}

void HttpApi::action_routes() {
  httplib::Server& s = *server_;
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
  // that was announced is read, so that a kept-alive connection's next request parses. A chunked
  // body, which httplib 0.11 does not bound, stops at kMaxRequestBody: 413, and the connection
  // closes. false: answered already.
  auto discard_body = [](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) return true;
    size_t total = 0;
    const bool read = reader([&total](const char*, size_t n) {
      total += n;
      return total <= kMaxRequestBody;
    });
    if (read) return true;
    refuse(res, total > kMaxRequestBody ? 413 : 400,
           total > kMaxRequestBody ? "request body over " + std::to_string(kMaxRequestBody) + " bytes"
                                   : "the request body did not arrive whole",
           true);
    return false;
  };
  s.Post("/v1/reconcile", [this, authorised, discard_body](const httplib::Request& req, httplib::Response& res,
                                                           const httplib::ContentReader& reader) {
    if (!discard_body(req, res, reader)) return;
    if (!authorised(req, res)) return;
    agent_.request_reconcile("POST /v1/reconcile from " + req.remote_addr + " " + token_fingerprint(*settings_.token));
    send_json(res, 202, {{"queued", true}});
  });
  s.Post("/v1/selftest", [this, authorised, discard_body](const httplib::Request& req, httplib::Response& res,
                                                          const httplib::ContentReader& reader) {
    if (!discard_body(req, res, reader)) return;
    if (!authorised(req, res)) return;
    send_json(res, 200, agent_.selftest_now());
  });
}

}  // namespace rdmactl
