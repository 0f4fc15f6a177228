// SPDX-License-Identifier: Apache-2.0
// EthtoolStats (ETHTOOL_GSSET_INFO, GSTRINGS, GSTATS over SIOCETHTOOL) and the pure
// classify_lossless_counters (see ethtool_stats.h).
#include "agent/platform/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>

#include "agent/core/fd.h"

namespace rdmactl {
namespace {

// More counters than any driver lists (mlx5 with 256 channels and 8 traffic classes has some
// tens of thousands): a count above it is refused rather than mapped (kernel: S32_MAX / 8).
constexpr uint32_t kEthtoolMaxCounters = 1u << 20;

// A reply buffer followed by an inaccessible page: the kernel's copy_to_user of a reply longer
// than the buffer stops there with EFAULT instead of writing into whatever memory follows
// (ethtool_get_strings and ethtool_get_stats before 7b07be1ff1cb write the driver's current
// count, not the caller's). The usable part is the requested size rounded up to whole pages.
class EthtoolReplyBuffer {
 public:
  static Result<EthtoolReplyBuffer> allocate(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t usable = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    void* base = mmap(nullptr, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return make_errno_error("mmap an ethtool reply buffer", errno);
    EthtoolReplyBuffer buffer(static_cast<uint8_t*>(base), usable, page);
    if (mprotect(buffer.base_ + usable, page, PROT_NONE) != 0) {
      return make_errno_error("mprotect the guard page of an ethtool reply buffer", errno);
    }
    return buffer;
  }

  EthtoolReplyBuffer(EthtoolReplyBuffer&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), usable_(other.usable_), page_(other.page_) {}
  EthtoolReplyBuffer& operator=(EthtoolReplyBuffer&& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(usable_, other.usable_);
    std::swap(page_, other.page_);
    return *this;
  }
  EthtoolReplyBuffer(const EthtoolReplyBuffer&) = delete;
  EthtoolReplyBuffer& operator=(const EthtoolReplyBuffer&) = delete;
  ~EthtoolReplyBuffer() {
    if (base_ != nullptr) munmap(base_, usable_ + page_);
  }

  std::span<uint8_t> bytes() const { return {base_, usable_}; }

 private:
  EthtoolReplyBuffer(uint8_t* base, size_t usable, size_t page) : base_(base), usable_(usable), page_(page) {}
  uint8_t* base_ = nullptr;
  size_t usable_ = 0;
  size_t page_ = 0;
};

// The kernel's structs are read and written by copy: the buffers are byte spans.
template <typename T>
T ethtool_load(std::span<const uint8_t> bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}
template <typename T>
void ethtool_store(std::span<uint8_t> bytes, const T& value) {
  std::memcpy(bytes.data(), &value, sizeof value);
}

// One SIOCETHTOOL; a failure is named by its command, at the netdev.
Result<void> ethtool_stats_call(EthtoolIoctlTransport& transport, const std::string& ifname, std::span<uint8_t> request,
                          const char* what) {
  Result<void> done = transport.ethtool(ifname, request);
  if (done) return done;
  Error error = done.error();
  error.message = std::string(what) + " of " + ifname;
  if (error.where.empty()) error.where = ifname;
  return error;
}

// The netdev's name in the socket's namespace: SIOCETHTOOL names it (ifr_name).
Result<std::string> ethtool_ifname(EthtoolIoctlTransport& transport, const EthtoolDevice& device) {
  if (device.ifindex != 0) {
    Result<std::string> name = transport.ifname(device.ifindex);
    if (name) return name;
    Error error = name.error();
    error.message = error.err_no == ENODEV
                        ? "no netdev with ifindex " + std::to_string(device.ifindex) + " in this network namespace"
                        : "SIOCGIFNAME of ifindex " + std::to_string(device.ifindex);
    error.where = device.name;
    return error;
  }
  // dev_valid_name: at most IFNAMSIZ - 1 bytes; no netdev has a longer or an empty name.
  if (device.name.empty() || device.name.size() >= IFNAMSIZ) {
    return make_error(ErrorKind::kNotFound, "no netdev can be named \"" + device.name + "\"", device.name, ENODEV);
  }
  return device.name;
}

// ETHTOOL_GSSET_INFO of ETH_SS_STATS: the driver's count, nullopt when ethtool_get_sset_info
// cleared the set's bit (the driver has no count for it).
Result<std::optional<uint32_t>> ethtool_stats_count(EthtoolIoctlTransport& transport, const std::string& ifname) {
  Result<EthtoolReplyBuffer> buffer = EthtoolReplyBuffer::allocate(sizeof(ethtool_sset_info) + sizeof(uint32_t));
  if (!buffer) return buffer.error();
  ethtool_sset_info info{};
  info.cmd = ETHTOOL_GSSET_INFO;
  info.sset_mask = 1ULL << ETH_SS_STATS;
  ethtool_store(buffer->bytes(), info);
  if (Result<void> done = ethtool_stats_call(transport, ifname, buffer->bytes(), "ETHTOOL_GSSET_INFO"); !done) {
    return done.error();
  }
  info = ethtool_load<ethtool_sset_info>(buffer->bytes());
  if ((info.sset_mask & (1ULL << ETH_SS_STATS)) == 0) return std::optional<uint32_t>{};
  // Only the one set was asked for: its count is data[0].
  return std::optional<uint32_t>(ethtool_load<uint32_t>(buffer->bytes().subspan(offsetof(ethtool_sset_info, data))));
}

// A failed read that means "the count is no longer `count`": the kernel ran into the guard page.
bool ethtool_count_overran(const Error& error) { return error.err_no == EFAULT; }

// ETHTOOL_GSTRINGS of ETH_SS_STATS for `count` names; nullopt when the driver's count changed
// (ethtool_get_strings answered another len, or 0 since 7b07be1ff1cb, or wrote past the buffer).
// A name is NUL padded to ETH_GSTRING_LEN bytes, or fills them without a NUL.
Result<std::optional<std::vector<std::string>>> ethtool_read_names(EthtoolIoctlTransport& transport, const std::string& ifname,
                                                           uint32_t count) {
  const size_t data_offset = offsetof(ethtool_gstrings, data);
  Result<EthtoolReplyBuffer> buffer = EthtoolReplyBuffer::allocate(data_offset + size_t{count} * ETH_GSTRING_LEN);
  if (!buffer) return buffer.error();
  ethtool_gstrings request{};
  request.cmd = ETHTOOL_GSTRINGS;
  request.string_set = ETH_SS_STATS;
  request.len = count;
  ethtool_store(buffer->bytes(), request);
  if (Result<void> done = ethtool_stats_call(transport, ifname, buffer->bytes(), "ETHTOOL_GSTRINGS"); !done) {
    if (ethtool_count_overran(done.error())) return std::optional<std::vector<std::string>>{};
    return done.error();
  }
  if (ethtool_load<ethtool_gstrings>(buffer->bytes()).len != count) return std::optional<std::vector<std::string>>{};
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const auto* name = reinterpret_cast<const char*>(buffer->bytes().data() + data_offset + size_t{i} * ETH_GSTRING_LEN);
    names.emplace_back(name, strnlen(name, ETH_GSTRING_LEN));
  }
  return std::optional<std::vector<std::string>>(std::move(names));
}

// ETHTOOL_GSTATS for `count` values; nullopt when the driver's count changed (as ethtool_read_names).
Result<std::optional<std::vector<uint64_t>>> ethtool_read_values(EthtoolIoctlTransport& transport, const std::string& ifname,
                                                         uint32_t count) {
  const size_t data_offset = offsetof(ethtool_stats, data);
  Result<EthtoolReplyBuffer> buffer = EthtoolReplyBuffer::allocate(data_offset + size_t{count} * sizeof(uint64_t));
  if (!buffer) return buffer.error();
  ethtool_stats request{};
  request.cmd = ETHTOOL_GSTATS;
  request.n_stats = count;
  ethtool_store(buffer->bytes(), request);
  if (Result<void> done = ethtool_stats_call(transport, ifname, buffer->bytes(), "ETHTOOL_GSTATS"); !done) {
    if (ethtool_count_overran(done.error())) return std::optional<std::vector<uint64_t>>{};
    return done.error();
  }
  if (ethtool_load<ethtool_stats>(buffer->bytes()).n_stats != count) return std::optional<std::vector<uint64_t>>{};
  std::vector<uint64_t> values(count);
  if (count > 0) std::memcpy(values.data(), buffer->bytes().data() + data_offset, size_t{count} * sizeof(uint64_t));
  return std::optional<std::vector<uint64_t>>(std::move(values));
}

// Names, values, names again, all of `count`: nullopt when the count or the names changed
// meanwhile (mlx5 renames its pause counters when the PFC priorities change at an equal count),
// so that no value is returned under another counter's name.
Result<std::optional<EthtoolCounters>> ethtool_read_consistent(EthtoolIoctlTransport& transport, const std::string& ifname,
                                                       uint32_t count) {
  const std::optional<EthtoolCounters> changed;
  Result<std::optional<std::vector<std::string>>> before = ethtool_read_names(transport, ifname, count);
  if (!before) return before.error();
  if (!*before) return changed;
  Result<std::optional<std::vector<uint64_t>>> values = ethtool_read_values(transport, ifname, count);
  if (!values) return values.error();
  if (!*values) return changed;
  Result<std::optional<std::vector<std::string>>> after = ethtool_read_names(transport, ifname, count);
  if (!after) return after.error();
  if (*after != *before) return changed;
  EthtoolCounters counters;
  counters.reserve(count);
  for (uint32_t i = 0; i < count; ++i) counters.emplace_back(std::move((**before)[i]), (**values)[i]);
  return std::optional<EthtoolCounters>(std::move(counters));
}

// The control socket's transport: ioctls on a socket of the caller's network namespace.
class KernelEthtoolIoctl final : public EthtoolIoctlTransport {
 public:
  explicit KernelEthtoolIoctl(UniqueFd fd) : fd_(std::move(fd)) {}

  Result<void> ethtool(const std::string& ifname, std::span<uint8_t> request) override {
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.data(), std::min(ifname.size(), sizeof ifr.ifr_name - 1));
    ifr.ifr_data = reinterpret_cast<char*>(request.data());
    if (::ioctl(fd_.get(), SIOCETHTOOL, &ifr) != 0) return make_errno_error("SIOCETHTOOL", errno, ifname);
    return ok();
  }

  Result<std::string> ifname(int ifindex) override {
    ifreq ifr{};
    ifr.ifr_ifindex = ifindex;
    if (::ioctl(fd_.get(), SIOCGIFNAME, &ifr) != 0) return make_errno_error("SIOCGIFNAME", errno);
    return std::string(ifr.ifr_name, strnlen(ifr.ifr_name, sizeof ifr.ifr_name));
  }

 private:
  UniqueFd fd_;
};

}  // namespace

Result<EthtoolStats> EthtoolStats::open() {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) fd.reset(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
  if (!fd.valid()) return make_errno_error("open a socket for SIOCETHTOOL", errno);
  return EthtoolStats(std::make_unique<KernelEthtoolIoctl>(std::move(fd)));
}

EthtoolStats EthtoolStats::over(std::unique_ptr<EthtoolIoctlTransport> transport) {
  return EthtoolStats(std::move(transport));
}

Result<EthtoolCounters> EthtoolStats::read(const EthtoolDevice& device) {
  Result<std::string> ifname = ethtool_ifname(*transport_, device);
  if (!ifname) return ifname.error();
  for (int attempt = 0; attempt < kStatsAttempts; ++attempt) {
    Result<std::optional<uint32_t>> count = ethtool_stats_count(*transport_, *ifname);
    if (!count) return count.error();
    if (!*count) {
      return make_error(ErrorKind::kNotSupported, "the driver of " + *ifname + " exports no statistics (ethtool -S)",
                        *ifname, EOPNOTSUPP);
    }
    if (**count == 0) return EthtoolCounters{};  // ethtool_get_stats warns, and writes nothing
    if (**count > kEthtoolMaxCounters) {
      return make_error(ErrorKind::kPlatform, "the driver of " + *ifname + " reports " + std::to_string(**count) +
                        " statistics, more than rdmactl reads (" + std::to_string(kEthtoolMaxCounters) + ")", *ifname, E2BIG);
    }
    Result<std::optional<EthtoolCounters>> counters = ethtool_read_consistent(*transport_, *ifname, **count);
    if (!counters) return counters.error();
    if (*counters) return std::move(**counters);
  }
  return make_error(ErrorKind::kPlatform,
                    "the statistics of " + *ifname + " changed in number or names during each of " +
                        std::to_string(kStatsAttempts) + " reads",
                    *ifname, EAGAIN);
}

// --- the classifier ----------------------------------------------------------------------------

namespace {

// mlx5's names without a priority, each with the en_stats.c array that declares it.
struct Mlx5PortCounter {
  std::string_view name;
  std::optional<uint64_t> LosslessCounters::*field;
};
constexpr Mlx5PortCounter kMlx5PortCounters[] = {
    // pport_2863_stats_desc: PPCNT RFC 2863 group, if_in_discards.
    {"rx_discards_phy", &LosslessCounters::rx_discards_phy},
    // q_stats_desc: MLX5E_DECLARE_STAT(struct mlx5e_qcounter_stats, rx_out_of_buffer), whose name
    // is the field's (en_stats.h: #fld); the RQs' q counter out_of_buffer (mlx5e_stats_grp_qcnt).
    {"rx_out_of_buffer", &LosslessCounters::rx_out_of_buffer},
    // pport_pfc_stall_stats_desc (device_stall_minor/critical_watermark_cnt), listed only with the
    // pfcc_mask and stall_detect capabilities (NUM_PPORT_PFC_STALL_COUNTERS).
    {"tx_pause_storm_warning_events", &LosslessCounters::tx_pause_storm_warning_events},
    {"tx_pause_storm_error_events", &LosslessCounters::tx_pause_storm_error_events},
};

// pport_per_prio_pfc_stats_desc: "rx_%s_pause", "rx_%s_pause_duration", "tx_%s_pause",
// "tx_%s_pause_duration", "rx_%s_pause_transition", where %s is "prio<N>" or "global". Keyed
// here by the name without its %s part.
struct Mlx5PauseCounter {
  std::string_view key;
  std::optional<uint64_t> PauseCounters::*field;
};
constexpr Mlx5PauseCounter kMlx5PauseCounters[] = {
    {"rx_pause", &PauseCounters::rx_pause},
    {"rx_pause_duration", &PauseCounters::rx_pause_duration},
    {"tx_pause", &PauseCounters::tx_pause},
    {"tx_pause_duration", &PauseCounters::tx_pause_duration},
    {"rx_pause_transition", &PauseCounters::rx_pause_transition},
};

// Per-priority discards, keyed likewise ("rx_prio%d_discards" -> "rx_discards").
struct Mlx5PriorityCounter {
  std::string_view key;
  std::optional<uint64_t> PriorityCounters::*field;
};
constexpr Mlx5PriorityCounter kMlx5PriorityCounters[] = {
    // pport_per_prio_traffic_stats_desc: "rx_prio%d_discards" (PPCNT per-priority rx_discards).
    {"rx_discards", &PriorityCounters::rx_discards},
    // pport_per_tc_prio_stats_desc: "rx_prio%d_buf_discard" (no_buffer_discard_uc).
    {"rx_buf_discard", &PriorityCounters::rx_buf_discard},
    // pport_per_tc_congest_prio_stats_desc: "rx_prio%d_cong_discard" (wred_discard).
    {"rx_cong_discard", &PriorityCounters::rx_cong_discard},
};

// A name of the form "<rx|tx>_<prio<N>|global>_<rest>", split: priority N (0-7), or -1 for
// global, and the key "<rx|tx>_<rest>".
struct Mlx5PriorityName {
  int priority = -1;
  std::string key;
};
std::optional<Mlx5PriorityName> split_mlx5_priority_name(std::string_view name) {
  if (name.size() < 4 || (name.substr(0, 3) != "rx_" && name.substr(0, 3) != "tx_")) return std::nullopt;
  const std::string_view direction = name.substr(0, 3);
  std::string_view rest = name.substr(3);
  Mlx5PriorityName split;
  if (rest.size() > 6 && rest.substr(0, 4) == "prio" && rest[4] >= '0' && rest[4] < '0' + kPriorities &&
      rest[5] == '_') {
    split.priority = rest[4] - '0';
    rest.remove_prefix(6);
  } else if (rest.substr(0, 7) == "global_") {
    rest.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  split.key = std::string(direction) + std::string(rest);
  return split;
}

// Sets `field` to `value` unless a counter of the same name came first; the name matched.
bool take_counter(std::optional<uint64_t>& field, uint64_t value) {
  if (!field) field = value;
  return true;
}

bool classify_mlx5_priority_counter(LosslessCounters& out, const Mlx5PriorityName& split, uint64_t value) {
  PauseCounters& pause = split.priority < 0 ? out.global_pause : out.priority[split.priority].pause;
  for (const Mlx5PauseCounter& c : kMlx5PauseCounters) {
    if (split.key == c.key) return take_counter(pause.*c.field, value);
  }
  if (split.priority < 0) return false;  // only the pause counters have a global form
  for (const Mlx5PriorityCounter& c : kMlx5PriorityCounters) {
    if (split.key == c.key) return take_counter(out.priority[split.priority].*c.field, value);
  }
  return false;
}

bool classify_mlx5_counter(LosslessCounters& out, std::string_view name, uint64_t value) {
  for (const Mlx5PortCounter& c : kMlx5PortCounters) {
    if (name == c.name) return take_counter(out.*c.field, value);
  }
  const std::optional<Mlx5PriorityName> split = split_mlx5_priority_name(name);
  return split && classify_mlx5_priority_counter(out, *split, value);
}

}  // namespace

const char* counter_naming_name(CounterNaming naming) {
  switch (naming) {
    case CounterNaming::kMlx5: return "mlx5";
    case CounterNaming::kUnknown: break;
  }
  return "unknown";
}

LosslessCounters classify_lossless_counters(const EthtoolCounters& counters) {
  LosslessCounters out;
  bool recognised = false;
  for (const auto& [name, value] : counters) {
    std::string_view trimmed = name;
    while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
    if (classify_mlx5_counter(out, trimmed, value)) recognised = true;
  }
  if (recognised) out.naming = CounterNaming::kMlx5;
  return out;
}

}  // namespace rdmactl
