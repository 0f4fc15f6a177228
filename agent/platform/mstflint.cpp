// SPDX-License-Identifier: Apache-2.0
// mstflint and mstfwreset: output parsers and the tool wrappers (see mstflint.h).
#include "agent/platform/mstflint.h"

#include <csignal>

#include <algorithm>
#include <cctype>
#include <vector>

#include "agent/core/text.h"
#include "agent/platform/command.h"

namespace rdmactl {
namespace {

std::string_view trim_mstflint(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view trim_mstflint_right(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The output's lines without their "\n" or "\r\n".
std::vector<std::string_view> mstflint_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// The first word of a UID value ("e09d730300126744        16"), lower case; "" for "N/A", for zero
// (PRINT_FS3_OR_NEWER_UID prints N/A for a zero UID) and for anything but hex digits.
std::string uid_hex(std::string_view value) {
  value = value.substr(0, value.find_first_of(" \t"));
  std::string out;
  for (char c : value) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.find_first_not_of('0') == std::string::npos) return "";
  return out;
}

std::string quote(std::string_view line) { return "\"" + std::string(line) + "\""; }

// "Writing Boot image component" and the FS3/FS2 burn callbacks' stage names: the stages whose
// percent is the burn's.
bool is_burn_stage(std::string_view stage) {
  if (stage.rfind("Writing ", 0) == 0 && stage.size() >= 10 && stage.substr(stage.size() - 10) == " component") {
    return true;
  }
  return stage == "Burning FW image without signatures" || stage == "Burning FS2 FW image without signatures";
}

// Runs argv; kNotFound gets the install hint for `tool`.
Result<CommandResult> run_tool(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                               const OutputHandler& on_output = nullptr, const FirmwareToolGuard& guard = {},
                               int deadline_signal = SIGKILL, std::chrono::milliseconds grace = {}) {
  CommandOptions options;
  options.deadline = deadline;
  options.deadline_signal = deadline_signal;
  options.deadline_grace = grace;
  options.on_output = on_output;
  for (const int fd : {guard.lock_fd, guard.image_fd}) {
    if (fd >= 0) options.inherit_fds.push_back(fd);
  }
  options.on_started = guard.on_started;
  // A tool that writes the adapter runs to its end, rdmactl alive or not (the lock it inherited
  // keeps every other run off the adapter until then).
  options.output_to_files = guard.lock_fd >= 0;
  auto result = run_command_with(argv, options);
  if (!result) {
    Error e = result.error();
    if (e.kind == ErrorKind::kNotFound) e.message = mstflint_missing(argv[0]);
    return e;
  }
  return result;
}

// A tool that exited non-zero: its -E- text when it printed one (after the command when
// `name_command`), else command_failed.
Error tool_failed(const std::vector<std::string>& argv, const CommandResult& result, const std::string& where,
                  bool name_command) {
  std::string text = tool_error_text(result.out);
  if (text.empty()) text = tool_error_text(result.err);
  if (text.empty()) {
    Error e = command_failed(argv, result);
    e.where = where;
    return e;
  }
  return make_error(ErrorKind::kPlatform, name_command ? describe_command(argv) + ": " + text : text, where);
}

// Runs a tool that changes the device (burn, reset): errors name `pci`, a non-zero exit is
// tool_failed's.
Result<void> run_change(const std::vector<std::string>& argv, const std::string& pci,
                        std::chrono::milliseconds deadline, const OutputHandler& on_output,
                        const FirmwareToolGuard& guard, int deadline_signal = SIGKILL,
                        std::chrono::milliseconds grace = {}) {
  if (guard.before_start) guard.before_start(argv);
  auto result = run_tool(argv, deadline, on_output, guard, deadline_signal, grace);
  if (!result) {
    Error e = result.error();
    e.where = pci;
    return e;
  }
  if (result->exit_code != 0) return tool_failed(argv, *result, pci, false);
  return ok();
}

}  // namespace

std::string tool_error_text(std::string_view output) {
  std::string text;
  bool in_error = false;
  for (std::string_view line : mstflint_lines(output)) {
    const std::string_view t = trim_mstflint(line);
    // Anywhere in the line: reportErr prints "-E- " with no newline before it, so after a progress
    // update ("\rWriting Boot image component -  45%") the error continues that line
    // (flint/subcommands.cpp SubCommand::reportErr, SubCommand::advProgressFunc).
    if (const size_t at = t.find("-E-"); at != std::string_view::npos) {
      if (!text.empty()) text += ' ';
      text += trim_mstflint(t.substr(at + 3));
      in_error = true;
    } else if (in_error && !t.empty() && t[0] != '-') {
      // A continuation: mstfwreset's "...directory\n." reads "...directory.".
      if (!(t[0] == '.' || t[0] == ',' || t[0] == ';' || t[0] == ':')) text += ' ';
      text += t;
    } else {
      in_error = false;
    }
  }
  return text;
}

Result<FlintQuery> parse_flint_query(std::string_view text) {
  if (const std::string error = tool_error_text(text); !error.empty()) {
    return make_error(ErrorKind::kPlatform, "mstflint: -E- " + error);
  }
  FlintQuery query;
  bool have_version = false;
  // printInfo: printf("Key:   ...   %s\n"), the key and its padding 23 characters wide. Split on the
  // first ':' followed by whitespace rather than at column 24, so that a key longer than its column
  // cannot shift a value; "Rom Info" continues on lines that start with spaces, which have no key.
  for (std::string_view line : mstflint_lines(text)) {
    if (line.empty() || std::isspace(static_cast<unsigned char>(line.front()))) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim_mstflint(line.substr(0, colon));
    const std::string value(trim_mstflint(line.substr(colon + 1)));
    if (key == "Image type") {
      query.image_type = value;
    } else if (key == "FW Version") {
      if (!have_version) query.fw_version = value;
      have_version = true;
    } else if (key == "FW Version(Running)") {
      query.running_version = value;
    } else if (key == "Product Version") {
      query.product_version = value;
    } else if (key == "PSID") {
      query.psid = value;
    } else if (key == "Security Attributes") {
      query.security = value;
    } else if (key == "Base GUID" || key == "Base MAC" || key == "Orig Base GUID" || key == "Orig Base MAC") {
      // PRINT_FS3_OR_NEWER_UID: the UID in hex ("%016llx" for a GUID, "%012llx" for a MAC) or "N/A",
      // then the number allocated. The legacy layout's "Base GUID1:"/"Base MAC1:" (ConnectX-4's
      // cib_uids) is not read: rdmactl burns FW-controlled adapters only.
      const std::string uid = uid_hex(value);
      if (key == "Base GUID") query.base_guid = uid;
      if (key == "Base MAC") query.base_mac = uid;
      if (key == "Orig Base GUID") query.orig_base_guid = uid;
      if (key == "Orig Base MAC") query.orig_base_mac = uid;
    }
  }
  if (!have_version || query.fw_version.empty()) {
    return make_error(ErrorKind::kPlatform, "unexpected mstflint query output: no \"FW Version:\" line");
  }
  return query;
}

const FwResetLevel* FwResetQuery::find(int level) const {
  for (const FwResetLevel& l : levels) {
    if (l.level == level) return &l;
  }
  return nullptr;
}

std::optional<int> FwResetQuery::default_level() const {
  for (const FwResetLevel& l : levels) {
    if (l.is_default) return l.level;
  }
  return std::nullopt;
}

Result<FwResetQuery> parse_mstfwreset_query(std::string_view text) {
  if (const std::string error = tool_error_text(text); !error.empty()) {
    return make_error(ErrorKind::kPlatform, "mstfwreset: -E- " + error);
  }
  const std::vector<std::string_view> lines = mstflint_lines(text);
  size_t i = 0;
  while (i < lines.size() && trim_mstflint(lines[i]) != "Reset-levels:") ++i;
  if (i == lines.size()) {
    return make_error(ErrorKind::kPlatform, "unexpected mstfwreset output: no Reset-levels section");
  }
  FwResetQuery query;
  // cmd_reg_mfrl.py query_text: "{0}: {1:<62}-{2:<14}{3}\n" (level, description, "Supported" or
  // "Not Supported", "(default)" or ""). Read from the right: descriptions contain '-' ("live-Patch").
  for (++i; i < lines.size(); ++i) {
    std::string_view row = trim_mstflint(lines[i]);
    if (row.empty()) break;  // the section ends at its blank line; Reset-types follows
    auto bad = [&] {
      return make_error(ErrorKind::kPlatform, "unexpected mstfwreset output: line " + std::to_string(i + 1) + " " +
                                                  quote(lines[i]) +
                                                  ": expected \"N: description -Supported|-Not Supported\"");
    };
    FwResetLevel level;
    const size_t colon = row.find(':');
    if (colon == std::string_view::npos || !all_digits(row.substr(0, colon)) || colon > 3) return bad();
    level.level = std::stoi(std::string(row.substr(0, colon)));
    std::string_view rest = row.substr(colon + 1);
    constexpr std::string_view kDefault = "(default)";
    if (rest.size() >= kDefault.size() && rest.substr(rest.size() - kDefault.size()) == kDefault) {
      level.is_default = true;
      rest = trim_mstflint_right(rest.substr(0, rest.size() - kDefault.size()));
    }
    const size_t dash = rest.rfind('-');
    if (dash == std::string_view::npos) return bad();
    const std::string_view status = trim_mstflint(rest.substr(dash + 1));
    if (status == "Supported") {
      level.supported = true;
    } else if (status != "Not Supported" && status != "Not supported") {
      return bad();
    }
    level.description = std::string(trim_mstflint(rest.substr(0, dash)));
    if (level.description.empty()) return bad();
    query.levels.push_back(std::move(level));
  }
  if (query.levels.empty()) {
    return make_error(ErrorKind::kPlatform, "unexpected mstfwreset output: the Reset-levels section is empty");
  }
  // cmd_reg_mcam.py reset_sync_query_text: "Reset-sync (relevant only for reset-level 3):", row 0
  // "Tool is the owner" (always "Supported"), row 1 "Driver is the owner", "Supported" or "Not
  // supported" (lower case s, unlike the levels' "Not Supported").
  for (; i < lines.size(); ++i) {
    if (trim_mstflint(lines[i]).rfind("Reset-sync", 0) != 0) continue;
    for (++i; i < lines.size(); ++i) {
      const std::string_view row = trim_mstflint(lines[i]);
      if (row.empty()) break;
      if (row.rfind("1:", 0) != 0 || row.find("Driver is the owner") == std::string_view::npos) continue;
      const size_t dash = row.rfind('-');
      const std::string_view status = dash == std::string_view::npos ? "" : trim_mstflint(row.substr(dash + 1));
      // "Supported", or in later releases "Supported (default)" (cmd_reg_mcam.py master
      // reset_sync_query_text marks the default owner); "Not supported" / "Not Supported" are not.
      query.driver_sync = status.rfind("Supported", 0) == 0;
    }
    break;
  }
  return query;
}

FlintProgressReader::FlintProgressReader(std::function<void(int)> on_percent) : on_percent_(std::move(on_percent)) {}

void FlintProgressReader::feed(std::string_view chunk) {
  for (char c : chunk) {
    if (c == '\r' || c == '\n') {
      on_segment_end();
      segment_.clear();
      continue;
    }
    segment_ += c;
    if (c != '%') continue;
    // advProgressFunc: "\r%s - %3d%%", burnCbFs3Func through CbCommon: "\r%s%3d%%" after "... - ".
    // The '%' ends the update, so it is reported before the next "\r" arrives.
    std::string_view s(segment_);
    s.remove_suffix(1);
    size_t digits = 0;
    while (digits < s.size() && digits < 3 && std::isdigit(static_cast<unsigned char>(s[s.size() - 1 - digits]))) {
      ++digits;
    }
    if (digits == 0) continue;
    const int percent = std::stoi(std::string(s.substr(s.size() - digits)));
    s.remove_suffix(digits);
    s = trim_mstflint_right(s);
    if (s.empty() || s.back() != '-') continue;
    s.remove_suffix(1);
    if (!is_burn_stage(trim_mstflint_right(s)) || percent > 100) continue;
    if (percent != last_ && on_percent_) on_percent_(percent);
    last_ = percent;
  }
}

void FlintProgressReader::on_segment_end() {
  // advProgressFunc PROG_OK: "\r%s -   OK\n"; CbCommon at 100: "\r%sOK  \n" after "<stage> - ".
  std::string_view s = trim_mstflint_right(segment_);
  if (s.size() < 2 || s.substr(s.size() - 2) != "OK") return;
  s = trim_mstflint_right(s.substr(0, s.size() - 2));
  if (s.empty() || s.back() != '-') return;
  s.remove_suffix(1);
  if (!is_burn_stage(trim_mstflint_right(s))) return;
  if (last_ != 100 && on_percent_) on_percent_(100);
  last_ = 100;
}

std::string mstflint_missing(const std::string& tool) {
  return tool + " was not found in " + tool_search_path_text() +
         ": install the Debian package mstflint (apt-get install mstflint)";
}

namespace {

// A query: the tool's argv run, a non-zero exit with its -E- text, the output through `parse`.
template <typename T>
Result<T> query_with(const std::vector<std::string>& argv, const std::string& where,
                     Result<T> (*parse)(std::string_view), const FirmwareToolGuard& guard = {}) {
  auto result = run_tool(argv, kCommandDeadline, nullptr, guard);
  if (!result) return result.error();
  if (result->exit_code != 0) return tool_failed(argv, *result, where, true);
  auto parsed = parse(result->out);
  if (!parsed) return make_error(ErrorKind::kPlatform, describe_command(argv) + ": " + parsed.error().message, where);
  return parsed;
}

}  // namespace

Result<FlintQuery> mstflint_query_device(const std::string& pci) {
  return query_with<FlintQuery>({"mstflint", "-d", pci, "q"}, pci, parse_flint_query);
}

Result<FlintQuery> mstflint_query_image(const std::string& path, int image_fd) {
  FirmwareToolGuard guard;
  guard.image_fd = image_fd;
  return query_with<FlintQuery>({"mstflint", "-i", path, "q"}, path, parse_flint_query, guard);
}

Result<FwResetQuery> mstfwreset_query(const std::string& pci) {
  return query_with<FwResetQuery>({"mstfwreset", "-d", pci, "q"}, pci, parse_mstfwreset_query);
}

Result<void> mstflint_burn(const std::string& pci, const std::string& image, std::chrono::milliseconds deadline,
                           const std::function<void(int percent)>& progress, const FirmwareToolGuard& guard) {
  const std::vector<std::string> argv = {"mstflint", "-d", pci, "-i", image, "-y", "burn"};
  FlintProgressReader reader(progress);
  // Progress is on stdout (printf in advProgressFunc, flushed each time); -E- lines too (reportErr).
  return run_change(argv, pci, deadline, [&reader](std::string_view chunk, bool is_stderr) {
    if (!is_stderr) reader.feed(chunk);
  }, guard);
}

Result<void> mstfwreset_reset(const std::string& pci, int level, std::chrono::milliseconds deadline,
                              const FirmwareToolGuard& guard, ResetSync sync) {
  // mstfwreset.py: add_argument('--level', type=int, choices=CmdRegMfrl.reset_levels()) = 0, 3, 4.
  if (level != 0 && level != 3 && level != 4) {
    return make_error(ErrorKind::kUsage,
                      "mstfwreset reset level " + std::to_string(level) + " does not exist: the levels are 0, 3 and 4",
                      pci);
  }
  // main(): "Reset-sync '1' is not supported with reset-level '0'": refused here, nothing is run.
  if (sync == ResetSync::kDriver && level != 3) {
    return make_error(ErrorKind::kUsage,
                      "mstfwreset --sync 1 (the driver as the reset-sync owner) is for level 3 only, not level " +
                          std::to_string(level),
                      pci);
  }
  std::vector<std::string> argv = {"mstfwreset", "-d", pci, "--level", std::to_string(level)};
  if (sync == ResetSync::kDriver) argv.insert(argv.end(), {"--sync", "1"});
  argv.insert(argv.end(), {"-y", "reset"});
  // main(): "-E- Firmware reset failed, retry operation or reboot machine." comes with exit 1 too.
  // At the deadline SIGTERM first: sigHndl restores the reset FSM (mstfwreset.py reset_fsm_register).
  return run_change(argv, pci, deadline, nullptr, guard, SIGTERM,
                    std::chrono::duration_cast<std::chrono::milliseconds>(kMstfwresetTermGrace));
}

}  // namespace rdmactl
