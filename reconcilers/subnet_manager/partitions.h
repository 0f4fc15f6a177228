// SPDX-License-Identifier: Apache-2.0
// OpenSM's partitions.conf as data: parsed, checked and written the way OpenSM 3.3.23 (Debian 12)
// reads it.
//
// OpenSM reads /etc/opensm/partitions.conf (osm_base.h OSM_DEFAULT_PARTITION_CONFIG_FILE; opensm.conf
// partition_config_file) with osm_prtn_config.c osm_prtn_config_parse_file: line by line, '#' cuts
// the rest of a line, a definition `Name=PKey[,flag[=value]]... : member[=full|limited|both], ... ;`
// ends at ';' and may continue its member list over the following lines (the header up to ':' must
// be on one line), and the last definition of a file may lack its ';'. Any fatal error ("PARSE
// ERROR: line N: ...") or a file without a single definition makes OpenSM drop the whole file and
// run as if it did not exist (osm_prtn.c osm_prtn_make_partitions: "Partition configuration in
// error; retrying with default config"), i.e. with `Default=0x7fff,ipoib : ALL=full;`. Everything
// else OpenSM accepts, at most with a "PARSE WARN" in its log. These functions follow those rules,
// checked against OpenSM's own parser compiled from its 3.3.23 source (tests cite the captures), so
// that rdmactl refuses what OpenSM would drop before OpenSM sees it. They are pure (no file I/O).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl::reconcilers::subnet_manager {

// P_Key of OpenSM's default partition (ib_types.h IB_DEFAULT_PARTIAL_PKEY).
inline constexpr uint16_t kDefaultPartitionPkey = 0x7fff;

// One entry of a member list, as OpenSM resolves it (osm_prtn_config.c partition_add_port).
struct PartitionMember {
  // "ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF" or a port GUID as "0x" + 16 lower-case
  // hex digits. OpenSM matches keywords by prefix ("A" is ALL) and reads GUIDs with strtoull base 0;
  // parsing writes the full keyword and the canonical GUID. NONE and empty entries add nobody and are
  // not kept: an empty member list is written as "NONE".
  std::string who;
  // "full", "limited" or "both": always the effective one. A member without "=..." takes the
  // definition's defmember flag (default limited), so `ALL` alone is limited; an unknown word is
  // limited too (with a warning). "both" is full and limited only with opensm.conf allow_both_pkeys,
  // otherwise full (partition_add_all/partition_add_port).
  std::string membership;

  bool operator==(const PartitionMember&) const = default;
};

// Flags OpenSM gives a multicast group (osm_prtn_config.c struct group_flags, parse_group_flag).
// Values are what OpenSM holds after parsing, codes included; unset: not written, the default applies.
struct GroupFlags {
  std::optional<uint32_t> mtu;   // IB MTU code (ib_types.h IB_MTU_LEN_*): 1..5 = 256..4096; default 4
  std::optional<uint32_t> rate;  // IB rate code (ib_types.h IB_PATH_RECORD_RATE_*); default 3 (10 Gb/s)
  std::optional<uint32_t> sl;    // 0..15; OpenSM uses it only with opensm.conf qos TRUE (partition_create)
  std::vector<uint32_t> scopes;  // 1..15, sorted, unique; each gives a group (not the IPoIB broadcast group)
  std::optional<uint32_t> q_key;      // Q_Key; default 0x0b1b for IP groups (OSM_IPOIB_BROADCAST_MGRP_QKEY)
  std::optional<uint32_t> tclass;     // 0..255
  std::optional<uint32_t> flow_label; // 0..0xfffff

  bool operator==(const GroupFlags&) const = default;
};

// A multicast group precreated in a partition: `mgid=<IPv6 form>[,flag=value]...` in the member list.
struct PartitionMulticastGroup {
  std::string mgid;  // inet_ntop's form of the MGID, e.g. "ff12:401b::707"
  GroupFlags flags;  // only the group's own; the rest OpenSM takes from the partition (mgroup_create)

  bool operator==(const PartitionMulticastGroup&) const = default;
};

// One definition of the file.
struct Partition {
  std::string name;  // may be empty in a file: OpenSM then names it by its P_Key ("%04x")
  // The P_Key's low 15 bits, as OpenSM keeps them (osm_prtn_make_new strips the membership bit 0x8000;
  // partition_create casts strtoul's value to 16 bits). Unset (not given, or 0/0x8000): OpenSM
  // generates one, or reuses the partition of the same name.
  std::optional<uint16_t> pkey;
  bool ipoib = false;  // OpenSM creates the IPoIB broadcast group ff12:401b:<pkey|0x8000>::ffff:ffff
  bool indx0 = false;  // the P_Key goes to block 0 index 0 of members' P_Key tables
  GroupFlags flags;    // for the broadcast group (its scopes are ignored) and inherited by `mgroups`
  std::vector<PartitionMember> members;  // in file order
  std::vector<PartitionMulticastGroup> mgroups;
  int line = 0;  // 1-based line of the definition in the parsed text; 0 when not from a file
  // Its bytes in the parsed text: from its name to its ';' (or the last member of a last
  // definition without one), comments inside a multi-line definition included.
  size_t begin = 0;
  size_t end = 0;

  // The line a definition sits on is not part of what it means.
  bool operator==(const Partition& other) const {
    return name == other.name && pkey == other.pkey && ipoib == other.ipoib && indx0 == other.indx0 &&
           flags == other.flags && members == other.members && mgroups == other.mgroups;
  }
};

// Something OpenSM accepts but logs, in OpenSM's words ("PARSE WARN: line 3: flag 'mtu' requires
// valid value - skipped"), or notes of the same kind (duplicate P_Keys, IP group mismatches).
struct PartitionsWarning {
  int line = 0;
  std::string message;

  bool operator==(const PartitionsWarning&) const = default;
};

struct PartitionsConf {
  std::vector<Partition> partitions;  // one per definition, in file order (same P_Key: OpenSM merges)
  std::vector<PartitionsWarning> warnings;
};

// The file as OpenSM reads it. Errors are kInvalidSpec with OpenSM's wording and line ("PARSE ERROR:
// line 2: bad PortGUID") in the message and in one diagnostic (its `line`; `file` left for the caller).
// Besides OpenSM's four fatal errors, rdmactl also refuses what OpenSM reads from outside the line
// (a ';' with nothing before it, an mgid without flags followed by more text after its ';', an
// mgid without flags at the end of a line without ',' or ';': OpenSM reads stale bytes), an
// MGID that is not multicast, a line longer than OpenSM's 4094-byte buffer, and a file without a
// definition (which OpenSM replaces with its default configuration).
Result<PartitionsConf> parse_partitions_conf(std::string_view text);

// One definition in rdmactl's form, without newline for a definition without mgroups:
//   `Default=0x7fff, ipoib, mtu=5 : ALL=full, SELF=full;`
// flags in the order ipoib, mtu, rate, sl, scope..., Q_Key, TClass, FlowLabel, indx0; members always
// with their membership; "NONE" for no members. Groups go one per line before the member line, a
// group without flags of its own ending with ',' (`mgid=ff12::1,`), the form OpenSM reads safely.
std::string render_partition(const Partition& partition);

// The file with `wanted` as its definitions, in order, after the comment and blank lines of
// `existing` (kept byte for byte, in order; trailing blank lines dropped, one blank line before the
// definitions). Definition lines of `existing`, comments at their ends included, are replaced. A
// file without comments gets a one-line header. Rendering its own output again gives the same bytes.
// An empty `wanted` gives a file without definitions, which OpenSM treats as absent.
std::string render_partitions_conf(std::string_view existing, const std::vector<Partition>& wanted);

// `existing` with `wanted` as its definitions, every other byte kept: a definition equal to the
// wanted one of its P_Key (by name when it has none) stays as written, one that differs is
// replaced in place by render_partition (the comments inside a multi-line definition go with
// it), one not wanted is removed (with its line when nothing else is on it), and wanted ones the
// file lacks are appended in order. Comments, inline ones included, blank lines, other
// definitions and their layout stay byte for byte. std::nullopt when OpenSM would drop `existing`
// (render_partitions_conf then keeps its comment lines).
std::optional<std::string> edit_partitions_conf(std::string_view existing, const std::vector<Partition>& wanted);

// IB MTU codes (ib_types.h IB_MTU_LEN_256 = 1 .. IB_MTU_LEN_4096 = 5) <-> bytes.
std::optional<uint32_t> mtu_code_from_bytes(int bytes);
std::optional<int> mtu_bytes_from_code(uint32_t code);

// IB rate codes OpenSM 3.3.23 knows (ib_types.h IB_PATH_RECORD_RATE_2_5_GBS = 2 ..
// IB_PATH_RECORD_RATE_600_GBS = 22) <-> Gb/s. Newer OpenSM adds 23 (800) and 24 (1200): not here,
// since Debian 12's OpenSM would not know them.
struct RateCode {
  uint32_t code;
  double gbps;
};
const std::vector<RateCode>& opensm_rate_codes();
std::optional<uint32_t> rate_code_from_gbps(double gbps);
std::optional<double> rate_gbps_from_code(uint32_t code);

// A problem with a partition as the spec gives it: `index` into the list, `field` (name, pkey, mtu,
// rate, sl, scopes, tclass, flow_label, members[i], mgroups[i]) for the spec loader's field path.
struct PartitionProblem {
  size_t index = 0;
  std::string field;
  std::string message;

  bool operator==(const PartitionProblem&) const = default;
};

// What rdmactl refuses in partitions it is to write: a name that is empty, longer than OpenSM's 31
// characters, or holds a character of the syntax ("=,:;#", blanks, control characters) or starts
// with a digit; a P_Key that is unset, 0, or has the 0x8000 bit; P_Key 0x7fff under another name
// than "Default" (OpenSM keeps "Default"); codes OpenSM would pass on but no port accepts (mtu
// outside 1..5, unknown rates, sl > 15, scope outside 1..15, tclass > 255, flow_label > 0xfffff,
// q_key 0); members that are not a keyword or a non-zero canonical GUID, with a membership other
// than full/limited/both; non-multicast MGIDs; and two partitions with the same name or P_Key
// (OpenSM would merge them, keeping the first name and broadcast group).
std::vector<PartitionProblem> validate_partitions(const std::vector<Partition>& partitions);

// When no partition has P_Key 0x7fff, OpenSM still makes the Default partition with every port a
// limited member, its own port full, and no IPoIB broadcast group (osm_prtn.c prtn_make_default with
// no_config FALSE): IPoIB on P_Key 0x7fff cannot join. This says so; std::nullopt when the list
// defines 0x7fff with ipoib.
std::optional<std::string> default_partition_note(const std::vector<Partition>& partitions);

// The largest IPoIB netdev MTU in datagram mode that the partition's broadcast group allows: its IB
// MTU (OpenSM's default 2048 when unset) minus the 4-byte IPoIB header (linux
// drivers/infiniband/ulp/ipoib/ipoib_multicast.c ipoib_mcast_join_finish: priv->mcast_mtu =
// IPOIB_UD_MTU(ib_mtu_enum_to_int(broadcast mtu)); ipoib.h IPOIB_UD_MTU(ib_mtu) = ib_mtu -
// IPOIB_ENCAP_LEN, which is 4). std::nullopt when the partition has no IPoIB broadcast group or
// its mtu code is not one of 1..5.
std::optional<int> ipoib_mtu_limit(const Partition& partition);

}  // namespace rdmactl::reconcilers::subnet_manager
