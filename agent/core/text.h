// SPDX-License-Identifier: Apache-2.0
// Text checks: strict UTF-8, control characters, escapes for display, ASCII case folding.
//
// Every string of a spec ends up in JSON (plan and apply reports, the agent's API, the journal)
// and on terminals. nlohmann-json throws (type_error.316) when it dumps a string that is not
// UTF-8, and a raw control character in a message can rewrite a terminal. The loader refuses
// both before any other pass sees the text, and messages show odd bytes with escape_for_display.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rdmactl {

// The length of the well-formed UTF-8 sequence at `pos` (1-4), or 0 when the bytes there are not
// one (a stray continuation byte, a truncated sequence, an overlong form, a UTF-16 surrogate or a
// code point above U+10FFFF: what RFC 3629 and nlohmann-json's decoder refuse).
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos);

// The offset of the first byte that does not start a well-formed UTF-8 sequence.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

// C0 control characters and DEL; TAB only when `allow_tab` is false.
bool is_control_byte(unsigned char c, bool allow_tab = false);
// Whether the two-byte UTF-8 sequence at `pos` is a C1 control character (U+0080-U+009F): a
// terminal may take U+009B for CSI. YAML's printable set excludes them but NEL (U+0085).
bool is_c1_control(std::string_view text, std::size_t pos);
std::optional<std::size_t> first_control_byte(std::string_view text, bool allow_tab = false);

// The text with control characters and bytes that are not UTF-8 written as escapes ("\n", "\t",
// "\x1b", "\xff"), so that a message about a value is itself valid UTF-8 and safe on a terminal.
std::string escape_for_display(std::string_view text);

// escape_for_display for text of many lines (a report, `show`): line feeds and tabs are kept, as
// the renderers lay text out with them and the kernel prints vector sysctl values with tabs; every
// other control character or byte that is not UTF-8 is escaped, whatever field it came from.
std::string escape_lines_for_display(std::string_view text);

// "0x1b", for messages about one byte.
std::string byte_text(unsigned char c);

// "0x1f", for messages about a number the kernel or a tool sent (a netlink message type).
std::string hex_number(unsigned value);

// Whether `text` is one or more ASCII digits and nothing else (no sign, no blank).
bool all_digits(std::string_view text);

// Whether `a` and `b` are equal with ASCII letters folded to lower case (HTTP header names and
// tokens, RFC 9110 5.1); other bytes compare as they are.
bool equal_ignoring_case(std::string_view a, std::string_view b);

}  // namespace rdmactl
