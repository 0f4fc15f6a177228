// SPDX-License-Identifier: Apache-2.0
// FakeEthtoolIoctlKernel (see fake_ethtool_ioctl.h). The request and reply structs are read and
// written with <linux/ethtool.h>'s layouts, not with ethtool_stats.cpp's helpers.
#include "tests/unit/platform/fake_ethtool_ioctl.h"

#include <linux/ethtool.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace rdmactl::test {
namespace {

Error fake_ioctl_error(int err_no) { return make_errno_error("fake SIOCETHTOOL", err_no); }

// copy_to_user into the caller's span at `offset`: what fits is written; the rest faults.
Result<void> fake_copy_to_user(std::span<uint8_t> user, size_t offset, const void* data, size_t size) {
  const size_t room = offset < user.size() ? user.size() - offset : 0;
  // memcpy of 0 bytes still wants valid pointers (an empty list's data() may be null).
  if (std::min(room, size) > 0) std::memcpy(user.data() + offset, data, std::min(room, size));
  if (size > room) return fake_ioctl_error(EFAULT);
  return ok();
}

template <typename T>
T fake_copy_from_user(std::span<const uint8_t> user) {
  T value;
  std::memcpy(&value, user.data(), sizeof value);
  return value;
}

// ethtool_get_sset_info, for the one set (ETH_SS_STATS) the model's drivers count.
Result<void> fake_sset_info(const FakeEthtoolIoctlKernel& kernel, const FakeStatsDriver& d, std::span<uint8_t> user) {
  if (kernel.old_sset_info && !d.has_sset_count) return fake_ioctl_error(EOPNOTSUPP);
  ethtool_sset_info info = fake_copy_from_user<ethtool_sset_info>(user);
  const uint64_t asked = info.sset_mask;
  if (asked == 0) return ok();
  info = {};
  info.cmd = ETHTOOL_GSSET_INFO;
  std::vector<uint32_t> counts;
  for (int set = 0; set < 64; ++set) {
    if ((asked & (1ULL << set)) == 0) continue;
    // __ethtool_get_sset_count: the driver's count, or EOPNOTSUPP (veth_get_sset_count's
    // default) for every set but ETH_SS_STATS, and for that one without the ops.
    if (set == ETH_SS_STATS && d.has_sset_count) {
      info.sset_mask |= 1ULL << set;
      counts.push_back(static_cast<uint32_t>(d.counters.size()));
    }
  }
  if (Result<void> done = fake_copy_to_user(user, 0, &info, sizeof info); !done) return done;
  return fake_copy_to_user(user, offsetof(ethtool_sset_info, data), counts.data(), counts.size() * sizeof(uint32_t));
}

// The count a GSTRINGS/GSTATS reply carries: the driver's, or 0 for a caller who asked for
// another (7b07be1ff1cb).
uint32_t fake_reply_count(const FakeEthtoolIoctlKernel& kernel, uint32_t asked, uint32_t driver) {
  if (kernel.bounds_user_count && asked != 0 && asked != driver) return 0;
  return driver;
}

// ethtool_get_strings: ETH_GSTRING_LEN bytes a name, NUL padded (a name of 32 bytes has none).
Result<void> fake_strings(const FakeEthtoolIoctlKernel& kernel, const FakeStatsDriver& d, std::span<uint8_t> user) {
  ethtool_gstrings request = fake_copy_from_user<ethtool_gstrings>(user);
  if (request.string_set != ETH_SS_STATS || !d.has_sset_count) return fake_ioctl_error(EOPNOTSUPP);
  request.len = fake_reply_count(kernel, request.len, static_cast<uint32_t>(d.counters.size()));
  std::vector<uint8_t> data(size_t{request.len} * ETH_GSTRING_LEN, 0);
  for (uint32_t i = 0; i < request.len; ++i) {
    const std::string& name = d.counters[i].first;
    std::memcpy(data.data() + size_t{i} * ETH_GSTRING_LEN, name.data(), std::min<size_t>(name.size(), ETH_GSTRING_LEN));
  }
  if (Result<void> done = fake_copy_to_user(user, 0, &request, sizeof request); !done) return done;
  return fake_copy_to_user(user, offsetof(ethtool_gstrings, data), data.data(), data.size());
}

// ethtool_get_stats.
Result<void> fake_stats(const FakeEthtoolIoctlKernel& kernel, const FakeStatsDriver& d, std::span<uint8_t> user) {
  if (!d.has_get_stats || !d.has_sset_count) return fake_ioctl_error(EOPNOTSUPP);
  ethtool_stats request = fake_copy_from_user<ethtool_stats>(user);
  request.n_stats = fake_reply_count(kernel, request.n_stats, static_cast<uint32_t>(d.counters.size()));
  std::vector<uint64_t> values;
  for (uint32_t i = 0; i < request.n_stats; ++i) values.push_back(d.counters[i].second);
  if (Result<void> done = fake_copy_to_user(user, 0, &request, sizeof request); !done) return done;
  return fake_copy_to_user(user, offsetof(ethtool_stats, data), values.data(), values.size() * sizeof(uint64_t));
}

}  // namespace

class FakeEthtoolIoctlTransport final : public EthtoolIoctlTransport {
 public:
  explicit FakeEthtoolIoctlTransport(FakeEthtoolIoctlKernel& kernel) : kernel_(kernel) {}

  Result<void> ethtool(const std::string& ifname, std::span<uint8_t> request) override {
    auto d = std::find_if(kernel_.drivers_.begin(), kernel_.drivers_.end(),
                          [&](const FakeStatsDriver& x) { return x.name == ifname; });
    if (d == kernel_.drivers_.end()) return fake_ioctl_error(ENODEV);  // __dev_get_by_name
    const uint32_t cmd = fake_copy_from_user<uint32_t>(request);
    if (d->before) d->before(*d, cmd, kernel_.count(cmd));
    kernel_.commands.push_back(cmd);
    switch (cmd) {
      case ETHTOOL_GSSET_INFO: return fake_sset_info(kernel_, *d, request);
      case ETHTOOL_GSTRINGS: return fake_strings(kernel_, *d, request);
      case ETHTOOL_GSTATS: return fake_stats(kernel_, *d, request);
      default: return fake_ioctl_error(EOPNOTSUPP);
    }
  }

  Result<std::string> ifname(int ifindex) override {
    for (const FakeStatsDriver& d : kernel_.drivers_) {
      if (d.ifindex == ifindex) return d.name;
    }
    return make_errno_error("fake SIOCGIFNAME", ENODEV);
  }

 private:
  FakeEthtoolIoctlKernel& kernel_;
};

FakeStatsDriver& FakeEthtoolIoctlKernel::add(int ifindex, const std::string& name, EthtoolCounters counters) {
  FakeStatsDriver d;
  d.ifindex = ifindex;
  d.name = name;
  d.counters = std::move(counters);
  return drivers_.emplace_back(std::move(d));
}

std::unique_ptr<EthtoolIoctlTransport> FakeEthtoolIoctlKernel::connect() {
  return std::make_unique<FakeEthtoolIoctlTransport>(*this);
}

int FakeEthtoolIoctlKernel::count(uint32_t cmd) const {
  return static_cast<int>(std::count(commands.begin(), commands.end(), cmd));
}

}  // namespace rdmactl::test
