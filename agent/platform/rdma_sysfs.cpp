// SPDX-License-Identifier: Apache-2.0
// The RDMA inventory from /sys/class/infiniband: the value parsers and the tree walk that fills
// DeviceState and PortState.
//
// Only the ports directory is required: every other attribute is optional, because drivers differ
// (rxe has no hca_type, board_id or PCI function; IB ports have no GID netdev; older kernels have
// no PMA counters) and the kernel answers EINVAL for attributes that exist but have no value (the
// type and netdev of an empty GID slot). A value that cannot be read is left empty, never guessed.
#include "agent/platform/rdma_sysfs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

namespace rdmactl {
namespace {

constexpr std::string_view kInfinibandClass = "/sys/class/infiniband";
// The core adds this file to every hw_counters directory: it is how long (ms) the driver may
// cache the values, a setting rather than a counter.
constexpr std::string_view kHwCountersLifespan = "lifespan";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string_view trim_sysfs(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

// A whole-string unsigned integer in `base`; nullopt for signs, blanks, trailing text or overflow.
template <typename T>
std::optional<T> parse_unsigned(std::string_view text, int base) {
  if (text.empty() || !(base == 16 ? is_hex_digit(text.front()) : is_digit(text.front()))) {
    return std::nullopt;
  }
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int> parse_decimal_int(std::string_view text) {
  const auto value = parse_unsigned<unsigned>(trim_sysfs(text), 10);
  if (!value || *value > static_cast<unsigned>(std::numeric_limits<int>::max())) return std::nullopt;
  return static_cast<int>(*value);
}

// An attribute that may be absent or may refuse to be read: its text, or "" either way.
std::string read_optional(const HostFs& fs, const std::string& path) {
  auto text = fs.read(path);
  return text.has_value() ? std::move(text).value() : std::string();
}

// The numeric entries of a directory ("0", "1", ... "255"), in numeric order: the kernel names
// ports and GID slots by index, and a listing sorts "10" before "2".
std::vector<int> numeric_entries(const std::vector<std::string>& names) {
  std::vector<int> indexes;
  for (const std::string& name : names) {
    if (auto index = parse_decimal_int(name); index && name == trim_sysfs(name)) indexes.push_back(*index);
  }
  std::sort(indexes.begin(), indexes.end());
  return indexes;
}

std::string device_dir(const std::string& name) {
  return std::string(kInfinibandClass) + "/" + name;
}

// A name from a listing or from RDMA netlink; anything that could climb out of the class
// directory is refused rather than resolved.
bool is_safe_device_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// The PCI address behind a device: the last component of its `device` link when that is a PCI
// function ("../../../0000:3b:00.0"); "" for software devices (no link) and auxiliary devices
// such as mlx5 sub-functions (a link to "mlx5_core.sf.2").
std::string read_pci_address(const HostFs& fs, const std::string& dev_dir) {
  auto target = fs.read_link(dev_dir + "/device");
  if (!target.has_value()) return {};
  std::string_view link = *target;
  while (!link.empty() && link.back() == '/') link.remove_suffix(1);
  const auto slash = link.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? link : link.substr(slash + 1);
  return is_pci_address(last) ? std::string(last) : std::string();
}

// current_link_speed and friends of the PCI function, read through the device link exactly as
// lspci's LnkSta/LnkCap would show them.
PcieLink read_pcie_link(const HostFs& fs, const std::string& dev_dir) {
  const std::string function = dev_dir + "/device/";
  PcieLink link;
  link.speed = read_optional(fs, function + "current_link_speed");
  link.width = parse_decimal_int(read_optional(fs, function + "current_link_width"));
  link.max_speed = read_optional(fs, function + "max_link_speed");
  link.max_width = parse_decimal_int(read_optional(fs, function + "max_link_width"));
  return link;
}

// Every file of a counters directory. A counter that cannot be read is left out rather than
// failing the device: some drivers refuse single counters while the port is down.
std::map<std::string, nlohmann::json> read_counters(const HostFs& fs, const std::string& dir) {
  std::map<std::string, nlohmann::json> counters;
  auto names = fs.list(dir);
  if (!names.has_value()) return counters;
  for (const std::string& name : *names) {
    if (name == kHwCountersLifespan) continue;
    auto text = fs.read(dir + "/" + name);
    if (text.has_value()) counters.emplace(name, parse_counter(*text));
  }
  return counters;
}

// The used slots of a port's GID table. The gids directory is listed (tables have up to 256
// slots on mlx5 and 1024 on rxe) and each slot is read once; type and netdev are read only for
// used slots, since the kernel answers EINVAL for empty ones (and for ndevs on InfiniBand ports).
std::vector<GidEntry> read_gids(const HostFs& fs, const std::string& port_dir) {
  std::vector<GidEntry> gids;
  auto names = fs.list(port_dir + "/gids");
  if (!names.has_value()) return gids;
  for (const int index : numeric_entries(*names)) {
    const std::string slot = std::to_string(index);
    auto gid = fs.read(port_dir + "/gids/" + slot);
    if (!gid.has_value() || gid->empty() || is_empty_gid(*gid)) continue;
    GidEntry entry;
    entry.index = index;
    entry.gid = std::move(gid).value();
    entry.type = read_optional(fs, port_dir + "/gid_attrs/types/" + slot);
    entry.netdev = read_optional(fs, port_dir + "/gid_attrs/ndevs/" + slot);
    gids.push_back(std::move(entry));
  }
  return gids;
}

// The 0-based port of a netdev on its PCI function: dev_port (decimal), or on kernels before 3.15
// dev_id (hex), which mlx4 used for the same purpose.
std::optional<int> netdev_port_index(const HostFs& fs, const std::string& netdev_dir) {
  if (auto dev_port = fs.read(netdev_dir + "/dev_port"); dev_port.has_value()) {
    if (auto index = parse_decimal_int(*dev_port)) return index;
  }
  if (auto dev_id = fs.read(netdev_dir + "/dev_id"); dev_id.has_value()) return parse_hex_int(*dev_id);
  return std::nullopt;
}

// The netdev behind a port, as ibdev2netdev finds it: the PCI function's netdev whose port index
// is port-1 (this covers IPoIB, whose GIDs carry no netdev); else the netdev of the port's first
// GID (RoCE; index 0 in practice, the link-local GID); else the `parent` file of software devices.
std::string read_port_netdev(const HostFs& fs, const std::string& dev_dir, int port,
                             const std::vector<GidEntry>& gids) {
  const std::string net_dir = dev_dir + "/device/net";
  if (auto netdevs = fs.list(net_dir); netdevs.has_value()) {
    for (const std::string& netdev : *netdevs) {
      if (netdev_port_index(fs, net_dir + "/" + netdev) == port - 1) return netdev;
    }
  }
  for (const GidEntry& gid : gids) {
    if (!gid.netdev.empty()) return gid.netdev;
  }
  return read_optional(fs, dev_dir + "/parent");
}

// "4: ACTIVE" -> "ACTIVE"; text in another form is kept as read so that it still shows.
std::string sysfs_port_state_name(const std::string& text) {
  auto name = parse_port_state(text);
  return name ? *name : text;
}

PortState read_sysfs_port(const HostFs& fs, const std::string& dev_dir, int port) {
  const std::string port_dir = dev_dir + "/ports/" + std::to_string(port);
  PortState state;
  state.port = port;
  state.link_layer = read_optional(fs, port_dir + "/link_layer");
  state.state = sysfs_port_state_name(read_optional(fs, port_dir + "/state"));
  state.phys_state = sysfs_port_state_name(read_optional(fs, port_dir + "/phys_state"));
  state.rate = read_optional(fs, port_dir + "/rate");
  state.rate_gbps = parse_rate_gbps(state.rate).value_or(0);
  // Ethernet ports have lid files too (reading 0x0): LIDs mean something only on InfiniBand.
  if (state.link_layer == "InfiniBand") {
    state.lid = parse_hex_int(read_optional(fs, port_dir + "/lid"));
    state.sm_lid = parse_hex_int(read_optional(fs, port_dir + "/sm_lid"));
  }
  state.gids = read_gids(fs, port_dir);
  state.counters = read_counters(fs, port_dir + "/counters");
  state.hw_counters = read_counters(fs, port_dir + "/hw_counters");
  state.netdev = read_port_netdev(fs, dev_dir, port, state.gids);
  state.forced_traffic_class = parse_forced_traffic_class(read_optional(fs, dev_dir + "/tc/" + std::to_string(port) + "/traffic_class"));
  return state;
}

}  // namespace

std::optional<std::string> parse_port_state(const std::string& text) {
  const std::string_view value = trim_sysfs(text);
  const auto colon = value.find(':');
  if (colon == std::string_view::npos || !parse_unsigned<unsigned>(value.substr(0, colon), 10)) {
    return std::nullopt;
  }
  const std::string_view name = trim_sysfs(value.substr(colon + 1));
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

std::optional<double> parse_rate_gbps(const std::string& text) {
  // The kernel prints "%d%s Gb/sec (%dX%s)", the %s being ".5" or "": only digits and one point.
  const std::string_view value = trim_sysfs(text);
  const auto unit = value.find(" Gb/sec");
  if (unit == std::string_view::npos) return std::nullopt;
  const std::string_view number = value.substr(0, unit);
  const auto point = number.find('.');
  const bool well_formed =
      !number.empty() && is_digit(number.front()) && is_digit(number.back()) &&
      std::all_of(number.begin(), number.end(), [](char c) { return is_digit(c) || c == '.'; }) &&
      (point == std::string_view::npos || number.find('.', point + 1) == std::string_view::npos);
  if (!well_formed) return std::nullopt;
  double rate = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), rate,
                                         std::chars_format::fixed);
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(rate)) {
    return std::nullopt;
  }
  return rate;
}

std::optional<int> parse_rate_width(const std::string& text) {
  const std::string_view value = trim_sysfs(text);
  const auto open = value.find(" Gb/sec (");
  if (open == std::string_view::npos) return std::nullopt;
  const std::string_view width = value.substr(open + std::string_view(" Gb/sec (").size());
  const auto x = width.find('X');
  if (x == std::string_view::npos || x + 1 >= width.size()) return std::nullopt;
  if (width[x + 1] != ')' && width[x + 1] != ' ') return std::nullopt;
  auto lanes = parse_decimal_int(width.substr(0, x));
  if (!lanes || *lanes == 0) return std::nullopt;
  return lanes;
}

std::optional<int> parse_hex_int(const std::string& text) {
  std::string_view value = trim_sysfs(text);
  if (value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
    value.remove_prefix(2);
  }
  const auto number = parse_unsigned<unsigned long long>(value, 16);
  if (!number || *number > static_cast<unsigned long long>(std::numeric_limits<int>::max())) {
    return std::nullopt;
  }
  return static_cast<int>(*number);
}

std::optional<int> parse_forced_traffic_class(const std::string& text) {
  constexpr std::string_view kGlobal = "Global tclass=";
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = trim_sysfs(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.substr(0, kGlobal.size()) != kGlobal) continue;
    const auto value = parse_unsigned<unsigned>(line.substr(kGlobal.size()), 10);
    if (value && *value <= 255) return static_cast<int>(*value);
    return std::nullopt;
  }
  return std::nullopt;
}

nlohmann::json parse_counter(const std::string& text) {
  const std::string_view value = trim_sysfs(text);
  if (auto number = parse_unsigned<std::uint64_t>(value, 10)) return *number;
  return std::string(value);
}

bool is_empty_gid(const std::string& gid) {
  const std::string_view value = trim_sysfs(gid);
  return !value.empty() &&
         std::all_of(value.begin(), value.end(), [](char c) { return c == '0' || c == ':'; });
}

bool is_pci_address(std::string_view text) {
  // domain:bus:device.function, e.g. 0000:3b:00.0; VMD domains have five hex digits (10000:...).
  const auto first = text.find(':');
  if (first == std::string_view::npos || first < 4) return false;
  const std::string_view domain = text.substr(0, first);
  const std::string_view rest = text.substr(first + 1);
  const bool shape = rest.size() == 7 && rest[2] == ':' && rest[5] == '.';
  return shape && std::all_of(domain.begin(), domain.end(), is_hex_digit) && is_hex_digit(rest[0]) &&
         is_hex_digit(rest[1]) && is_hex_digit(rest[3]) && is_hex_digit(rest[4]) && rest[6] >= '0' &&
         rest[6] <= '7';
}

Result<DeviceState> read_rdma_device(const HostFs& fs, const std::string& name) {
  if (!is_safe_device_name(name)) {
    return make_error(ErrorKind::kNotFound, "\"" + name + "\" is not an RDMA device name",
                      std::string(kInfinibandClass));
  }
  const std::string dev_dir = device_dir(name);
  auto port_names = fs.list(dev_dir + "/ports");
  if (!port_names.has_value()) {
    const Error& cause = port_names.error();
    const std::string what = fs.exists(dev_dir)
                                 ? "cannot list the ports of RDMA device " + name
                                 : "no RDMA device " + name + " in sysfs";
    return make_errno_error(what, cause.err_no, cause.where);
  }
  DeviceState device;
  device.name = name;
  device.fw_version = read_optional(fs, dev_dir + "/fw_ver");
  device.node_guid = read_optional(fs, dev_dir + "/node_guid");
  device.hca_type = read_optional(fs, dev_dir + "/hca_type");
  device.board_id = read_optional(fs, dev_dir + "/board_id");
  // "<n>: <name>" (show_node_type): the number, as libibumad's sys_read_uint takes it.
  {
    const std::string node_type = read_optional(fs, dev_dir + "/node_type");
    int n = 0;
    for (const char c : node_type) {
      if (c < '0' || c > '9' || n > 1000) break;
      n = n * 10 + (c - '0');
    }
    device.node_type = n;
  }
  device.pci = read_pci_address(fs, dev_dir);
  if (!device.pci.empty()) device.pcie = read_pcie_link(fs, dev_dir);
  for (const int port : numeric_entries(*port_names)) {
    device.ports.push_back(read_sysfs_port(fs, dev_dir, port));
  }
  return device;
}

Result<std::vector<DeviceState>> read_rdma_devices(const HostFs& fs,
                                                   const std::vector<std::string>* names) {
  std::vector<std::string> wanted;
  if (names != nullptr) {
    wanted = *names;
  } else {
    auto listed = fs.list(kInfinibandClass);
    // No class directory: the RDMA core is not loaded, so this host has no RDMA devices.
    if (!listed.has_value() && listed.error().kind == ErrorKind::kNotFound) return std::vector<DeviceState>{};
    if (!listed.has_value()) return std::move(listed).error();
    wanted = std::move(listed).value();
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<DeviceState> devices;
  for (const std::string& name : wanted) {
    auto device = read_rdma_device(fs, name);
    if (!device.has_value()) return std::move(device).error();
    devices.push_back(std::move(device).value());
  }
  return devices;
}

}  // namespace rdmactl
