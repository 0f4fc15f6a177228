// SPDX-License-Identifier: Apache-2.0
// opensm.conf reading and single-key editing (see opensm_conf.h for the file's rules).
#include "reconcilers/subnet_manager/opensm_conf.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <vector>

namespace rdmactl::reconcilers::subnet_manager {
namespace {

// One line of the file: [begin, end) without its newline; `newline` says whether one follows.
struct Line {
  size_t begin = 0;
  size_t end = 0;
  bool newline = false;
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) {
      lines.push_back({begin, text.size(), false});
      break;
    }
    lines.push_back({begin, nl, true});
    begin = nl + 1;
  }
  return lines;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Where the words of a line are: OpenSM splits on blanks (strtok_r with " \t\n").
struct Words {
  size_t key_begin = 0, key_end = 0;      // the first word
  size_t value_begin = 0, value_end = 0;  // the second; value_begin == value_end when there is none
};

Words words_of(std::string_view line) {
  Words w;
  size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  w.key_begin = i;
  while (i < line.size() && !is_blank(line[i])) ++i;
  w.key_end = i;
  while (i < line.size() && is_blank(line[i])) ++i;
  w.value_begin = i;
  while (i < line.size() && !is_blank(line[i])) ++i;
  w.value_end = i;
  return w;
}

// Whether the line sets `key` (a comment line never does).
bool sets_key(std::string_view line, const Words& w, std::string_view key) {
  const std::string_view first = line.substr(w.key_begin, w.key_end - w.key_begin);
  return !first.empty() && first.front() != '#' && first == key;
}

}  // namespace

std::optional<std::string> opensm_conf_value(std::string_view text, std::string_view key) {
  std::optional<std::string> value;
  for (const Line& l : split_lines(text)) {
    const std::string_view line = text.substr(l.begin, l.end - l.begin);
    const Words w = words_of(line);
    if (sets_key(line, w, key)) value = std::string(line.substr(w.value_begin, w.value_end - w.value_begin));
  }
  return value;
}

int opensm_conf_line(std::string_view text, std::string_view key) {
  int number = 0;
  int found = 0;
  for (const Line& l : split_lines(text)) {
    ++number;
    const std::string_view line = text.substr(l.begin, l.end - l.begin);
    if (sets_key(line, words_of(line), key)) found = number;
  }
  return found;
}

std::string opensm_conf_set(std::string_view text, std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(text.size() + key.size() + value.size() + 2);
  bool found = false;
  for (const Line& l : split_lines(text)) {
    const std::string_view line = text.substr(l.begin, l.end - l.begin);
    const Words w = words_of(line);
    if (sets_key(line, w, key)) {
      found = true;
      if (w.value_begin == w.value_end) {
        // "key" alone: OpenSM ignores it; give it its value after the key.
        out.append(line.substr(0, w.key_end)).append(" ").append(value).append(line.substr(w.key_end));
      } else {
        out.append(line.substr(0, w.value_begin)).append(value).append(line.substr(w.value_end));
      }
    } else {
      out.append(line);
    }
    if (l.newline) out.push_back('\n');
  }
  if (!found) {
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    out.append(key).append(" ").append(value).append("\n");
  }
  return out;
}

std::string opensm_conf_remove(std::string_view text, std::string_view key) {
  std::string out;
  out.reserve(text.size());
  for (const Line& l : split_lines(text)) {
    const std::string_view line = text.substr(l.begin, l.end - l.begin);
    if (sets_key(line, words_of(line), key)) continue;
    out.append(line);
    if (l.newline) out.push_back('\n');
  }
  return out;
}

namespace {

// "  KEY=value  # note" -> the value text after '=' when the line sets `key` (not a comment).
std::optional<std::string_view> shell_assignment(std::string_view line, std::string_view key) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] == '#') return std::nullopt;
  if (line.substr(i, key.size()) != key || line.substr(i + key.size(), 1) != "=") return std::nullopt;
  return line.substr(i + key.size() + 1);
}

// The value a shell gives `KEY=<raw>`: one double- or single-quoted word, or an unquoted one
// ending at white space or a comment.
std::string shell_word(std::string_view raw) {
  if (!raw.empty() && (raw.front() == '"' || raw.front() == '\'')) {
    const size_t close = raw.find(raw.front(), 1);
    return std::string(raw.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  return std::string(raw.substr(0, raw.find_first_of(" \t#")));
}

}  // namespace

std::optional<std::string> shell_var_value(std::string_view text, std::string_view key) {
  std::optional<std::string> value;
  for (const Line& l : split_lines(text)) {
    if (auto raw = shell_assignment(text.substr(l.begin, l.end - l.begin), key)) value = shell_word(*raw);
  }
  return value;
}

std::string shell_var_set(std::string_view text, std::string_view key, std::string_view value) {
  const std::vector<Line> lines = split_lines(text);
  std::optional<size_t> last;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (shell_assignment(text.substr(lines[i].begin, lines[i].end - lines[i].begin), key)) last = i;
  }
  const std::string assignment = std::string(key) + "=\"" + std::string(value) + "\"";
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out.append(i == last ? std::string_view(assignment) : text.substr(lines[i].begin, lines[i].end - lines[i].begin));
    if (lines[i].newline) out.push_back('\n');
  }
  if (!last) {
    if (!out.empty() && out.back() != '\n') out.push_back('\n');
    out += assignment + "\n";
  }
  return out;
}

std::string shell_var_remove(std::string_view text, std::string_view key) {
  std::string out;
  for (const Line& l : split_lines(text)) {
    const std::string_view line = text.substr(l.begin, l.end - l.begin);
    if (shell_assignment(line, key)) continue;
    out.append(line);
    if (l.newline) out.push_back('\n');
  }
  return out;
}

std::optional<uint64_t> parse_guid(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

uint64_t strtoull_hex(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  // "0x" is a prefix only where a hex digit follows: "0xz" reads as 0, ending at the x.
  if (i + 2 < text.size() && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X') && hex(text[i + 2]) >= 0) {
    i += 2;
  }
  uint64_t value = 0;
  bool overflow = false;
  for (; i < text.size() && hex(text[i]) >= 0; ++i) {
    if (value > (UINT64_MAX >> 4)) overflow = true;
    value = (value << 4) | static_cast<uint64_t>(hex(text[i]));
  }
  if (overflow) return UINT64_MAX;  // ERANGE: ULLONG_MAX, whatever the sign
  return negative ? ~value + 1 : value;
}

std::optional<uint64_t> parse_guid_option(std::string_view text) {
  const uint64_t value = strtoull_hex(text);
  // main.c: 0 becomes INVALID_GUID (all ones), and either sends OpenSM to get_port_guid.
  if (value == 0 || value == UINT64_MAX) return std::nullopt;
  return value;
}

std::string format_guid(uint64_t guid) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
  return buf;
}

std::optional<std::string> canonical_guid(std::string_view text) {
  const auto guid = parse_guid(text);
  if (!guid) return std::nullopt;
  return format_guid(*guid);
}

std::optional<std::string> guid_from_gid(std::string_view gid) {
  // Eight groups of four hex digits; the last four are the interface ID.
  if (gid.size() != 39) return std::nullopt;
  std::string hex;
  for (size_t group = 0; group < 8; ++group) {
    const size_t at = group * 5;
    if (group > 0 && gid[at - 1] != ':') return std::nullopt;
    for (size_t i = at; i < at + 4; ++i) {
      if (!std::isxdigit(static_cast<unsigned char>(gid[i]))) return std::nullopt;
    }
    if (group >= 4) hex.append(gid.substr(at, 4));
  }
  return canonical_guid("0x" + hex);
}

}  // namespace rdmactl::reconcilers::subnet_manager
