// SPDX-License-Identifier: Apache-2.0
// opensm.conf as text: read and edit single keys while every other byte of the file stays as it was.
//
// OpenSM reads its configuration file line by line: the first word is the key, the second its value,
// anything after that is ignored, and a line whose first word starts with '#' is a comment
// (opensm/osm_subnet.c, osm_subn_parse_conf_file). A key given twice takes its last value. These
// functions follow the same rules, so what rdmactl reads is what OpenSM uses, and they are pure so
// that the editing is tested on text, table-driven.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmactl::reconcilers::subnet_manager {

// The value of `key` as OpenSM would read it (its last occurrence); std::nullopt when no line sets it.
std::optional<std::string> opensm_conf_value(std::string_view text, std::string_view key);
// The 1-based number of the line opensm_conf_value takes the value from; 0 when no line sets it.
int opensm_conf_line(std::string_view text, std::string_view key);

// `text` with the value of every line that sets `key` replaced by `value` (leading blanks, the
// separator and anything after the value kept); when no line sets it, "key value\n" is appended
// (after a newline, if the text does not end in one). Every other line is kept byte for byte.
std::string opensm_conf_set(std::string_view text, std::string_view key, std::string_view value);

// `text` without the lines that set `key`: undoes an append of opensm_conf_set.
std::string opensm_conf_remove(std::string_view text, std::string_view key);

// Shell variable files that the OpenSM units source (Debian's /etc/default/opensm with PORTS,
// RHEL's /etc/sysconfig/opensm with GUIDS and PRIORITY): `KEY=value` or `KEY="value"` lines, the
// last one winning as when the file is sourced; comments and every other line are kept byte for
// byte. std::nullopt when no uncommented line sets the key.
std::optional<std::string> shell_var_value(std::string_view text, std::string_view key);
// `text` with the last line that sets `key` now setting it to "value" (quoted), or such a line
// appended when none does.
std::string shell_var_set(std::string_view text, std::string_view key, std::string_view value);
// `text` without the lines that set `key`: undoes an append of shell_var_set.
std::string shell_var_remove(std::string_view text, std::string_view key);

// A GUID as OpenSM's strtoull(value, NULL, 0) reads it (0x-hex, or decimal), written the way
// opensm.conf and rdmactl's state write it: "0x" + 16 lower-case hex digits. std::nullopt when the
// text is not a number.
std::optional<std::string> canonical_guid(std::string_view text);
std::optional<uint64_t> parse_guid(std::string_view text);
// strtoull(text, NULL, 16) as glibc reads it: leading white space, an optional sign, an optional
// "0x" (where a hex digit follows), then the longest run of hex digits; 0 where there is none, and
// ULLONG_MAX where the digits overflow 64 bits.
uint64_t strtoull_hex(std::string_view text);
// A GUID as `opensm --guid` reads it (opensm 3.3.23 main.c ~810: strtoull(optarg, NULL, 16)):
// hexadecimal with or without "0x", only the leading hex digits counting, so "0002c9030002fb06" and
// "10" (0x10) are GUIDs, "10zz" is 0x10 and "ALL" is 0xa; Debian's opensm@.service passes each word
// of PORTS there. std::nullopt where that reads 0 ("0", "mlx5_0", "0xzz") or all ones (main.c
// makes 0 INVALID_GUID, 0xffffffffffffffff, and an overflow reads as that too): OpenSM then picks
// the port itself (main.c ~1242, get_port_guid with INVALID_GUID: the only port, else it prompts).
std::optional<uint64_t> parse_guid_option(std::string_view text);
std::string format_guid(uint64_t guid);

// The port GUID in a GID (its lower 64 bits, the interface ID): "fe80:0000:0000:0000:946d:ae03:00f1:4a20"
// -> "0x946dae0300f14a20". std::nullopt when the text is not a GID in sysfs's 8x4-hex form.
std::optional<std::string> guid_from_gid(std::string_view gid);

}  // namespace rdmactl::reconcilers::subnet_manager
