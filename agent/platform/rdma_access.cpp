// SPDX-License-Identifier: Apache-2.0
// Locked memory limits and RDMA device files (rdma_access.h).
#include "agent/platform/rdma_access.h"

#include <grp.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "agent/platform/mnl.h"
#include "agent/platform/rdma_netlink.h"

namespace rdmactl {
namespace {

constexpr uint16_t kSysGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line.substr(0, line.find('#')));
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Every memlock line of one pam_limits file: "<domain> <type> memlock <value>".
void read_limits_file(const HostFs& fs, const std::string& file, nlohmann::json& out) {
  auto text = fs.read_file(file);
  if (!text) return;
  std::istringstream in(*text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    auto w = words(line);
    if (w.size() < 4) continue;
    // pam_limits lower-cases the item, type and value (parse_config_file).
    for (std::string& word : w) {
      std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    if (w[2] != "memlock") continue;
    out.push_back({{"file", file}, {"line", number}, {"domain", w[0]}, {"type", w[1]}, {"value", w[3]}});
  }
}

// The last DefaultLimitMEMLOCK= of one systemd configuration file's [Manager] section.
void read_systemd_file(const HostFs& fs, const std::string& file, nlohmann::json& out) {
  auto text = fs.read_file(file);
  if (!text) return;
  std::istringstream in(*text);
  int number = 0;
  bool manager = false;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto w = words(line);
    if (w.empty()) continue;
    if (w[0].front() == '[') {
      manager = w[0] == "[Manager]";
      continue;
    }
    // KEY=VALUE, with blanks around '=' allowed (systemd's config parser strips them).
    const std::string text = line.substr(0, line.find('#'));
    const size_t eq = text.find('=');
    if (!manager || eq == std::string::npos) continue;
    const auto key = words(text.substr(0, eq)), value = words(text.substr(eq + 1));
    if (key.size() == 1 && key[0] == "DefaultLimitMEMLOCK") {
      out = {{"value", value.empty() ? std::string() : value[0]}, {"file", file}, {"line", number}};
    }
  }
}

// systemd-system.conf(5)'s drop-in order: by file name across the directories, /etc's masking the
// same name in /run, /usr/local/lib and /usr/lib.
std::vector<std::string> systemd_dropins(const HostFs& fs) {
  std::map<std::string, std::string> by_name;
  for (const char* dir : {"/usr/lib/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d",
                          "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d"}) {
    auto entries = fs.list(dir);
    if (!entries) continue;
    for (const std::string& name : *entries) {
      if (name.size() > 5 && name.ends_with(".conf")) by_name[name] = std::string(dir) + "/" + name;
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, path] : by_name) out.push_back(path);
  return out;
}

// The group's name: from the host's group database on a live host, from the tree's /etc/group
// under --root (whose groups are not this host's); the number when neither names it.
std::string group_name(const HostFs& fs, unsigned gid) {
  if (fs.root() == "/" || fs.root().empty()) {
    if (const group* g = ::getgrgid(gid)) return g->gr_name;
    return std::to_string(gid);
  }
  if (auto text = fs.read_file("/etc/group")) {
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      // name:password:GID:members (group(5))
      const size_t a = line.find(':'), b = line.find(':', a + 1), c = line.find(':', b + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      if (line.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1) == std::to_string(gid)) {
        return line.substr(0, a);
      }
    }
  }
  return std::to_string(gid);
}

nlohmann::json device_file(const HostFs& fs, const std::string& path) {
  nlohmann::json out = {{"path", path}};
  struct stat st {};
  if (::stat(fs.path(path).c_str(), &st) != 0) {
    out["missing"] = true;
    return out;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  out["mode"] = mode;
  out["group"] = group_name(fs, st.st_gid);
  return out;
}

}  // namespace

void observe_access(const HostFs& fs, HostState& state) {
  nlohmann::json limits = nlohmann::json::array();
  read_limits_file(fs, "/etc/security/limits.conf", limits);
  if (auto entries = fs.list("/etc/security/limits.d")) {
    for (const std::string& name : *entries) {
      if (name.ends_with(".conf")) read_limits_file(fs, "/etc/security/limits.d/" + name, limits);
    }
  }
  nlohmann::json systemd = nlohmann::json::object();
  read_systemd_file(fs, "/etc/systemd/system.conf", systemd);
  for (const std::string& file : systemd_dropins(fs)) read_systemd_file(fs, file, systemd);

  nlohmann::json devices = nlohmann::json::array();
  if (auto entries = fs.list("/sys/class/infiniband_verbs")) {
    for (const std::string& name : *entries) {
      if (name.rfind("uverbs", 0) != 0) continue;
      nlohmann::json file = device_file(fs, "/dev/infiniband/" + name);
      if (auto ibdev = fs.read("/sys/class/infiniband_verbs/" + name + "/ibdev")) file["ibdev"] = *ibdev;
      devices.push_back(std::move(file));
    }
  }
  devices.push_back(device_file(fs, "/dev/infiniband/rdma_cm"));
  state.access = nlohmann::json{{"memlock", {{"limits", limits}, {"systemd", systemd}}}, {"devices", devices}};
}

Result<std::string> parse_sys_get_netns_mode(const nlmsghdr* message) {
  if (message->nlmsg_type != kSysGetType) {
    return make_error(ErrorKind::kPlatform, "unexpected netlink message type in RDMA_NLDEV_CMD_SYS_GET reply", {},
                      EBADMSG);
  }
  static constexpr AttributePolicy kPolicy[] = {
      {RDMA_NLDEV_SYS_ATTR_NETNS_MODE, MNL_TYPE_U8, "RDMA_NLDEV_SYS_ATTR_NETNS_MODE", true},
  };
  const nlattr* tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE + 1] = {};
  if (auto parsed = parse_attributes(message, 0, kPolicy, tb); !parsed) return parsed.error();
  return std::string(mnl_attr_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]) ? "shared" : "exclusive");
}

Result<std::string> read_rdma_netns_mode() {
  Result<MnlSocket> socket = open_rdma_netlink();
  if (!socket) return socket.error();
  MnlMessage request;
  request.put_header(kSysGetType, NLM_F_REQUEST | NLM_F_ACK);
  std::string mode;
  auto done = socket->talk(
      request,
      [&](const nlmsghdr* reply) -> Result<void> {
        auto parsed = parse_sys_get_netns_mode(reply);
        if (!parsed) return parsed.error();
        mode = *parsed;
        return ok();
      },
      "RDMA_NLDEV_CMD_SYS_GET");
  if (!done) return done.error();
  return mode;
}

}  // namespace rdmactl
