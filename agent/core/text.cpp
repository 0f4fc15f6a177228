// SPDX-License-Identifier: Apache-2.0
// Strict UTF-8, control-character checks, display escapes and case folding (see text.h).
#include "agent/core/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace rdmactl {
namespace {

bool in_range(unsigned char c, unsigned char low, unsigned char high) { return c >= low && c <= high; }

}  // namespace

// RFC 3629 section 4 (the UTF8-octets grammar): the second byte's range depends on the first,
// which is how overlong forms, surrogates (ED A0-BF) and code points above U+10FFFF are excluded.
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const std::size_t left = text.size() - pos;
  const unsigned char b0 = at(pos);
  if (b0 < 0x80) return 1;
  if (in_range(b0, 0xc2, 0xdf)) return left >= 2 && in_range(at(pos + 1), 0x80, 0xbf) ? 2 : 0;
  if (in_range(b0, 0xe0, 0xef)) {
    if (left < 3) return 0;
    const unsigned char low = b0 == 0xe0 ? 0xa0 : 0x80;
    const unsigned char high = b0 == 0xed ? 0x9f : 0xbf;
    return in_range(at(pos + 1), low, high) && in_range(at(pos + 2), 0x80, 0xbf) ? 3 : 0;
  }
  if (in_range(b0, 0xf0, 0xf4)) {
    if (left < 4) return 0;
    const unsigned char low = b0 == 0xf0 ? 0x90 : 0x80;
    const unsigned char high = b0 == 0xf4 ? 0x8f : 0xbf;
    return in_range(at(pos + 1), low, high) && in_range(at(pos + 2), 0x80, 0xbf) &&
                   in_range(at(pos + 3), 0x80, 0xbf)
               ? 4
               : 0;
  }
  return 0;  // 80-C1 and F5-FF never start a sequence
}

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

bool is_control_byte(unsigned char c, bool allow_tab) {
  if (c == '\t') return !allow_tab;
  return c < 0x20 || c == 0x7f;
}

bool is_c1_control(std::string_view text, std::size_t pos) {
  return pos + 1 < text.size() && static_cast<unsigned char>(text[pos]) == 0xc2 &&
         static_cast<unsigned char>(text[pos + 1]) >= 0x80 && static_cast<unsigned char>(text[pos + 1]) <= 0x9f;
}

std::optional<std::size_t> first_control_byte(std::string_view text, bool allow_tab) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (is_control_byte(static_cast<unsigned char>(text[i]), allow_tab)) return i;
  }
  return std::nullopt;
}

std::string byte_text(unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 0x0f];
}

std::string escape_for_display(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 2 && is_c1_control(text, i)) {
      out += "\\u00";
      out += kHex[static_cast<unsigned char>(text[i + 1]) >> 4];
      out += kHex[static_cast<unsigned char>(text[i + 1]) & 0x0f];
      i += n;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    if (n == 1 && !is_control_byte(c)) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0x0f];
    }
    ++i;
  }
  return out;
}

std::string escape_lines_for_display(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find_first_of("\n\t", start);
    out += escape_for_display(text.substr(start, end - start));  // to the end when end is npos
    if (end == std::string_view::npos) return out;
    out += text[end];
    start = end + 1;
  }
}

std::string hex_number(unsigned value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", value);
  return text;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace rdmactl
