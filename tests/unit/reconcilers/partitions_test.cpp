// SPDX-License-Identifier: Apache-2.0
// partitions.conf parsing, checking and writing, table-driven. Expected outcomes were captured by
// running OpenSM 3.3.23's own osm_prtn_config.c (osm_prtn_config_parse_file, compiled from
// linux-rdma/opensm tag 3.3.23 with osm_prtn.c's callees stubbed to print what they were asked):
// each case names what OpenSM did with the text ("captured: ...").
#include "reconcilers/subnet_manager/partitions.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace rdmactl::reconcilers::subnet_manager {
namespace reconcilers_partitions_test {

Partition parse_one(const std::string& text) {
  auto parsed = parse_partitions_conf(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << (parsed ? "" : parsed.error().message);
  if (!parsed || parsed->partitions.size() != 1) {
    ADD_FAILURE() << "expected one definition in: " << text;
    return {};
  }
  return parsed->partitions[0];
}

std::vector<std::string> warnings_of(const std::string& text) {
  std::vector<std::string> out;
  auto parsed = parse_partitions_conf(text);
  if (!parsed) return {"ERROR " + parsed.error().message};
  for (const auto& w : parsed->warnings) out.push_back(w.message);
  return out;
}

// The file opensm(8) and doc/partition-config.txt give as OpenSM's behaviour without partition
// manager. Debian 12's opensm package ships no partitions.conf (dpkg -L opensm: /etc/opensm is empty).
TEST(PartitionsParseTest, OpensmsDefaultRule) {
  const Partition p = parse_one("Default=0x7fff,ipoib:ALL=full;\n");
  EXPECT_EQ(p.name, "Default");
  EXPECT_EQ(p.pkey, 0x7fff);
  EXPECT_TRUE(p.ipoib);
  EXPECT_EQ(p.members, (std::vector<PartitionMember>{{"ALL", "full"}}));
  EXPECT_EQ(p.line, 1);
  EXPECT_EQ(ipoib_mtu_limit(p), 2044);  // captured: broadcast group mtu=4 rate=3 (the defaults)
}

TEST(PartitionsParseTest, Members) {
  struct Case {
    const char* text;
    std::vector<PartitionMember> members;
  };
  const std::vector<Case> cases = {
      // captured: ALL full=0 (a member without a flag is limited)
      {"P=0x10 : ALL;", {{"ALL", "limited"}}},
      // captured: PORT guid=0x4d2 full=0, 0x0002c90300001234 full=1 (both: full without allow_both_pkeys),
      // A -> ALL, ALL_ -> ALL_CAS (type 1), S -> SELF, N -> NONE (nothing), ALL_C -> CAS, ALL_S -> switches
      // full, ALL_R -> routers limited
      {"P=0x10 : 1234, 0x0002C90300001234=both, A, ALL_, S, N, ALL_C, ALL_S=full, ALL_R=limited;",
       {{"0x00000000000004d2", "limited"},
        {"0x0002c90300001234", "both"},
        {"ALL", "limited"},
        {"ALL_CAS", "limited"},
        {"SELF", "limited"},
        {"ALL_CAS", "limited"},
        {"ALL_SWITCHES", "full"},
        {"ALL_ROUTERS", "limited"}}},
      // captured: "SELF=" is full (the empty word is a prefix of "full"); d=f is defmember=full
      {"P=0x10, d=f : ALL, SELF=;", {{"ALL", "full"}, {"SELF", "full"}}},
      // captured: defmember=both applies to 0x1 and 02 (octal, strtoull base 0)
      {"R=0x12,defmember=both : 0x1 , 02;", {{"0x0000000000000001", "both"}, {"0x0000000000000002", "both"}}},
      // captured: unknown port flag: limited with a warning
      {"P=0x10 : ALL=x;", {{"ALL", "limited"}}},
      {"P=0x10 : NONE;", {}},
      {"P=0x10 : ;", {}},
      // captured: blanks around every delimiter
      {"P = 0x10 , ipoib , mtu = 5 : ALL = full , SELF = limited ;", {{"ALL", "full"}, {"SELF", "limited"}}},
      {"P=0x10 : ALL=f, SELF=l, ALL_SWITCHES=b;", {{"ALL", "full"}, {"SELF", "limited"}, {"ALL_SWITCHES", "both"}}},
  };
  for (const Case& c : cases) EXPECT_EQ(parse_one(c.text).members, c.members) << c.text;
}

TEST(PartitionsParseTest, HeaderNamesAndPkeys) {
  struct Case {
    const char* text;
    std::string name;
    std::optional<uint16_t> pkey;
  };
  const std::vector<Case> cases = {
      {"10 : ALL;", "", 10},           // captured: a name of digits without '=' is the P_Key (decimal)
      {"=0x20 : ALL;", "", 0x20},      // captured: no name; OpenSM logs it as "0020"
      {"N : ALL;", "N", std::nullopt},  // captured: P_Key generated (0x0001)
      {"Q=0 : ALL;", "Q", std::nullopt},
      {"R=0x8000:ALL;", "R", std::nullopt},      // captured: membership bit stripped, 0: generated
      {"S=0x17fff:ALL;", "S", 0x7fff},           // captured: cast to 16 bits, then 15
      {"T=0xffff:ALL;", "T", 0x7fff},            // captured: 0x7fff
      {"P1=0x8001 : ALL;", "P1", 0x0001},        // captured: 0x0001
      {"My Part=0x10 : ALL ;", "My Part", 0x10},  // captured: inner blanks are part of the name
  };
  for (const Case& c : cases) {
    const Partition p = parse_one(c.text);
    EXPECT_EQ(p.name, c.name) << c.text;
    EXPECT_EQ(p.pkey, c.pkey) << c.text;
  }
}

TEST(PartitionsParseTest, EveryFlag) {
  // captured: MCG rate=12 mtu=5 qkey=0x1234 tclass=0 (TClass=256 truncated to 8 bits), indx0=1, ALL full
  // (d=f); scope=16 and FlowLabel=0x100000 skipped; qkey and tclass (lower case) unknown.
  const std::string text =
      "P=0x10, mtu=0, rate, m=5, r=12, s=3, scope=5, scope=16, sl=3, Q_Key=0x1234, TClass=256, "
      "FlowLabel=0x100000, qkey=5, tclass=2, i, indx0, d=f : ALL, SELF=;\n";
  const Partition p = parse_one(text);
  EXPECT_TRUE(p.ipoib);
  EXPECT_TRUE(p.indx0);
  EXPECT_EQ(p.flags.mtu, 5u);
  EXPECT_EQ(p.flags.rate, 12u);
  EXPECT_EQ(p.flags.scopes, (std::vector<uint32_t>{3, 5}));
  EXPECT_EQ(p.flags.sl, 3u);  // kept as written; OpenSM uses it only with qos TRUE
  EXPECT_EQ(p.flags.q_key, 0x1234u);
  EXPECT_EQ(p.flags.tclass, 0u);
  EXPECT_EQ(p.flags.flow_label, std::nullopt);
  EXPECT_EQ(warnings_of(text), (std::vector<std::string>{
                                   "PARSE WARN: line 1: flag 'mtu' requires valid value - skipped",
                                   "PARSE WARN: line 1: flag 'rate' requires valid value - skipped",
                                   "PARSE WARN: line 1: flag 'scope' requires valid value - skipped",
                                   "PARSE WARN: line 1: flag 'TClass' requires valid value - using '0'",
                                   "PARSE WARN: line 1: flag 'FlowLabel' requires valid value - skipped",
                                   "PARSE WARN: line 1: unrecognized partition flag 'qkey' - ignored",
                                   "PARSE WARN: line 1: unrecognized partition flag 'tclass' - ignored",
                               }));

  // captured: MCG rate=16 mtu=5 qkey=0x1b tclass=8 flow=7 (Q, T, F prefixes)
  const Partition q = parse_one("P=0x10, ipoib, mtu=5, rate=16, sl=2, scope=2, scope=5, Q=0x1b, T=8, F=7 : ALL;");
  EXPECT_EQ(q.flags.q_key, 0x1bu);
  EXPECT_EQ(q.flags.tclass, 8u);
  EXPECT_EQ(q.flags.flow_label, 7u);
  EXPECT_EQ(q.flags.scopes, (std::vector<uint32_t>{2, 5}));

  // captured: "mtu=0" is stored despite "skipped": the broadcast group gets mtu 0 and rate 0.
  const Partition z = parse_one("P=0x10, ipoib, mtu=0, rate= : ALL;");
  EXPECT_EQ(z.flags.mtu, 0u);
  EXPECT_EQ(z.flags.rate, 0u);
  EXPECT_EQ(ipoib_mtu_limit(z), std::nullopt);

  // captured: suspicious value used; sl truncated to 32 bits (3); FlowLabel=5x skipped
  EXPECT_EQ(parse_one("P=0x10, ipoib, mtu=4x : ALL;").flags.mtu, 4u);
  EXPECT_EQ(warnings_of("P=0x10, ipoib, mtu=4x : ALL;"),
            (std::vector<std::string>{"PARSE WARN: line 1: suspicious val=(4x) detected. flag=(mtu)"}));
  const Partition s = parse_one("P=0x10, ipoib, sl=0x100000003, FlowLabel=5x : ALL;");
  EXPECT_EQ(s.flags.sl, 3u);
  EXPECT_EQ(s.flags.flow_label, std::nullopt);

  // captured: an empty flag is 'mtu' without a value
  EXPECT_EQ(warnings_of("P=0x10,,ipoib : ALL;"),
            (std::vector<std::string>{"PARSE WARN: line 1: flag 'mtu' requires valid value - skipped"}));
  EXPECT_EQ(warnings_of("P=0x10, defmember=x : ALL;"),
            (std::vector<std::string>{
                "PARSE WARN: line 1: flag 'defmember' requires valid value (limited or full or both) - skipped"}));
  EXPECT_EQ(warnings_of("P=0x10 : ALL=bogus;"),
            (std::vector<std::string>{"PARSE WARN: line 1: unrecognized port flag 'bogus'. Assume 'limited'"}));
  EXPECT_FALSE(parse_one("P=0x10, in : ALL;").ipoib);  // "in" is no prefix of ipoib, nor exactly indx0
}

TEST(PartitionsParseTest, LinesCommentsAndMultipleDefinitions) {
  struct Case {
    const char* name;
    std::string text;
    std::vector<std::pair<std::string, int>> name_and_line;
  };
  const std::vector<Case> cases = {
      // captured: members continue over lines until ';'
      {"multi-line", "P=0x10 :\n  ALL=full,\n  SELF;\n", {{"P", 1}}},
      // captured: the last definition may lack its ';'
      {"no final ;", "P=0x10 : ALL=full", {{"P", 1}}},
      {"comment after ;", "P=0x10 : ALL=full ; # c\n", {{"P", 1}}},
      // captured: '#' cuts the ';' in the comment; the definition goes on at line 2
      {"comment hides ;", "# head\nP=0x10 : ALL # c ; x\n , SELF;\nQ=0x11:ALL;", {{"P", 2}, {"Q", 4}}},
      {"three on a line", "P=0x10 : ALL=full; Q=0x11 : SELF=full; R=0x12 : 0x1;", {{"P", 1}, {"Q", 1}, {"R", 1}}},
  };
  for (const Case& c : cases) {
    auto parsed = parse_partitions_conf(c.text);
    ASSERT_TRUE(parsed) << c.name << ": " << parsed.error().message;
    std::vector<std::pair<std::string, int>> got;
    for (const Partition& p : parsed->partitions) got.emplace_back(p.name, p.line);
    EXPECT_EQ(got, c.name_and_line) << c.name;
  }
  const Partition multi = parse_one("P=0x10 :\n  ALL=full,\n  SELF;\n");
  EXPECT_EQ(multi.members, (std::vector<PartitionMember>{{"ALL", "full"}, {"SELF", "limited"}}));
}

TEST(PartitionsParseTest, FatalErrorsWithTheirLines) {
  struct Case {
    std::string text;
    int line;
    std::string message;
  };
  const std::vector<Case> cases = {
      // captured: each of these makes osm_prtn_config_parse_file return 1 (OpenSM drops the file)
      {"P=0x10,\n ipoib : ALL;\n", 1, "PARSE ERROR: line 1: no partition definition found"},
      {"P=0x10 : 0xzz;\n", 1, "PARSE ERROR: line 1: bad PortGUID"},
      {"\nP=0x10 : 0;\n", 2, "PARSE ERROR: line 2: bad PortGUID"},
      {"P=0x10 : all;\n", 1, "PARSE ERROR: line 1: bad PortGUID"},
      {"P=0x10 : ALL=full, 0x1=full junk, 0x2 0x3;\n", 1, "PARSE ERROR: line 1: bad PortGUID"},
      {"P=abc : ALL;\n", 1, "PARSE ERROR: line 1: bad partition definition"},
      {"P= : ALL;\n", 1, "PARSE ERROR: line 1: bad partition definition"},
      {"1abc : ALL;\n", 1, "PARSE ERROR: line 1: bad partition definition"},
      {"P=0x10=5 : ALL;\n", 1, "PARSE ERROR: line 1: bad partition definition"},
      // captured: CRLF: the "\r" after ';' is a definition without ':'
      {"P=0x10 : ALL=full;\r\n", 1, "PARSE ERROR: line 1: no partition definition found"},
      {"A=0x1 : ALL;\nB=0x2 : ALL;\nC=0x3 ALL;\n", 3, "PARSE ERROR: line 3: no partition definition found"},
      // captured: the mgid error (OpenSM then fails on "sl=1" as a definition)
      {"P=0x10 : mgid=zz, sl=1;\n", 1, "PARSE ERROR partition conf file line 1: mgid \"zz\": gid is not multicast"},
      {"P=0x10 : mgid=fe80::1\n;", 1,
       "PARSE ERROR partition conf file line 1: mgid \"fe80::1\": gid is not multicast"},
  };
  for (const Case& c : cases) {
    auto parsed = parse_partitions_conf(c.text);
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().kind, ErrorKind::kInvalidSpec);
    EXPECT_EQ(parsed.error().message, c.message) << c.text;
    ASSERT_EQ(parsed.error().diagnostics.size(), 1u);
    EXPECT_EQ(parsed.error().diagnostics[0].line, c.line) << c.text;
  }
}

TEST(PartitionsParseTest, RefusesWhatOpensmReadsFromOutsideTheLine) {
  struct Case {
    std::string text;
    int line;
  };
  const std::vector<Case> cases = {
      // captured: "R=0x12:\n;" fails at line 2 with stale bytes of line 1; "P:ALL;;" too
      {"R=0x12:\n;\n", 2},
      {"P=0x10 : ALL=full;;\n", 1},
      {"P=0x10 : ALL\n  ;\n", 2},
      // captured: the group gets Q_Key 0x11 from the next definition, which is lost
      {"P=0x10 : mgid=ff12::1; Q=0x11 : ALL;\n", 1},
      {std::string("P=0x10 : ") + std::string(4090, ' ') + "ALL;\n", 1},
  };
  for (const Case& c : cases) {
    auto parsed = parse_partitions_conf(c.text);
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().diagnostics.at(0).line, c.line) << c.text;
  }
}

TEST(PartitionsParseTest, NoDefinitionIsAnError) {
  // captured: RC 1 for both: osm_prtn_make_partitions falls back to the default configuration.
  for (const char* text : {"", "# only a comment\n\n", "   \n\t\n"}) {
    auto parsed = parse_partitions_conf(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().diagnostics.at(0).line, 0);
  }
}

TEST(PartitionsParseTest, MulticastGroups) {
  // doc/partition-config.txt's example, its bare mgid on line 3 ended with ',' (see
  // ABareMgidAtTheEndOfALineReadsStaleBytes). captured (with the bare line 3): ff12:401b::0707 and
  // ff12:601b::16 with mtu=4 rate=3 and Q_Key 0x0b1b; ff12::1 with sl=1 Q_Key 0xdeadbeef mtu=2; an
  // 'mtu' warning for the group without flags on line 3 (there: the '\0' that replaced line 2's ','
  // at the byte after line 3's end; with the ',': the empty rest of the line, by parse_group_flag).
  const std::string text =
      "Default=0x7fff,ipoib:\n"
      "   mgid=ff12:401b::0707,sl=1 # random\n"
      "   mgid=ff12:601b::16,\n"
      "   mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2\n"
      "   ALL=full;\n";
  const Partition p = parse_one(text);
  ASSERT_EQ(p.mgroups.size(), 3u);
  EXPECT_EQ(p.mgroups[0].mgid, "ff12:401b::707");
  EXPECT_EQ(p.mgroups[0].flags.sl, 1u);
  EXPECT_EQ(p.mgroups[1].mgid, "ff12:601b::16");
  EXPECT_EQ(p.mgroups[2].flags.q_key, 0xdeadbeefu);
  EXPECT_EQ(p.mgroups[2].flags.mtu, 2u);
  EXPECT_EQ(p.members, (std::vector<PartitionMember>{{"ALL", "full"}}));
  EXPECT_EQ(warnings_of(text),
            (std::vector<std::string>{"PARSE WARN: line 3: flag 'mtu' requires valid value - skipped"}));
  // captured: unrecognized mgroup flag; the IP group whose rate differs from the partition's is not created
  EXPECT_EQ(warnings_of("P=0x10, scope=5, mtu=5: mgid=ff12::1, T=3, x=1;"),
            (std::vector<std::string>{"PARSE WARN: line 1: unrecognized mgroup flag 'x' - ignored"}));
  EXPECT_EQ(warnings_of("P=0x10: mgid=ff12:401b::1, rate=7;"),
            (std::vector<std::string>{"IP MC group (ff12:401b::1) specified with invalid rate (7): partition pkey = "
                                      "0x0010 (P) [Partition broadcast group rate = 3]"}));
}

// osm_prtn_config.c: for `mgid=GID` alone at the end of a line (no ',' after it, no ';' in the
// line), parse_name_token returns the token's length plus one, past the '\0' at the end of the
// line's string, and mgroup_create parses the group's flags from there: bytes of longer earlier
// lines still in osm_prtn_config_parse_file's line buffer. A comment holding "mtu=1" at that offset
// gave the group Mtu 0x81 on the real OpenSM 3.3.23 (tests/ibsim_opensm, partitions). Refused, with
// the way out; ',' or ';' after the GID is read safely.
TEST(PartitionsParseTest, ABareMgidAtTheEndOfALineReadsStaleBytes) {
  const std::string bare =
      "# a longer line first: 0123456789, mtu=1\n"
      "G=0x0030 :\n"
      "    mgid=ff12:1234::1\n"
      "    ALL=full;\n";
  auto parsed = parse_partitions_conf(bare);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().diagnostics.at(0).line, 3);
  EXPECT_NE(parsed.error().message.find("reads the bytes after the line in its buffer as the group's flags; end it "
                                        "with ','"),
            std::string::npos)
      << parsed.error().message;
  // The last line of a file without its newline: the same.
  EXPECT_FALSE(parse_partitions_conf("G=0x0030 : ALL=full,\n  mgid=ff12:1234::1"));
  for (const char* safe : {"G=0x0030 :\n    mgid=ff12:1234::1,\n    ALL=full;\n",
                           "G=0x0030 : ALL=full, mgid=ff12:1234::1;\n"}) {
    auto ok = parse_partitions_conf(safe);
    ASSERT_TRUE(ok) << safe << ": " << ok.error().message;
    ASSERT_EQ(ok->partitions.at(0).mgroups.size(), 1u);
    EXPECT_EQ(ok->partitions[0].mgroups[0], (PartitionMulticastGroup{"ff12:1234::1", {}})) << safe;
  }
}

TEST(PartitionsParseTest, DuplicatePkeysAreMergedWithAWarning) {
  // captured: DUP name='T' pkey=0x7fff prev='S'
  auto parsed = parse_partitions_conf("S=0x17fff:ALL;\nT=0xffff:ALL;\n");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->partitions.size(), 2u);
  EXPECT_EQ(parsed->warnings,
            (std::vector<PartitionsWarning>{
                {2, "Duplicated partition definition: 'T' (0x7fff) prev name 'S'.  Will use it"}}));
}

Partition make(std::string name, uint16_t pkey, bool ipoib, std::vector<PartitionMember> members) {
  Partition p;
  p.name = std::move(name);
  p.pkey = pkey;
  p.ipoib = ipoib;
  p.members = std::move(members);
  return p;
}

TEST(PartitionsRenderTest, DefinitionText) {
  Partition d = make("Default", 0x7fff, true, {{"ALL", "full"}});
  d.flags.mtu = 5;
  EXPECT_EQ(render_partition(d), "Default=0x7fff, ipoib, mtu=5 : ALL=full;");
  Partition every = make("Storage", 0x0012, true, {{"0x0002c90300001234", "limited"}, {"SELF", "both"}});
  every.indx0 = true;
  every.flags = {.mtu = 4, .rate = 16, .sl = 1, .scopes = {5, 2}, .q_key = 0x1b, .tclass = 8, .flow_label = 7};
  EXPECT_EQ(render_partition(every),
            "Storage=0x0012, ipoib, mtu=4, rate=16, sl=1, scope=2, scope=5, Q_Key=0x1b, TClass=8, FlowLabel=7, indx0 : "
            "0x0002c90300001234=limited, SELF=both;");
  EXPECT_EQ(render_partition(make("Empty", 0x20, false, {})), "Empty=0x0020 : NONE;");
  Partition groups = make("G", 0x30, true, {});
  groups.mgroups = {{"ff12:401b::707", {.sl = 1}}, {"ff12::1", {}}};
  // A group without flags of its own ends with ',' (ABareMgidAtTheEndOfALineReadsStaleBytes), and
  // reads back as it was.
  EXPECT_EQ(render_partition(groups), "G=0x0030, ipoib :\n    mgid=ff12:401b::707, sl=1\n    mgid=ff12::1,\n    NONE;");
  auto back = parse_partitions_conf(render_partition(groups) + "\n");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->partitions.at(0), groups);
}

std::vector<Partition> sample() {
  Partition d = make("Default", 0x7fff, true, {{"ALL", "full"}, {"SELF", "full"}});
  d.flags.mtu = 5;
  d.flags.rate = 7;
  Partition storage = make("storage", 0x0012, false, {{"0x946dae0300f14a20", "full"}, {"ALL_CAS", "limited"}});
  storage.flags.scopes = {2, 5};
  storage.indx0 = true;
  Partition groups = make("mc", 0x0013, true, {{"ALL_SWITCHES", "both"}});
  groups.flags.q_key = 0x12345;
  groups.mgroups = {{"ff12:401b:8013::707", {.sl = 2, .tclass = 3}}, {"ff15::2", {.rate = 3, .flow_label = 9}}};
  return {d, storage, groups, make("empty", 0x0014, false, {})};
}

TEST(PartitionsRenderTest, RoundTripsThroughTheParser) {
  const std::vector<Partition> wanted = sample();
  const std::string text = render_partitions_conf("", wanted);
  auto parsed = parse_partitions_conf(text);
  ASSERT_TRUE(parsed) << parsed.error().message << "\n" << text;
  EXPECT_EQ(parsed->partitions, wanted) << text;
  // Only the known spurious warning-free forms are written: groups without flags would warn.
  EXPECT_TRUE(parsed->warnings.empty()) << parsed->warnings.at(0).message;
  EXPECT_TRUE(validate_partitions(wanted).empty());
}

TEST(PartitionsRenderTest, KeepsCommentsAndIsIdempotent) {
  const std::string existing =
      "# /etc/opensm/partitions.conf\n"
      "#   site partitions\n"
      "\n"
      "Default=0x7fff,ipoib:ALL=full; # old default\n"
      "  # storage network\n"
      "storage=0x12 :\n"
      "   0x1=full,\n"
      "   0x2;\n"
      "\n\n";
  const std::vector<Partition> wanted = sample();
  const std::string once = render_partitions_conf(existing, wanted);
  std::string expected =
      "# /etc/opensm/partitions.conf\n"
      "#   site partitions\n"
      "\n"
      "  # storage network\n"
      "\n";
  for (const Partition& p : wanted) expected += render_partition(p) + "\n";
  EXPECT_EQ(once, expected);
  EXPECT_EQ(render_partitions_conf(once, wanted), once);
  // A file without comments gets a header, then stays as it is.
  const std::string fresh = render_partitions_conf("Default=0x7fff:ALL;", wanted);
  EXPECT_EQ(fresh.rfind("# OpenSM partitions", 0), 0u);
  EXPECT_EQ(render_partitions_conf(fresh, wanted), fresh);
  // A last comment line without newline gets one; the result is stable.
  const std::string no_newline = render_partitions_conf("# x", {make("Default", 0x7fff, true, {{"ALL", "full"}})});
  EXPECT_EQ(no_newline, "# x\n\nDefault=0x7fff, ipoib : ALL=full;\n");
  EXPECT_EQ(render_partitions_conf(no_newline, {make("Default", 0x7fff, true, {{"ALL", "full"}})}), no_newline);
}

TEST(PartitionsConversionTest, MtuCodes) {
  const std::vector<std::pair<int, uint32_t>> table = {{256, 1}, {512, 2}, {1024, 3}, {2048, 4}, {4096, 5}};
  for (const auto& [bytes, code] : table) {
    EXPECT_EQ(mtu_code_from_bytes(bytes), code);
    EXPECT_EQ(mtu_bytes_from_code(code), bytes);
  }
  for (int bytes : {0, 128, 1500, 8192, -1}) EXPECT_EQ(mtu_code_from_bytes(bytes), std::nullopt) << bytes;
  for (uint32_t code : {0u, 6u, 7u}) EXPECT_EQ(mtu_bytes_from_code(code), std::nullopt) << code;
}

TEST(PartitionsConversionTest, RateCodes) {
  const std::vector<std::pair<double, uint32_t>> table = {
      {2.5, 2}, {10, 3},  {30, 4},  {5, 5},   {20, 6},   {40, 7},   {60, 8},   {80, 9},   {120, 10}, {14, 11}, {56, 12},
      {112, 13}, {168, 14}, {25, 15}, {100, 16}, {200, 17}, {300, 18}, {28, 19}, {50, 20}, {400, 21}, {600, 22}};
  EXPECT_EQ(opensm_rate_codes().size(), table.size());
  for (const auto& [gbps, code] : table) {
    EXPECT_EQ(rate_code_from_gbps(gbps), code) << gbps;
    EXPECT_EQ(rate_gbps_from_code(code), gbps) << code;
  }
  for (double gbps : {0.0, 1.0, 800.0, 1200.0}) EXPECT_EQ(rate_code_from_gbps(gbps), std::nullopt) << gbps;
  for (uint32_t code : {0u, 1u, 23u, 24u}) EXPECT_EQ(rate_gbps_from_code(code), std::nullopt) << code;
}

TEST(PartitionsIpoibTest, MtuLimit) {
  struct Case {
    std::optional<uint32_t> mtu;
    bool ipoib;
    std::optional<int> limit;
  };
  const std::vector<Case> cases = {
      {std::nullopt, true, 2044},  // OpenSM's default broadcast MTU, 2048
      {1, true, 252},   {2, true, 508},          {3, true, 1020}, {4, true, 2044},
      {5, true, 4092},  {6, true, std::nullopt}, {0, true, std::nullopt},
      {5, false, std::nullopt},  // no broadcast group
  };
  for (const Case& c : cases) {
    Partition p = make("P", 0x10, c.ipoib, {{"ALL", "full"}});
    p.flags.mtu = c.mtu;
    EXPECT_EQ(ipoib_mtu_limit(p), c.limit) << c.mtu.value_or(99);
  }
}

TEST(PartitionsValidateTest, Problems) {
  struct Case {
    const char* name;
    std::vector<Partition> partitions;
    std::vector<std::string> fields;  // "index:field" of each problem
  };
  Partition bad_codes = make("codes", 0x20, true, {{"ALL", "full"}});
  bad_codes.flags = {.mtu = 6, .rate = 23, .sl = 16, .scopes = {0}, .q_key = 0, .tclass = 256, .flow_label = 0x100000};
  Partition bad_group = make("group", 0x21, true, {{"ALL", "full"}});
  bad_group.mgroups = {{"fe80::1", {.mtu = 0}}};
  Partition no_pkey = make("nopkey", 0, false, {{"ALL", "full"}});
  no_pkey.pkey.reset();
  const std::vector<Case> cases = {
      {"fine", sample(), {}},
      {"names",
       {make("", 0x1, false, {}), make("a b", 0x2, false, {}), make("a:b", 0x3, false, {}),
        make("1st", 0x4, false, {}), make(std::string(32, 'x'), 0x5, false, {}), make(std::string(31, 'x'), 0x6, false, {})},
       {"0:name", "1:name", "2:name", "3:name", "4:name"}},
      {"pkeys",
       {no_pkey, make("zero", 0, false, {}), make("full", 0x8001, false, {}), make("other", 0x7fff, true, {})},
       {"0:pkey", "1:pkey", "2:pkey", "3:pkey"}},
      {"codes", {bad_codes}, {"0:mtu", "0:rate", "0:sl", "0:scopes", "0:q_key", "0:tclass", "0:flow_label"}},
      {"group", {bad_group}, {"0:mgroups[0]", "0:mgroups[0].mtu"}},
      {"members",
       {make("m", 0x30, false,
             {{"all", "full"}, {"0x0", "full"}, {"0x0000000000000000", "full"}, {"0x946DAE0300F14A20", "full"},
              {"0x946dae0300f14a20", "member"}, {"ALL_CAS", "both"}})},
       {"0:members[0]", "0:members[1]", "0:members[2]", "0:members[3]", "0:members[4]"}},
      {"duplicates",
       {make("a", 0x40, false, {}), make("a", 0x41, false, {}), make("b", 0x40, false, {})},
       {"1:name", "2:pkey"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> got;
    for (const PartitionProblem& p : validate_partitions(c.partitions)) {
      got.push_back(std::to_string(p.index) + ":" + p.field);
      EXPECT_FALSE(p.message.empty());
    }
    EXPECT_EQ(got, c.fields) << c.name;
  }
}

TEST(PartitionsValidateTest, DefaultPartitionNote) {
  EXPECT_EQ(default_partition_note(sample()), std::nullopt);
  EXPECT_NE(default_partition_note({make("Default", 0x7fff, false, {{"ALL", "full"}})}), std::nullopt);
  EXPECT_NE(default_partition_note({make("storage", 0x12, true, {{"ALL", "full"}})}), std::nullopt);
  EXPECT_NE(default_partition_note({}), std::nullopt);
}

}  // namespace reconcilers_partitions_test
}  // namespace rdmactl::reconcilers::subnet_manager
