// SPDX-License-Identifier: Apache-2.0
// Log lines carry names from the host (a netdev may be named with an escape sequence or a byte
// that is not UTF-8, net/core/dev.c dev_valid_name): the text format escapes them, one record per
// line; the JSON format stays one valid JSON object per line.
#include "agent/core/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "agent/core/text.h"

namespace rdmactl {
namespace core_logging_test {

// Sets NO_COLOR for the test (a terminal on stderr would get colour codes otherwise) and puts
// back the logger the process had.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_logger_ = spdlog::default_logger();
    if (const char* value = std::getenv("NO_COLOR")) previous_no_color_ = value;
    ::setenv("NO_COLOR", "1", 1);
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_logger_);
    if (previous_no_color_) {
      ::setenv("NO_COLOR", previous_no_color_->c_str(), 1);
    } else {
      ::unsetenv("NO_COLOR");
    }
  }

  // What one record logged at info writes to standard error.
  static std::string logged(const std::string& format) {
    EXPECT_TRUE(setup_logging("info", format).has_value());
    ::testing::internal::CaptureStderr();
    spdlog::info("netdev {} is {}", "e\x1b[31m", "x\xffy\ninfo: forged line");
    spdlog::default_logger()->flush();
    return ::testing::internal::GetCapturedStderr();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_logger_;
  std::optional<std::string> previous_no_color_;
};

TEST_F(LoggingTest, TextFormatEscapesControlBytesAndLineFeeds) {
  EXPECT_EQ(logged("text"), "info: netdev e\\x1b[31m is x\\xffy\\ninfo: forged line\n");
}

TEST_F(LoggingTest, JsonFormatIsOneValidObjectPerLine) {
  const std::string out = logged("json");
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "one line: " << escape_lines_for_display(out);
  EXPECT_FALSE(first_invalid_utf8(out)) << escape_lines_for_display(out);
  EXPECT_FALSE(first_control_byte(out.substr(0, out.size() - 1))) << escape_lines_for_display(out);
  const auto line = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(line.is_object()) << escape_lines_for_display(out);
  // The escape sequence survives as JSON's \u001b; the byte that is not UTF-8 becomes U+FFFD.
  EXPECT_EQ(line["msg"], "netdev e\x1b[31m is x\xef\xbf\xbdy\ninfo: forged line");
  EXPECT_EQ(line["level"], "info");
}

TEST_F(LoggingTest, AnUnknownLevelOrFormatIsEchoedEscaped) {
  const auto level = setup_logging("in\x1b[2Jfo", "text");
  ASSERT_FALSE(level.has_value());
  EXPECT_EQ(level.error().message, "unknown log level \"in\\x1b[2Jfo\" (trace, debug, info, warn, error, off)");
  const auto format = setup_logging("info", "te\x07xt");
  ASSERT_FALSE(format.has_value());
  EXPECT_EQ(format.error().message, "unknown log format \"te\\x07xt\" (text, json)");
}

}  // namespace core_logging_test
}  // namespace rdmactl
