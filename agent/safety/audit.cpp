// SPDX-License-Identifier: Apache-2.0
// The audit log (see audit.h).
#include "agent/safety/audit.h"
#include "agent/core/digest.h"
#include "agent/core/json_text.h"
#include "agent/core/utc_time.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agent/platform/own_files.h"

namespace rdmactl {
namespace {

constexpr const char* kAuditDirectory = "/var/log/rdmactl";
constexpr const char* kAuditFile = "audit.jsonl";

}  // namespace

AuditLog::AuditLog(const HostFs& fs, std::string node, std::string who, std::string command)
    : fs_(fs), node_(std::move(node)), who_(std::move(who)), command_(std::move(command)) {}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AuditLog::record(const Change& change, std::string_view action, const Result<void>& result,
                      std::string_view detail) const {
  nlohmann::json line = {{"time", iso8601_now()},          {"node", node_},
                         {"resource", change.resource},    {"field", change.field},
                         {"old", change.current},          {"new", change.desired},
                         {"action", std::string(action)},  {"result", result ? std::string("ok") : result.error().to_string()},
                         {"who", who_}};
  if (!detail.empty()) line["detail"] = std::string(detail);
  if (!command_.empty()) line["command"] = command_;
  // Replacement characters instead of an exception for bytes that are not UTF-8 in a value.
  const std::string text = json_text(line) + "\n";
  const std::string dir = fs_.path(kAuditDirectory);
  const std::string path = dir + "/" + kAuditFile;
  if (fd_ < 0 && !open_failed_) {
    // Not through a link planted in its place (own_files.h).
    auto opened = open_own_file(dir, kAuditFile, O_WRONLY | O_CREAT | O_APPEND, 0640, 0750);
    if (opened) {
      fd_ = opened->release();
    } else {
      open_failed_ = true;  // said once, not once a line
      spdlog::warn("audit log: {}", opened.error().to_string());
    }
  }
  // One write(2) of the whole line: O_APPEND keeps concurrent lines whole.
  if (fd_ >= 0 && ::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    spdlog::warn("audit log {}: cannot append: {}", path, std::strerror(errno));
  }
  // Under systemd (a service's stderr is the journal), the same line goes to the journal.
  if (std::getenv("INVOCATION_ID") != nullptr || std::getenv("JOURNAL_STREAM") != nullptr) {
    spdlog::info("audit {}", text.substr(0, text.size() - 1));
  }
}

std::string cli_user() {
  if (const char* sudo = std::getenv("SUDO_USER"); sudo != nullptr && *sudo != '\0') return std::string("cli:") + sudo;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr) return std::string("cli:") + pw->pw_name;
  return "cli:uid " + std::to_string(::geteuid());
}

std::string token_fingerprint(std::string_view token) {
  return "token:" + sha256_hex(token).substr(0, 8);
}

}  // namespace rdmactl
