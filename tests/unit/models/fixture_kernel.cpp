// SPDX-License-Identifier: Apache-2.0
// FixtureKernel: the store, mkdir and rmdir rules of the kernel files rdmactl writes (see
// fixture_kernel.h for the sources).
#include "tests/unit/models/fixture_kernel.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <variant>

#include "tests/unit/models/kernel_text.h"

namespace rdmactl::test {
namespace {

constexpr std::string_view kRdmaCm = "/sys/kernel/config/rdma_cm/";
constexpr std::string_view kNet = "/sys/class/net/";
constexpr std::string_view kDebugMlx5 = "/sys/kernel/debug/mlx5/";

// "a/b/c" -> {"a", "b", "c"}.
std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t slash = text.find('/', start);
    const size_t end = slash == std::string_view::npos ? text.size() : slash;
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// What a show function printed, as the file's new content.
void show(const std::string& real_path, const std::string& text) {
  std::ofstream out(real_path, std::ios::trunc);
  out << text;
}

[[noreturn]] void unknown(const std::string& what) {
  std::fprintf(stderr, "FixtureKernel: %s\n", what.c_str());
  std::abort();
}

// ib_cache_gid_type_str (drivers/infiniband/core/cache.c): the names show prints and store takes.
constexpr std::string_view kRoceV1 = "IB/RoCE v1";
constexpr std::string_view kRoceV2 = "RoCE v2";

// The field widths of cong.c's parameters (mlx5_ifc.h cong_control_r_roce_ecn_np/rp bits): 1-bit
// flags, 6-bit DSCP, 3-bit priority, 32-bit numbers. MLX5_SET masks a value to its field.
unsigned cc_param_bits(const std::string& name) {
  if (name == "rp_clamp_tgt_rate" || name == "rp_clamp_tgt_rate_ati" || name == "np_cnp_prio_mode") return 1;
  if (name == "np_cnp_dscp") return 6;
  if (name == "np_cnp_prio") return 3;
  return 32;
}

}  // namespace

const std::vector<std::pair<std::string, unsigned>>& mlx5_cc_params_defaults() {
  static const std::vector<std::pair<std::string, unsigned>> defaults = {
      {"rp_clamp_tgt_rate", 0},           {"rp_clamp_tgt_rate_ati", 1},
      {"rp_time_reset", 300},             {"rp_byte_reset", 32767},
      {"rp_threshold", 1},                {"rp_ai_rate", 5},
      {"rp_max_rate", 0},                 {"rp_hai_rate", 50},
      {"rp_min_dec_fac", 50},             {"rp_min_rate", 1},
      {"rp_rate_to_set_on_first_cnp", 0}, {"rp_dce_tcp_g", 1019},
      {"rp_dce_tcp_rtt", 1},              {"rp_rate_reduce_monitor_period", 4},
      {"rp_initial_alpha_value", 1023},   {"rp_gd", 11},
      {"np_min_time_between_cnps", 4},    {"np_cnp_dscp", 48},
      {"np_cnp_prio_mode", 0},            {"np_cnp_prio", 6},
  };
  return defaults;
}

void write_mlx5_cc_params(const std::string& root, const std::string& pci) {
  const std::filesystem::path dir = std::filesystem::path(root) / "sys/kernel/debug/mlx5" / pci / "cc_params";
  std::filesystem::create_directories(dir);
  for (const auto& [name, value] : mlx5_cc_params_defaults()) {
    std::ofstream(dir / name) << value << "\n";
  }
}

void FixtureKernel::add_rdma_cm_device(const std::string& name, std::vector<RdmaCmPort> ports) {
  rdma_cm_[name] = std::move(ports);
}

const RdmaCmPort& FixtureKernel::rdma_cm_port(const std::string& device, int port) const {
  auto found = rdma_cm_.find(device);
  if (found == rdma_cm_.end() || port < 1 || static_cast<size_t>(port) > found->second.size()) {
    unknown("no rdma_cm port " + device + "/" + std::to_string(port));
  }
  return found->second[static_cast<size_t>(port - 1)];
}

void FixtureKernel::add_mlx5_vendor_ecn(const std::string& netdev) { vendor_ecn_.push_back(netdev); }
void FixtureKernel::add_mlx5_cc_params(const std::string& pci) { cc_params_.push_back(pci); }
void FixtureKernel::add_ipoib_netdev(const std::string& netdev, bool connected_mode, int broadcast_mtu) {
  ipoib_[netdev] = {connected_mode, broadcast_mtu};
}

size_t FixtureKernel::write_count(std::string_view prefix) const {
  return static_cast<size_t>(std::count_if(writes_.begin(), writes_.end(),
                                            [&](const Write& w) { return starts_with(w.path, prefix); }));
}

std::optional<int> FixtureKernel::stored(std::string_view path, const std::string& real_path,
                                         const std::string& previous, std::string_view value) {
  std::optional<int> result;
  if (auto refused = refused_.find(std::string(path)); refused != refused_.end()) {
    result = refused->second;
    refused_.erase(refused);
  } else if (starts_with(path, kRdmaCm)) {
    result = store_rdma_cm(path, real_path, value);
  } else if (starts_with(path, kNet) && path.size() > 5 && path.substr(path.size() - 5) == "/mode") {
    result = store_ipoib_mode(path, real_path, previous, value);
  } else if (starts_with(path, kNet) && path.find("/ecn/") != std::string_view::npos) {
    result = store_vendor_ecn(path, real_path, previous, value);
  } else if (starts_with(path, kDebugMlx5)) {
    result = store_cc_param(path, real_path, previous, value);
  }
  if (result) writes_.push_back({std::string(path), std::string(value), *result});
  return result;
}

// make_cma_dev: the group's name must be a registered RDMA device's (filter_by_name: strcmp with
// dev_name), else ENODEV; it comes with ports/<1..phys_port_cnt>/ (make_cma_ports), each with the
// two attributes, which show the cma_device's current values.
std::optional<int> FixtureKernel::made_directory(std::string_view path, const std::string& real_path) {
  if (!starts_with(path, kRdmaCm)) return std::nullopt;
  const std::vector<std::string> parts = split(path.substr(kRdmaCm.size()));
  if (parts.size() != 1) return EPERM;  // configfs: no mkdir inside a device group (no make_group)
  auto found = rdma_cm_.find(parts[0]);
  if (found == rdma_cm_.end()) return ENODEV;
  ++mkdirs_;
  for (size_t i = 0; i < found->second.size(); ++i) {
    const std::filesystem::path port = std::filesystem::path(real_path) / "ports" / std::to_string(i + 1);
    std::filesystem::create_directories(port);
    // default_roce_mode_show: sprintf("%s\n", ib_cache_gid_type_str(...)); default_roce_tos_show: "%u\n".
    show((port / "default_roce_mode").string(), found->second[i].mode + "\n");
    show((port / "default_roce_tos").string(), std::to_string(found->second[i].tos) + "\n");
  }
  return 0;
}

// drop_cma_dev: removes the default groups (ports/...) with the device group; the values stay in
// the cma_device (cma_configfs_params_get finds the device again on the next mkdir).
void FixtureKernel::removing_directory(std::string_view path, const std::string& real_path) {
  if (!starts_with(path, kRdmaCm)) return;
  if (split(path.substr(kRdmaCm.size())).size() != 1) return;
  ++rmdirs_;
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(real_path) / "ports", ec);
}

std::optional<int> FixtureKernel::store_rdma_cm(std::string_view path, const std::string& real_path,
                                                std::string_view value) {
  const std::vector<std::string> parts = split(path.substr(kRdmaCm.size()));
  if (parts.size() != 4 || parts[1] != "ports") return std::nullopt;
  auto found = rdma_cm_.find(parts[0]);
  if (found == rdma_cm_.end()) unknown("write to rdma_cm of an unknown device: " + std::string(path));
  const int port = std::atoi(parts[2].c_str());
  if (port < 1 || static_cast<size_t>(port) > found->second.size()) return EINVAL;  // rdma_is_port_valid
  RdmaCmPort& p = found->second[static_cast<size_t>(port - 1)];
  if (parts[3] == "default_roce_mode") {
    // ib_cache_gid_parse_type_str: one trailing '\n' is dropped, then the text must equal a GID type
    // name exactly (case-sensitive, no other white space), else EINVAL.
    std::string_view text = value;
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (text != kRoceV1 && text != kRoceV2) return EINVAL;
    // cma_set_default_gid_type: EINVAL for a GID type the port does not support.
    if ((text == kRoceV1 && !p.roce_v1) || (text == kRoceV2 && !p.roce_v2)) return EINVAL;
    p.mode = std::string(text);
    show(real_path, p.mode + "\n");
    return 0;
  }
  if (parts[3] == "default_roce_tos") {
    // default_roce_tos_store: kstrtou8(buf, 0, &tos) (ERANGE above 255, EINVAL for anything but a
    // number and one '\n'); any u8 is taken (cma_set_default_roce_tos checks the port only).
    const auto parsed = kstrtou(value, 0, 8);
    if (std::holds_alternative<int>(parsed)) return std::get<int>(parsed);
    p.tos = static_cast<unsigned>(std::get<unsigned long long>(parsed));
    show(real_path, std::to_string(p.tos) + "\n");
    return 0;
  }
  return std::nullopt;
}

std::optional<int> FixtureKernel::store_vendor_ecn(std::string_view path, const std::string& real_path,
                                                   const std::string& previous, std::string_view value) {
  const std::vector<std::string> parts = split(path.substr(kNet.size()));
  // <netdev>/ecn/<protocol>/enable/<prio> or <netdev>/ecn/roce_np/cnp_dscp
  if (parts.size() < 4 || parts[1] != "ecn") return std::nullopt;
  if (std::find(vendor_ecn_.begin(), vendor_ecn_.end(), parts[0]) == vendor_ecn_.end()) return std::nullopt;
  if (parts.size() == 5 && parts[3] == "enable") {
    // mlx5e_store_ecn_enable: sscanf(buf, "%d", &enable), its result unchecked (what an unparsable
    // write does is undefined there: refused here, as no such write is expected).
    const std::optional<int> enable = sscanf_int(value);
    if (!enable) return EINVAL;
    // "if (enable) { query; if (!err & is_qcn_enable) return -EPERM; }": enabling an enabled
    // priority is EPERM in this copy (oracle/linux-uek f57c630 en_ecn.c). Whether current DOCA-OFED
    // keeps the check is not known; rdmactl writes only values that differ, so either way holds.
    const bool enabled = previous.substr(0, 1) == "1";
    if (*enable && enabled) return EPERM;
    // mlx5_modify_port_cong_status: MLX5_SET of a 1-bit `enable` field keeps the low bit.
    show(real_path, std::to_string(*enable & 1) + "\n");  // mlx5e_show_ecn_enable: "%d\n"
    return 0;
  }
  if (parts.size() == 4 && parts[2] == "roce_np" && parts[3] == "cnp_dscp") {
    // mlx5e_store_cnp_dscp: sscanf "%d", then MODIFY_CONG_PARAMS with MLX5_SET of the 6-bit
    // cnp_dscp field (no range check: 64 becomes 0); show "%d\n".
    const std::optional<int> dscp = sscanf_int(value);
    if (!dscp) return EINVAL;
    show(real_path, std::to_string(*dscp & 0x3f) + "\n");
    return 0;
  }
  return std::nullopt;
}

std::optional<int> FixtureKernel::store_ipoib_mode(std::string_view path, const std::string& real_path,
                                                   const std::string& previous, std::string_view value) {
  const std::vector<std::string> parts = split(path.substr(kNet.size()));
  auto found = ipoib_.find(parts[0]);
  if (parts.size() != 2 || found == ipoib_.end()) return std::nullopt;
  const std::filesystem::path mtu_file = std::filesystem::path(real_path).parent_path() / "mtu";
  int mtu = 0;
  if (std::ifstream in(mtu_file); !(in >> mtu)) unknown("no mtu file beside " + std::string(path));
  // ipoib_set_mode: the buffer is compared whole (strcmp) with "connected\n" and "datagram\n";
  // writing the mode the netdev has is a no-op that succeeds; anything else is EINVAL.
  const bool connected_now = previous.substr(0, 9) == "connected";
  if (found->second.connected_mode && value == "connected\n") {
    if (!connected_now) {
      show(real_path, "connected\n");  // show_mode: sysfs_emit("connected\n")
      show(mtu_file.string(), "65520\n");  // dev_set_mtu(dev, ipoib_cm_max_mtu(dev)): IPOIB_CM_MTU
    } else {
      show(real_path, previous);
    }
    return 0;
  }
  if (value == "datagram\n") {
    if (connected_now) {
      // dev_set_mtu(dev, min(priv->mcast_mtu, dev->mtu)); mcast_mtu = IPOIB_UD_MTU(group MTU).
      show(mtu_file.string(), std::to_string(std::min(found->second.broadcast_mtu - 4, mtu)) + "\n");
    }
    show(real_path, "datagram\n");
    return 0;
  }
  return EINVAL;
}

std::optional<int> FixtureKernel::store_cc_param(std::string_view path, const std::string& real_path,
                                                 const std::string& previous, std::string_view value) {
  const std::vector<std::string> parts = split(path.substr(kDebugMlx5.size()));
  if (parts.size() != 3 || parts[1] != "cc_params") return std::nullopt;
  if (std::find(cc_params_.begin(), cc_params_.end(), parts[0]) == cc_params_.end()) return std::nullopt;
  (void)previous;
  // set_param: kstrtou32_from_user(buf, count, 0, &var) (base 0: 0x hex, leading 0 octal; one
  // '\n'); then mlx5_ib_set_cc_params; no range check, MLX5_SET masks to the field's width.
  const auto parsed = kstrtou(value, 0, 32);
  if (std::holds_alternative<int>(parsed)) return std::get<int>(parsed);
  const unsigned bits = cc_param_bits(parts[2]);
  const unsigned long long mask = bits == 32 ? 0xffffffffULL : (1ULL << bits) - 1;
  const unsigned long long stored = std::get<unsigned long long>(parsed) & mask;
  // get_param: "%u\n".
  show(real_path, std::to_string(stored) + "\n");
  if (parts[2] == "np_cnp_prio") {
    // mlx5_ib_set_cc_param_mask_val: writing np_cnp_prio also sets cnp_prio_mode to 0.
    const std::filesystem::path mode = std::filesystem::path(real_path).parent_path() / "np_cnp_prio_mode";
    if (std::filesystem::exists(mode)) show(mode.string(), "0\n");
  }
  return 0;
}

}  // namespace rdmactl::test
