// SPDX-License-Identifier: Apache-2.0
// The spec cache's entries (cache.h): a valid FabricSpec, keyed by the spec's bytes, its name and
// the program's build ID. Where they are kept is agent/cli/spec_cache.cpp.
//
// The entry is the typed model's fields in order, as varints, lengths and bytes, written and read
// by one field list per type (describe() below). Not JSON or CBOR through nlohmann-json: reading
// 4,096 interfaces back through its DOM took 265 ms, as much as the YAML it replaces; this takes a
// few ms. The format is this build's alone: the build ID in the key keeps another build from ever
// reading it.
//
// An entry is the magic, the format, the SHA-256 of the rest, then the rest: the spec's name and
// the typed spec. The reader checks the digest before it decodes a field, since a varint stays a
// varint with a bit flipped: one flipped bit on disk read back as MTU 9001 for the 9000 the spec
// says, and apply would write it. A mismatch is a miss, as an entry that does not decode is.
#include "agent/spec/cache.h"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "agent/core/digest.h"

namespace rdmactl {

// Every field of every type a FabricSpec holds, once, for both directions. A field added to spec.h
// and not here is lost on a cache hit: SpecCache.EveryFieldOfAFullSpecSurvives
// (tests/unit/spec/spec_cache_test.cpp) compares a spec that sets every field with its round trip,
// with the structs' own operator==.
template <class A> void describe(A& a, SourceMark& v) { a(v.file, v.line, v.column, v.path); }
template <class A> void describe(A& a, Diagnostic& v) { a(v.file, v.line, v.column, v.path, v.message); }
template <class A> void describe(A& a, Selector& v) { a(v.kind, v.value, v.port); }
template <class A> void describe(A& a, QosSpec& v) { a(v.profile, v.profile_priority, v.trust, v.dscp_to_priority, v.pfc); }
template <class A> void describe(A& a, EcnSpec& v) { a(v.priorities, v.cnp_dscp); }
template <class A> void describe(A& a, RoceSpec& v) { a(v.mode, v.tos); }
template <class A> void describe(A& a, IpoibSpec& v) { a(v.mode); }
template <class A> void describe(A& a, SriovSpec& v) { a(v.num_vfs); }
template <class A> void describe(A& a, PcieSpec& v) { a(v.max_read_request); }
template <class A> void describe(A& a, EthtoolRingsSpec& v) { a(v.rx, v.rx_mini, v.rx_jumbo, v.tx); }
template <class A> void describe(A& a, EthtoolChannelsSpec& v) { a(v.rx, v.tx, v.other, v.combined); }
template <class A> void describe(A& a, EthtoolPauseSpec& v) { a(v.autoneg, v.rx, v.tx); }
template <class A> void describe(A& a, EthtoolSpec& v) { a(v.rings, v.channels, v.pause); }
template <class A> void describe(A& a, FirmwareSpec& v) { a(v.version, v.images, v.policy, v.activation, v.allow_management_outage, v.origin); }
template <class A> void describe(A& a, InterfaceSpec& v) {
  a(v.selector, v.link_type, v.firmware, v.mtu, v.state, v.addresses, v.qos, v.ecn, v.roce, v.ipoib, v.sriov, v.nvconfig, v.pcie, v.irq_affinity, v.ethtool, v.rail, v.origin,
    v.field_origins, v.field_marks);
}
template <class A> void describe(A& a, PartitionMemberSpec& v) { a(v.who, v.membership); }
template <class A> void describe(A& a, PartitionSpec& v) { a(v.name, v.pkey, v.ipoib, v.mtu, v.rate, v.sl, v.members, v.origin); }
template <class A> void describe(A& a, SubnetManagerSpec& v) {
  a(v.enabled, v.priority, v.port, v.partitions, v.subnet, v.origin);
}
template <class A> void describe(A& a, SelftestSpec& v) { a(v.enabled, v.min_bandwidth_ratio, v.peers); }
template <class A> void describe(A& a, RailSpec& v) { a(v.name, v.subnets, v.mtu, v.origin); }
template <class A> void describe(A& a, NodeSpec& v) {
  a(v.interfaces, v.subnet_manager, v.sysctl, v.sysctl_origins, v.selftest, v.rails);
}
template <class A> void describe(A& a, NodeEntry& v) { a(v.match, v.spec, v.origin); }
template <class A> void describe(A& a, FabricExpectation& v) {
  a(v.link_width, v.link_speed, v.switches, v.cas, v.subnet_managers, v.thresholds, v.origin);
}
template <class A> void describe(A& a, SpecWarning& v) { a(v.check, v.diagnostic); }
// All but the text: the bytes the caller read.
template <class A> void describe(A& a, FabricSpec& v) {
  a(v.file, v.sha256, v.name, v.defaults, v.nodes, v.fabric, v.rails, v.warnings);
}

namespace {

// Writes fields: integers as LEB128 varints (signed ones zigzagged), a double's 8 bytes, a string
// or container as its length and then its bytes or elements, an optional as 0, or 1 and the value.
class Writer {
 public:
  template <class... T>
  void operator()(const T&... fields) {
    (one(fields), ...);
  }
  std::string take() { return std::move(bytes_); }

 private:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      bytes_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes_ += static_cast<char>(v);
  }
  void one(const std::string& v) {
    varint(v.size());
    bytes_ += v;
  }
  void one(bool v) { varint(v ? 1 : 0); }
  void one(int v) { varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v < 0 ? -1 : 0)); }
  void one(std::uint64_t v) { varint(v); }
  void one(std::uint32_t v) { varint(v); }
  void one(double v) {
    char raw[sizeof v];
    std::memcpy(raw, &v, sizeof v);
    bytes_.append(raw, sizeof raw);
  }
  void one(Selector::Kind v) { varint(static_cast<std::uint64_t>(v)); }
  template <class T>
  void one(const std::optional<T>& v) {
    varint(v ? 1 : 0);
    if (v) one(*v);
  }
  template <class T>
  void one(const std::vector<T>& v) {
    varint(v.size());
    for (const T& item : v) one(item);
  }
  template <class K, class V>
  void one(const std::map<K, V>& v) {
    varint(v.size());
    for (const auto& [key, value] : v) {
      one(key);
      one(value);
    }
  }
  // A struct: its field list. describe() takes a mutable reference to serve the CacheReader too; the
  // Writer only reads through it.
  template <class T>
  void one(const T& v) {
    describe(*this, const_cast<T&>(v));
  }

  std::string bytes_;
};

// Reads what Writer wrote; anything short, too long or out of range throws Truncated (a miss).
class CacheReader {
 public:
  struct Truncated {};
  explicit CacheReader(std::string_view bytes) : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  template <class... T>
  void operator()(T&... fields) {
    (one(fields), ...);
  }
  bool done() const { return at_ == end_; }
  // The bytes not read yet.
  std::string_view rest() const { return {at_, static_cast<std::size_t>(end_ - at_)}; }

 private:
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == end_) throw Truncated{};
      const auto byte = static_cast<unsigned char>(*at_++);
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    throw Truncated{};
  }
  // A count of elements, each at least a byte: more than the bytes left is not an entry.
  std::size_t count() {
    const std::uint64_t n = varint();
    if (n > static_cast<std::uint64_t>(end_ - at_)) throw Truncated{};
    return static_cast<std::size_t>(n);
  }
  void one(std::string& v) {
    const std::size_t n = count();
    v.assign(at_, n);
    at_ += n;
  }
  void one(bool& v) { v = varint() != 0; }
  void one(int& v) {
    const std::uint64_t z = varint();
    const std::int64_t decoded = static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
    if (decoded < INT32_MIN || decoded > INT32_MAX) throw Truncated{};
    v = static_cast<int>(decoded);
  }
  void one(std::uint64_t& v) { v = varint(); }
  void one(std::uint32_t& v) {
    const std::uint64_t wide = varint();
    if (wide > UINT32_MAX) throw Truncated{};
    v = static_cast<std::uint32_t>(wide);
  }
  void one(double& v) {
    if (end_ - at_ < static_cast<std::ptrdiff_t>(sizeof v)) throw Truncated{};
    std::memcpy(&v, at_, sizeof v);
    at_ += sizeof v;
  }
  void one(Selector::Kind& v) {
    const std::uint64_t k = varint();
    if (k > static_cast<std::uint64_t>(Selector::Kind::kRdmaDevice)) throw Truncated{};
    v = static_cast<Selector::Kind>(k);
  }
  template <class T>
  void one(std::optional<T>& v) {
    if (varint() == 0) {
      v.reset();
      return;
    }
    one(v.emplace());
  }
  template <class T>
  void one(std::vector<T>& v) {
    const std::size_t n = count();
    v.clear();
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) one(v.emplace_back());
  }
  template <class K, class V>
  void one(std::map<K, V>& v) {
    const std::size_t n = count();
    v.clear();
    for (std::size_t i = 0; i < n; ++i) {
      K key{};
      one(key);
      one(v[std::move(key)]);
    }
  }
  template <class T>
  void one(T& v) {
    describe(*this, v);
  }

  const char* at_;
  const char* end_;
};

// What an entry starts with; the build ID in its name already keeps other builds from reading it.
constexpr std::string_view kCacheMagic = "rdmactl spec cache";
// 2: the SHA-256 of the content follows the format (1 had none).
constexpr int kCacheFormat = 2;

int find_build_id(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  // The first object dl_iterate_phdr reports is the program itself.
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + header.p_vaddr);
    const unsigned char* end = at + header.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const unsigned char* name = at + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        static constexpr char kHex[] = "0123456789abcdef";
        for (unsigned j = 0; j < note.n_descsz; ++j) {
          *out += kHex[desc[j] >> 4];
          *out += kHex[desc[j] & 0x0f];
        }
        return 1;
      }
      at = next;
    }
  }
  return 1;  // the program has no build ID: stop at it all the same
}

}  // namespace

std::string program_build_id() {
  static const std::string id = [] {
    std::string out;
    dl_iterate_phdr(find_build_id, &out);
    return out;
  }();
  return id;
}

std::string spec_cache_name(const std::string& build_id, const std::string& file, const std::string& text) {
  std::string key;
  key.reserve(build_id.size() + file.size() + text.size() + 2);
  key.append(build_id).append(1, '\0').append(file).append(1, '\0').append(text);
  return kSpecCacheEntryPrefix + sha256_hex(key) + kSpecCacheEntrySuffix;
}

std::string spec_cache_bytes(const FabricSpec& spec, const std::string& name) {
  Writer content;
  content(name, spec);
  const std::string body = content.take();
  Writer out;
  out(std::string(kCacheMagic), kCacheFormat, sha256_hex(body));
  return out.take() + body;
}

std::optional<FabricSpec> spec_from_cache_bytes(const std::string& bytes, const std::string& name, std::string text) {
  try {
    CacheReader in(bytes);
    std::string magic;
    int format = 0;
    std::string digest;
    std::string entry_name;
    in(magic, format);
    if (magic != kCacheMagic || format != kCacheFormat) return std::nullopt;
    in(digest);
    // Every byte of the content before any of it is believed.
    if (digest != sha256_hex(in.rest())) {
      spdlog::debug("spec cache: an entry whose content does not match its SHA-256: loading the spec");
      return std::nullopt;
    }
    in(entry_name);
    if (entry_name != name) return std::nullopt;
    FabricSpec spec;
    in(spec);
    if (!in.done() || spec.sha256 != sha256_hex(text)) return std::nullopt;
    spec.text = std::move(text);
    return spec;
  } catch (const CacheReader::Truncated&) {
    spdlog::debug("spec cache: an entry that does not read: loading the spec");
    return std::nullopt;
  }
}

}  // namespace rdmactl
