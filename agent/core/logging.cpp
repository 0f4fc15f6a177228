// SPDX-License-Identifier: Apache-2.0
// spdlog to stderr; the JSON format writes one object per line, escaped by nlohmann-json, so that
// log shippers (journald, Fluent Bit, Loki) can parse it. The text format escapes the message
// (escape_for_display): messages carry names from the host (netdevs, namespaces, sysctl values)
// that may hold any bytes, and a terminal or `journalctl` would act on an escape sequence.
#include "agent/core/logging.h"
#include "agent/core/json_text.h"
#include "agent/core/text.h"

#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

namespace rdmactl {
namespace {

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
    const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                  static_cast<int>(millis % 1000));
    const nlohmann::json line = {
        {"time", stamp},
        {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                              spdlog::level::to_string_view(msg.level).size())},
        {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    const std::string text = json_text(line) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// The text format's %* : the message with control characters and bytes that are not UTF-8 escaped,
// line feeds too, so that one record is one line whatever a message carries. One flag of the
// pattern, rather than every call site escaping its arguments, so that no message is missed.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = escape_for_display(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

}  // namespace

Result<void> setup_logging(const std::string& level, const std::string& format) {
  const auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return make_error(ErrorKind::kUsage, "unknown log level \"" + escape_for_display(level) +
                                             "\" (trace, debug, info, warn, error, off)");
  }
  if (format != "text" && format != "json") {
    return make_error(ErrorKind::kUsage, "unknown log format \"" + escape_for_display(format) + "\" (text, json)");
  }
  spdlog::drop("rdmactl");
  // https://no-color.org: NO_COLOR set and not empty turns colour off; otherwise spdlog colours
  // only a terminal.
  const char* no_color = std::getenv("NO_COLOR");
  auto logger = spdlog::stderr_color_mt(
      "rdmactl", no_color && *no_color ? spdlog::color_mode::never : spdlog::color_mode::automatic);
  if (format == "json") {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('*').set_pattern("%^%l%$: %*");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return ok();
}

}  // namespace rdmactl
