// SPDX-License-Identifier: Apache-2.0
// The network namespace's identity: inode, cookie and boot id (see netns_identity.h).
#include "agent/safety/netns_identity.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "agent/core/fd.h"

namespace rdmactl {
namespace {

constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";

std::optional<std::uint64_t> netns_cookie() {
#ifdef SO_NETNS_COOKIE
  // Any socket belongs to the namespace of the thread that made it (sock_net); a datagram socket
  // of AF_UNIX needs no privilege and no network.
  const UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::nullopt;
  std::uint64_t cookie = 0;
  socklen_t length = sizeof cookie;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &length) != 0 || length != sizeof cookie) {
    return std::nullopt;  // ENOPROTOOPT before Linux 5.14
  }
  return cookie;
#else
  return std::nullopt;
#endif
}

std::string boot_id() {
  std::ifstream in(kBootIdPath);
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace

std::string netns_id() {
  struct stat st {};
  if (::stat("/proc/self/ns/net", &st) != 0) return "host";
  return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

NetnsIdentity this_netns() { return NetnsIdentity{netns_id(), netns_cookie(), boot_id()}; }

std::optional<std::string> netns_mismatch(const NetnsIdentity& recorded, const NetnsIdentity& now) {
  if (!recorded.boot_id.empty() && !now.boot_id.empty() && recorded.boot_id != now.boot_id) {
    return "it was written before the host last booted (boot id " + recorded.boot_id + ", now " + now.boot_id +
           "): the namespace it describes, and every runtime setting the killed run made, are gone";
  }
  if (recorded.cookie && now.cookie && *recorded.cookie != *now.cookie) {
    return "it was written in another network namespace (cookie " + std::to_string(*recorded.cookie) +
           ", this one's is " + std::to_string(*now.cookie) + ") that had the same inode number " + recorded.inode +
           ", which the kernel reuses once a namespace is deleted";
  }
  if (!recorded.inode.empty() && recorded.inode != now.inode) {
    return "it was written in network namespace " + recorded.inode + ", not this one (" + now.inode + ")";
  }
  return std::nullopt;
}

nlohmann::json to_json(const NetnsIdentity& identity) {
  return {{"inode", identity.inode},
          {"cookie", identity.cookie ? nlohmann::json(*identity.cookie) : nlohmann::json(nullptr)},
          {"bootId", identity.boot_id}};
}

NetnsIdentity netns_identity_from_json(const nlohmann::json& json) {
  NetnsIdentity out;
  if (!json.is_object()) return out;
  if (json.contains("inode") && json["inode"].is_string()) out.inode = json["inode"].get<std::string>();
  if (json.contains("cookie") && json["cookie"].is_number_unsigned()) out.cookie = json["cookie"].get<std::uint64_t>();
  if (json.contains("bootId") && json["bootId"].is_string()) out.boot_id = json["bootId"].get<std::string>();
  return out;
}

}  // namespace rdmactl
