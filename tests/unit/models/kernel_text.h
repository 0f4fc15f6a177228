// SPDX-License-Identifier: Apache-2.0
// How the kernel parses what is written to its attribute files, for the fixture models in this
// directory: lib/kstrtox.c (kstrtoull and the kstrtou8/u32 built on it) and the "%d" of sscanf
// (lib/vsprintf.c vsscanf), which vendor driver store functions use.
#pragma once

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

namespace rdmactl::test {

// kstrtoull(s, base, &res): an optional '+'; base 0 picks 16 for "0x" followed by a hex digit, 8
// for a leading '0', else 10 (_parse_integer_fixup_radix); at least one digit (else EINVAL);
// overflow is ERANGE; then one optional '\n' and nothing else (else EINVAL).
// Returns the value or a positive errno.
inline std::variant<unsigned long long, int> kstrtoull(std::string_view s, unsigned base) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
  };
  if (base == 0) {
    if (s.size() >= 1 && s[0] == '0') {
      base = (s.size() >= 3 && (s[1] == 'x' || s[1] == 'X') && digit(s[2]) < 16) ? 16 : 8;
    } else {
      base = 10;
    }
  }
  if (base == 16 && s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  unsigned long long value = 0;
  size_t used = 0;
  bool overflow = false;
  while (used < s.size() && digit(s[used]) < static_cast<int>(base)) {
    const unsigned long long next = value * base + static_cast<unsigned>(digit(s[used]));
    if (next / base != value && !overflow) overflow = true;
    value = next;
    ++used;
  }
  if (overflow) return ERANGE;
  if (used == 0) return EINVAL;
  s.remove_prefix(used);
  if (!s.empty() && s[0] == '\n') s.remove_prefix(1);
  if (!s.empty()) return EINVAL;
  return value;
}

// kstrtou8 / kstrtou32: kstrtoull, then ERANGE when the value does not fit.
inline std::variant<unsigned long long, int> kstrtou(std::string_view s, unsigned base, unsigned bits) {
  auto parsed = kstrtoull(s, base);
  if (std::holds_alternative<int>(parsed)) return parsed;
  const unsigned long long value = std::get<unsigned long long>(parsed);
  if (bits < 64 && value >> bits) return ERANGE;
  return value;
}

// sscanf(buf, "%d", &v): leading white space skipped, an optional sign, decimal digits; what
// follows is ignored. nullopt when no digit was read (the store functions that use it do not
// check, and keep the variable's old contents).
inline std::optional<int> sscanf_int(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  const size_t first = i;
  long long value = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && value < (1LL << 40)) value = value * 10 + (s[i++] - '0');
  if (i == first) return std::nullopt;
  return static_cast<int>(negative ? -value : value);
}

}  // namespace rdmactl::test
