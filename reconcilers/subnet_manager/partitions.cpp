// SPDX-License-Identifier: Apache-2.0
// partitions.conf parsing, checking and writing (see partitions.h for the file's rules). Each rule
// names the OpenSM 3.3.23 function it follows (opensm/osm_prtn_config.c unless said otherwise).
#include "reconcilers/subnet_manager/partitions.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace rdmactl::reconcilers::subnet_manager {
namespace {

// osm_prtn_config_parse_file reads with fgets(line, sizeof(line) - 1) into char line[4096]: a longer
// line would be cut into two "lines" with their own numbers.
constexpr size_t kOpensmLineMax = 4094;
// new_part_conf: OSM_DEFAULT_MGRP_MTU (4, 2048 bytes) and OSM_DEFAULT_MGRP_RATE (3, 10 Gb/s).
constexpr uint32_t kDefaultMtuCode = 4;
constexpr uint32_t kDefaultRateCode = 3;
// ipoib.h IPOIB_ENCAP_LEN.
constexpr int kIpoibEncapLen = 4;
// osm_partition.h osm_prtn_t name[32].
constexpr size_t kNameMax = 31;

std::string printf_string(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// OpenSM's blanks: STRIP_HEAD_SPACES and parse_name_token skip ' ', '\t' and '\n' only ('\r' is text).
bool is_opensm_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

std::string_view trim_opensm(std::string_view s) {
  while (!s.empty() && is_opensm_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_opensm_blank(s.back())) s.remove_suffix(1);
  return s;
}

// strncmp(word, keyword, strlen(word)) == 0: OpenSM's prefix match (the empty word matches).
bool prefix_of(std::string_view word, std::string_view keyword) {
  return word.size() <= keyword.size() && keyword.substr(0, word.size()) == word;
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

// parse_name_token: "name[=value]" split at the first '=', both trimmed; no '=': no value (NULL).
struct Token {
  std::string name;
  std::optional<std::string> value;
};

Token name_token(std::string_view s) {
  const size_t eq = s.find('=');
  if (eq == std::string_view::npos) return {std::string(trim_opensm(s)), std::nullopt};
  return {std::string(trim_opensm(s.substr(0, eq))), std::string(trim_opensm(s.substr(eq + 1)))};
}

// strtoul(val, &end, 0) as OpenSM calls it (the C library's own, for the same signs and bases).
struct Number {
  unsigned long value = 0;
  bool empty = true;     // end == val
  bool trailing = false; // *end != '\0'
  char next = '\0';      // *end
};

Number c_strtoul(const std::string& s) {
  char* end = nullptr;
  Number n;
  n.value = std::strtoul(s.c_str(), &end, 0);
  n.empty = end == s.c_str();
  n.trailing = *end != '\0';
  n.next = *end;
  return n;
}

std::string hex16(uint16_t v) { return printf_string("0x%04x", static_cast<unsigned>(v)); }

class Parser {
 public:
  Result<PartitionsConf> run(std::string_view text) {
    size_t begin = 0;
    int lineno = 0;
    while (begin < text.size()) {
      size_t nl = text.find('\n', begin);
      const size_t end = nl == std::string_view::npos ? text.size() : nl;
      ++lineno;
      if (auto error = parse_line(text.substr(begin, end - begin), lineno, begin)) return *error;
      begin = nl == std::string_view::npos ? text.size() : nl + 1;
    }
    // The last definition may end at the end of the file without ';' (nothing flushes it, and
    // is_parse_success is already 1).
    close_definition();
    if (!any_definition_) {
      // is_parse_success stays 0, osm_prtn_config_parse_file returns 1 and osm_prtn_make_partitions
      // retries "with default config".
      return fail(0, "no partition definition in the file: OpenSM treats it as in error and runs with "
                     "its default configuration (Default=0x7fff,ipoib : ALL=full;)");
    }
    return std::move(out_);
  }

 private:
  static Error fail(int line, std::string message) {
    Error error = make_error(ErrorKind::kInvalidSpec, message);
    error.diagnostics.push_back({.file = {}, .line = line, .column = 0, .path = {}, .message = std::move(message)});
    return error;
  }

  void warn(int line, std::string message) { out_.warnings.push_back({line, std::move(message)}); }

  // `offset`: where the line starts in the text (a definition's bytes: Partition::begin, end).
  std::optional<Error> parse_line(std::string_view line, int lineno, size_t offset) {
    if (line.size() > kOpensmLineMax) {
      return fail(lineno, printf_string("line %d: longer than OpenSM's %zu-byte line buffer", lineno, kOpensmLineMax));
    }
    // '#' anywhere cuts the rest of the line (osm_prtn_config_parse_file: strchr(p, '#')).
    line = line.substr(0, line.find('#'));
    size_t pos = 0;
    while (true) {
      while (pos < line.size() && is_opensm_blank(line[pos])) ++pos;
      if (pos >= line.size()) return std::nullopt;
      const size_t semi = line.find(';', pos);
      const bool terminated = semi != std::string_view::npos;
      if (terminated && semi == pos) {
        // parse_part_conf skips the '\0' that replaced this ';' and reads past the end of the line
        // (stale bytes of earlier lines in OpenSM's buffer): its outcome is not defined.
        return fail(lineno, printf_string("line %d: ';' with no text before it on its line: OpenSM reads past the "
                                          "end of the line here; put the ';' after the last member",
                                          lineno));
      }
      const std::string_view chunk = line.substr(pos, terminated ? semi - pos : std::string_view::npos);
      bool bare_mgid = false;
      const bool opens = !current_;
      if (auto error = parse_chunk(chunk, lineno, bare_mgid)) return error;
      if (current_) {
        if (opens) current_->begin = offset + pos;
        current_->end = offset + (terminated ? semi + 1 : pos + trim_opensm(chunk).size());
      }
      any_definition_ = true;
      if (!terminated && bare_mgid) {
        // parse_name_token returns the length of the mgid token plus one, past the '\0' that ends
        // the line's string, and mgroup_create reads the group's flags from there: stale bytes of
        // longer earlier lines in osm_prtn_config_parse_file's line buffer (a comment's "mtu=1"
        // became the group's MTU on the real OpenSM 3.3.23, tests/ibsim_opensm partitions).
        return fail(lineno, printf_string("line %d: an mgid without flags at the end of a line without ',' or ';': "
                                          "OpenSM reads the bytes after the line in its buffer as the group's "
                                          "flags; end it with ','",
                                          lineno));
      }
      if (!terminated) return std::nullopt;
      if (bare_mgid && !trim_opensm(line.substr(semi + 1)).empty()) {
        // mgroup_create parses the flags from after the mgid token, i.e. after this ';'.
        return fail(lineno, printf_string("line %d: an mgid without flags ends a definition with more text on the "
                                          "line: OpenSM reads that text as the group's flags",
                                          lineno));
      }
      close_definition();
      pos = semi + 1;
    }
  }

  void close_definition() {
    if (!current_) return;
    std::sort(current_->flags.scopes.begin(), current_->flags.scopes.end());
    out_.partitions.push_back(std::move(*current_));
    current_.reset();
  }

  // parse_part_conf: the header (up to ':') when no definition is open, then the member list.
  std::optional<Error> parse_chunk(std::string_view chunk, int lineno, bool& bare_mgid) {
    std::string_view body = chunk;
    if (!current_) {
      const size_t colon = chunk.find(':');
      if (colon == std::string_view::npos) {
        return fail(lineno, printf_string("PARSE ERROR: line %d: no partition definition found", lineno));
      }
      if (auto error = parse_header(chunk.substr(0, colon), lineno)) return error;
      body = chunk.substr(colon + 1);
    }
    const std::vector<std::string_view> items = split_commas(body);
    for (size_t i = 0; i < items.size(); ++i) {
      Token token = name_token(items[i]);
      if (token.name == "mgid") {  // strcmp: exact; the group takes the rest of the chunk as flags
        bare_mgid = i + 1 == items.size();
        return parse_mgroup(token, std::vector<std::string_view>(items.begin() + i + 1, items.end()), lineno);
      }
      if (auto error = add_member(token, lineno)) return error;
    }
    return std::nullopt;
  }

  std::optional<Error> parse_header(std::string_view header, int lineno) {
    const std::vector<std::string_view> items = split_commas(header);
    Token first = name_token(items[0]);
    Partition p;
    p.line = lineno;
    defmember_ = "limited";  // new_part_conf: membership = LIMITED
    for (size_t i = 1; i < items.size(); ++i) partition_flag(p, name_token(items[i]), lineno);
    // partition_create: "NNN : ..." (no '=', a digit first) is a P_Key without a name.
    std::optional<std::string> id = first.value;
    if (!id && !first.name.empty() && std::isdigit(static_cast<unsigned char>(first.name[0]))) {
      id = first.name;
      first.name.clear();
    }
    p.name = first.name;
    if (id) {
      const Number n = c_strtoul(*id);
      if (n.empty || n.trailing) {
        return fail(lineno, printf_string("PARSE ERROR: line %d: bad partition definition", lineno));
      }
      // cl_hton16((uint16_t)strtoul(...)), then osm_prtn_make_new: pkey &= ~0x8000; 0 is generated.
      const uint16_t pkey = static_cast<uint16_t>(n.value) & 0x7fff;
      if (pkey != 0) p.pkey = pkey;
    }
    if (p.pkey) {
      for (const Partition& prev : out_.partitions) {
        if (prev.pkey != p.pkey) continue;
        // osm_prtn_make_new: the later definition merges into the first, which keeps its name.
        warn(lineno, printf_string("Duplicated partition definition: '%s' (0x%04x) prev name '%s'.  Will use it",
                                   p.name.c_str(), static_cast<unsigned>(*p.pkey),
                                   (prev.name.empty() ? hex16(*prev.pkey).substr(2) : prev.name).c_str()));
        break;
      }
    }
    current_ = std::move(p);
    return std::nullopt;
  }

  // verify_val: strtoul, with a warning when text follows the number (the number is used anyway).
  unsigned long verify_val(int lineno, const std::string& flag, const std::string& val) {
    const Number n = c_strtoul(val);
    if (n.trailing) {
      warn(lineno, printf_string("PARSE WARN: line %d: suspicious val=(%s) detected. flag=(%s)", lineno, val.c_str(),
                                 flag.c_str()));
    }
    return n.value;
  }

  // parse_group_flag: true when the flag is one of the group flags (matched by prefix, in this order).
  bool group_flag(GroupFlags& f, const Token& t, int lineno) {
    const std::string& flag = t.name;
    const auto skipped = [&](const char* which, const char* outcome) {
      warn(lineno, printf_string("PARSE WARN: line %d: flag '%s' requires valid value - %s", lineno, which, outcome));
    };
    if (prefix_of(flag, "mtu") || prefix_of(flag, "rate")) {
      const bool mtu = prefix_of(flag, "mtu");
      std::optional<uint32_t>& field = mtu ? f.mtu : f.rate;
      // The value is stored before the check: "mtu=0" leaves the code 0, despite "skipped".
      if (t.value) field = static_cast<uint32_t>(verify_val(lineno, flag, *t.value));
      if (!t.value || *field == 0) skipped(mtu ? "mtu" : "rate", "skipped");
    } else if (prefix_of(flag, "scope")) {
      const uint32_t scope = t.value ? static_cast<uint32_t>(verify_val(lineno, flag, *t.value)) : 0;
      if (scope == 0 || scope > 0xf) {
        skipped("scope", "skipped");
      } else if (std::find(f.scopes.begin(), f.scopes.end(), scope) == f.scopes.end()) {
        f.scopes.push_back(scope);  // scope_mask |= 1 << scope
      }
    } else if (prefix_of(flag, "Q_Key") || prefix_of(flag, "TClass")) {
      const bool q_key = prefix_of(flag, "Q_Key");
      std::optional<uint32_t>& field = q_key ? f.q_key : f.tclass;
      if (t.value) {
        const unsigned long v = verify_val(lineno, flag, *t.value);
        field = q_key ? static_cast<uint32_t>(v) : static_cast<uint8_t>(v);  // TClass is a uint8_t
      }
      if (!t.value || *field == 0) skipped(q_key ? "Q_Key" : "TClass", "using '0'");
    } else if (prefix_of(flag, "sl") || prefix_of(flag, "FlowLabel")) {
      const bool sl = prefix_of(flag, "sl");
      const uint32_t max = sl ? 15 : 0xfffff;
      bool ok = t.value && !t.value->empty();
      uint32_t v = 0;
      if (ok) {
        const Number n = c_strtoul(*t.value);
        v = static_cast<uint32_t>(n.value);  // unsigned / uint32_t in OpenSM
        ok = v <= max && !(n.trailing && !std::isspace(static_cast<unsigned char>(n.next)));
      }
      if (ok) {
        (sl ? f.sl : f.flow_label) = v;
      } else {
        skipped(sl ? "sl" : "FlowLabel", "skipped");
      }
    } else {
      return false;
    }
    return true;
  }

  // partition_add_flag: group flags first, then ipoib, defmember (prefixes) and indx0 (exact).
  void partition_flag(Partition& p, const Token& t, int lineno) {
    if (group_flag(p.flags, t, lineno)) return;
    const std::string& flag = t.name;
    if (prefix_of(flag, "ipoib")) {
      p.ipoib = true;
    } else if (prefix_of(flag, "defmember")) {
      const std::optional<std::string>& v = t.value;
      if (!v || (!prefix_of(*v, "limited") && !prefix_of(*v, "both") && !prefix_of(*v, "full"))) {
        warn(lineno, printf_string("PARSE WARN: line %d: flag 'defmember' requires valid value (limited or full or "
                                   "both) - skipped",
                                   lineno));
      } else {
        defmember_ = prefix_of(*v, "full") ? "full" : prefix_of(*v, "both") ? "both" : "limited";
      }
    } else if (flag == "indx0") {
      p.indx0 = true;
    } else {
      warn(lineno,
           printf_string("PARSE WARN: line %d: unrecognized partition flag '%s' - ignored", lineno, flag.c_str()));
    }
  }

  // partition_add_port.
  std::optional<Error> add_member(const Token& t, int lineno) {
    const std::string& who = t.name;
    if (who.empty() || prefix_of(who, "NONE")) return std::nullopt;
    std::string membership = defmember_;
    if (t.value) {
      const std::string& flag = *t.value;
      // The empty word is a prefix of "full": "ALL=" is full.
      membership = prefix_of(flag, "full") ? "full" : prefix_of(flag, "both") ? "both" : "limited";
      if (membership == "limited" && !prefix_of(flag, "limited")) {
        warn(lineno, printf_string("PARSE WARN: line %d: unrecognized port flag '%s'. Assume 'limited'", lineno,
                                   flag.c_str()));
      }
    }
    std::string canonical;
    for (const char* keyword : {"ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF"}) {
      if (prefix_of(who, keyword)) {
        canonical = keyword;
        break;
      }
    }
    if (canonical.empty()) {
      char* end = nullptr;
      const unsigned long long guid = std::strtoull(who.c_str(), &end, 0);
      if (guid == 0 || *end != '\0') {
        return fail(lineno, printf_string("PARSE ERROR: line %d: bad PortGUID", lineno));
      }
      canonical = printf_string("0x%016llx", guid);
    }
    current_->members.push_back({canonical, membership});
    return std::nullopt;
  }

  // mgroup_create and parse_mgroup_flags.
  std::optional<Error> parse_mgroup(const Token& t, std::vector<std::string_view> flag_items, int lineno) {
    in6_addr addr{};
    const std::string gid = t.value.value_or("");
    if (!t.value || inet_pton(AF_INET6, gid.c_str(), &addr) != 1 || addr.s6_addr[0] != 0xff) {
      return fail(lineno, printf_string("PARSE ERROR partition conf file line %d: mgid \"%s\": gid is not multicast",
                                        lineno, gid.c_str()));
    }
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &addr, text, sizeof text);
    PartitionMulticastGroup group{.mgid = text, .flags = {}};
    if (flag_items.empty()) flag_items.push_back({});  // the text after the mgid: at least one, empty, flag
    for (std::string_view item : flag_items) {
      const Token flag = name_token(item);
      if (!group_flag(group.flags, flag, lineno)) {
        warn(lineno, printf_string("PARSE WARN: line %d: unrecognized mgroup flag '%s' - ignored", lineno,
                                   flag.name.c_str()));
      }
    }
    std::sort(group.flags.scopes.begin(), group.flags.scopes.end());
    check_ip_group(addr, group, lineno);
    current_->mgroups.push_back(std::move(group));
    return std::nullopt;
  }

  // ip_mgroup_pkey_ok, ip_mgroup_rate_ok, ip_mgroup_mtu_ok: OpenSM logs these and creates no group.
  void check_ip_group(const in6_addr& addr, const PartitionMulticastGroup& group, int lineno) {
    const uint8_t* raw = addr.s6_addr;
    const bool ip = raw[3] == 0x1b && (raw[2] == 0x40 || raw[2] == 0x60);
    if (!ip) return;
    const Partition& p = *current_;
    const std::string name = p.name.empty() && p.pkey ? hex16(*p.pkey).substr(2) : p.name;
    const unsigned pkey = p.pkey.value_or(0);
    static const uint8_t kBroadcast[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    const unsigned mpkey = static_cast<unsigned>(raw[4] << 8 | raw[5]);
    const bool broadcast = std::equal(raw, raw + 16, kBroadcast);
    // An unknown (generated) P_Key cannot be compared here.
    if (p.pkey && !broadcast && mpkey != 0 && mpkey != (pkey | 0x8000)) {
      warn(lineno, printf_string("IP MC group (%s) specified with invalid pkey 0x%04x for partition pkey = 0x%04x (%s)",
                                 group.mgid.c_str(), mpkey, pkey, name.c_str()));
      return;
    }
    const uint32_t prtn_rate = p.flags.rate.value_or(kDefaultRateCode);
    const uint32_t prtn_mtu = p.flags.mtu.value_or(kDefaultMtuCode);
    if (group.flags.rate.value_or(prtn_rate) != prtn_rate) {
      warn(lineno, printf_string("IP MC group (%s) specified with invalid rate (%u): partition pkey = 0x%04x (%s) "
                                 "[Partition broadcast group rate = %u]",
                                 group.mgid.c_str(), *group.flags.rate, pkey, name.c_str(), prtn_rate));
    } else if (group.flags.mtu.value_or(prtn_mtu) != prtn_mtu) {
      warn(lineno, printf_string("IP MC group (%s) specified with invalid mtu (%u): partition pkey = 0x%04x (%s) "
                                 "[Partition broadcast group mtu = %u]",
                                 group.mgid.c_str(), *group.flags.mtu, pkey, name.c_str(), prtn_mtu));
    }
  }

  PartitionsConf out_;
  std::optional<Partition> current_;
  std::string defmember_ = "limited";
  bool any_definition_ = false;
};

std::string render_flags(const GroupFlags& f) {
  std::string out;
  if (f.mtu) out += printf_string(", mtu=%u", *f.mtu);
  if (f.rate) out += printf_string(", rate=%u", *f.rate);
  if (f.sl) out += printf_string(", sl=%u", *f.sl);
  std::set<uint32_t> scopes(f.scopes.begin(), f.scopes.end());
  for (uint32_t scope : scopes) out += printf_string(", scope=%u", scope);
  if (f.q_key) out += printf_string(", Q_Key=0x%x", *f.q_key);
  if (f.tclass) out += printf_string(", TClass=%u", *f.tclass);
  if (f.flow_label) out += printf_string(", FlowLabel=%u", *f.flow_label);
  return out;
}

bool is_blank_or_comment(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#';
}

bool is_canonical_guid(std::string_view who) {
  if (who.size() != 18 || who.substr(0, 2) != "0x") return false;
  for (char c : who.substr(2)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return who.find_first_not_of('0', 2) != std::string_view::npos;
}

}  // namespace

Result<PartitionsConf> parse_partitions_conf(std::string_view text) { return Parser().run(text); }

std::string render_partition(const Partition& p) {
  std::string out = p.name;
  if (p.pkey) out += "=" + hex16(*p.pkey);
  if (p.ipoib) out += ", ipoib";
  out += render_flags(p.flags);
  if (p.indx0) out += ", indx0";
  std::string members;
  for (const PartitionMember& m : p.members) {
    members += (members.empty() ? "" : ", ") + m.who + "=" + m.membership;
  }
  if (members.empty()) members = "NONE";
  if (p.mgroups.empty()) return out + " : " + members + ";";
  // A group takes the rest of its line as flags (parse_part_conf: "this consumes the line"): one a
  // line. Without flags of its own it ends with ',': a bare mgid at the end of a line makes OpenSM
  // read its flags from past the line's end (parse_name_token, mgroup_create); after ',' OpenSM
  // reads the empty rest of the line, one empty flag that sets nothing (parse_group_flag: a
  // "PARSE WARN ... flag 'mtu' requires valid value - skipped" in its verbose log).
  out += " :\n";
  for (const PartitionMulticastGroup& g : p.mgroups) {
    const std::string flags = render_flags(g.flags);
    out += "    mgid=" + g.mgid + (flags.empty() ? "," : flags) + "\n";
  }
  return out + "    " + members + ";";
}

std::string render_partitions_conf(std::string_view existing, const std::vector<Partition>& wanted) {
  std::vector<std::string_view> kept;
  size_t begin = 0;
  while (begin < existing.size()) {
    const size_t nl = existing.find('\n', begin);
    const std::string_view line = existing.substr(begin, nl == std::string_view::npos ? nl : nl - begin);
    if (is_blank_or_comment(line)) kept.push_back(line);
    begin = nl == std::string_view::npos ? existing.size() : nl + 1;
  }
  while (!kept.empty() && kept.back().find_first_not_of(" \t\r") == std::string_view::npos) kept.pop_back();
  std::string out;
  if (kept.empty()) {
    out = "# OpenSM partitions (opensm(8), PARTITION CONFIGURATION): written by rdmactl from the fabric spec.\n";
  }
  for (std::string_view line : kept) out.append(line).append("\n");
  if (!wanted.empty()) out += "\n";
  for (const Partition& p : wanted) out += render_partition(p) + "\n";
  return out;
}

namespace {

// The bytes of a definition edit_partitions_conf removes, with its line when nothing else (another
// definition, a comment) is left on it.
void erase_definition(std::string& text, size_t begin, size_t end) {
  const size_t line_begin = begin == 0 ? 0 : text.rfind('\n', begin - 1) + 1;  // npos + 1 is 0
  size_t line_end = text.find('\n', end);
  line_end = line_end == std::string::npos ? text.size() : line_end + 1;
  const auto blank = [](std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; };
  const std::string_view view(text);
  if (blank(view.substr(line_begin, begin - line_begin)) && blank(view.substr(end, line_end - end))) {
    text.erase(line_begin, line_end - line_begin);
  } else {
    text.erase(begin, end - begin);
  }
}

}  // namespace

std::optional<std::string> edit_partitions_conf(std::string_view existing, const std::vector<Partition>& wanted) {
  auto parsed = parse_partitions_conf(existing);
  if (!parsed) return std::nullopt;
  const std::vector<Partition>& have = parsed->partitions;
  // Each definition of the file against the wanted one of its P_Key (or, without one, its name).
  struct Edit {
    size_t begin, end;
    std::optional<std::string> text;  // nullopt: removed
  };
  std::vector<Edit> edits;
  std::vector<bool> placed(wanted.size(), false);
  for (const Partition& p : have) {
    size_t match = wanted.size();
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (p.pkey ? wanted[i].pkey == p.pkey : (!p.name.empty() && wanted[i].name == p.name)) {
        match = i;
        break;
      }
    }
    if (match == wanted.size() || placed[match]) {
      edits.push_back({p.begin, p.end, std::nullopt});  // not wanted, or a second definition OpenSM merged
      continue;
    }
    placed[match] = true;
    if (!(p == wanted[match])) edits.push_back({p.begin, p.end, render_partition(wanted[match])});
  }
  std::string out(existing);
  for (auto e = edits.rbegin(); e != edits.rend(); ++e) {
    if (e->text) {
      out.replace(e->begin, e->end - e->begin, *e->text);
    } else {
      erase_definition(out, e->begin, e->end);
    }
  }
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (placed[i]) continue;
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += render_partition(wanted[i]) + "\n";
  }
  return out;
}

std::optional<uint32_t> mtu_code_from_bytes(int bytes) {
  for (uint32_t code = 1; code <= 5; ++code) {
    if (bytes == 128 << code) return code;
  }
  return std::nullopt;
}

std::optional<int> mtu_bytes_from_code(uint32_t code) {
  if (code < 1 || code > 5) return std::nullopt;
  return 128 << code;
}

const std::vector<RateCode>& opensm_rate_codes() {
  // ib_types.h (3.3.23) IB_PATH_RECORD_RATE_*, in code order.
  static const std::vector<RateCode> kRates = {
      {2, 2.5},  {3, 10},   {4, 30},   {5, 5},    {6, 20},   {7, 40},   {8, 60},
      {9, 80},   {10, 120}, {11, 14},  {12, 56},  {13, 112}, {14, 168}, {15, 25},
      {16, 100}, {17, 200}, {18, 300}, {19, 28},  {20, 50},  {21, 400}, {22, 600},
  };
  return kRates;
}

std::optional<uint32_t> rate_code_from_gbps(double gbps) {
  for (const RateCode& r : opensm_rate_codes()) {
    if (r.gbps == gbps) return r.code;
  }
  return std::nullopt;
}

std::optional<double> rate_gbps_from_code(uint32_t code) {
  for (const RateCode& r : opensm_rate_codes()) {
    if (r.code == code) return r.gbps;
  }
  return std::nullopt;
}

namespace {

void validate_flags(const GroupFlags& f, size_t index, const std::string& prefix,
                    std::vector<PartitionProblem>& problems) {
  const auto problem = [&](const std::string& field, std::string message) {
    problems.push_back({index, prefix + field, std::move(message)});
  };
  if (f.mtu && !mtu_bytes_from_code(*f.mtu)) {
    problem("mtu", printf_string("mtu code %u is not an IB MTU (1..5 = 256..4096 bytes)", *f.mtu));
  }
  if (f.rate && !rate_gbps_from_code(*f.rate)) {
    problem("rate", printf_string("rate code %u is not one OpenSM 3.3.23 knows (2..22)", *f.rate));
  }
  if (f.sl && *f.sl > 15) problem("sl", printf_string("sl %u is not 0..15", *f.sl));
  for (uint32_t scope : f.scopes) {
    if (scope < 1 || scope > 15) problem("scopes", printf_string("scope %u is not 1..15", scope));
  }
  if (f.q_key && *f.q_key == 0) problem("q_key", "Q_Key 0 means OpenSM's default: leave it unset");
  if (f.tclass && *f.tclass > 255) problem("tclass", printf_string("tclass %u is not 0..255", *f.tclass));
  if (f.flow_label && *f.flow_label > 0xfffff) {
    problem("flow_label", printf_string("flow_label %u is more than 20 bits", *f.flow_label));
  }
}

}  // namespace

std::vector<PartitionProblem> validate_partitions(const std::vector<Partition>& partitions) {
  std::vector<PartitionProblem> problems;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const Partition& p = partitions[i];
    const auto problem = [&](std::string field, std::string message) {
      problems.push_back({i, std::move(field), std::move(message)});
    };
    if (p.name.empty()) {
      problem("name", "empty: OpenSM would name the partition by its P_Key");
    } else if (p.name.size() > kNameMax) {
      problem("name", printf_string("longer than OpenSM's %zu characters (osm_prtn_new cuts it)", kNameMax));
    } else if (std::isdigit(static_cast<unsigned char>(p.name[0]))) {
      problem("name", "starts with a digit: OpenSM reads such a name without '=' as a P_Key");
    } else if (std::any_of(p.name.begin(), p.name.end(), [](char c) {
                 return std::string_view("=,:;#").find(c) != std::string_view::npos ||
                        std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c));
               })) {
      problem("name", "holds one of '=', ',', ':', ';', '#', a blank or a control character");
    }
    if (!p.pkey || *p.pkey == 0) {
      problem("pkey", "missing: give a P_Key in 0x0001..0x7fff (OpenSM would make one up)");
    } else if (*p.pkey & 0x8000) {
      problem("pkey", printf_string("0x%04x has the membership bit: OpenSM keeps 0x%04x; members give full or limited",
                                    static_cast<unsigned>(*p.pkey), static_cast<unsigned>(*p.pkey & 0x7fff)));
    } else if (*p.pkey == kDefaultPartitionPkey && p.name != "Default") {
      problem("pkey", "0x7fff is OpenSM's Default partition, which keeps the name \"Default\": name it Default");
    }
    validate_flags(p.flags, i, "", problems);
    for (size_t m = 0; m < p.members.size(); ++m) {
      const PartitionMember& member = p.members[m];
      const std::string field = "members[" + std::to_string(m) + "]";
      const bool keyword = member.who == "ALL" || member.who == "ALL_CAS" || member.who == "ALL_SWITCHES" ||
                           member.who == "ALL_ROUTERS" || member.who == "SELF";
      if (!keyword && !is_canonical_guid(member.who)) {
        problem(field, "\"" + member.who +
                           "\" is not ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF or a non-zero port GUID as 0x and "
                           "16 lower-case hex digits");
      }
      if (member.membership != "full" && member.membership != "limited" && member.membership != "both") {
        problem(field, "membership \"" + member.membership + "\" is not full, limited or both");
      }
    }
    for (size_t g = 0; g < p.mgroups.size(); ++g) {
      const std::string prefix = "mgroups[" + std::to_string(g) + "]";
      in6_addr addr{};
      if (inet_pton(AF_INET6, p.mgroups[g].mgid.c_str(), &addr) != 1 || addr.s6_addr[0] != 0xff) {
        problem(prefix, "mgid \"" + p.mgroups[g].mgid + "\" is not a multicast GID");
      }
      validate_flags(p.mgroups[g].flags, i, prefix + ".", problems);
    }
    for (size_t j = 0; j < i; ++j) {
      if (!p.name.empty() && partitions[j].name == p.name) {
        problem("name", "\"" + p.name + "\" is also partition " + std::to_string(j) + "'s name");
      }
      if (p.pkey && partitions[j].pkey == p.pkey) {
        problem("pkey", hex16(*p.pkey) + " is also partition " + std::to_string(j) +
                            "'s P_Key: OpenSM would merge them under the first one's name");
      }
    }
  }
  return problems;
}

std::optional<std::string> default_partition_note(const std::vector<Partition>& partitions) {
  for (const Partition& p : partitions) {
    if (p.pkey == kDefaultPartitionPkey && p.ipoib) return std::nullopt;
  }
  for (const Partition& p : partitions) {
    if (p.pkey == kDefaultPartitionPkey) {
      return "the Default partition (0x7fff) has no ipoib flag: OpenSM creates no IPoIB broadcast group in it, so "
             "IPoIB on P_Key 0x7fff cannot join";
    }
  }
  return "no partition has P_Key 0x7fff: OpenSM still makes the Default partition, with every port a limited "
         "member, its own port full, and no IPoIB broadcast group, so IPoIB on P_Key 0x7fff cannot join";
}

std::optional<int> ipoib_mtu_limit(const Partition& partition) {
  if (!partition.ipoib) return std::nullopt;
  const std::optional<int> bytes = mtu_bytes_from_code(partition.flags.mtu.value_or(kDefaultMtuCode));
  if (!bytes) return std::nullopt;
  return *bytes - kIpoibEncapLen;
}

}  // namespace rdmactl::reconcilers::subnet_manager
