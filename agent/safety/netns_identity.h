// SPDX-License-Identifier: Apache-2.0
// Which network namespace, in which boot, a journal was written for.
//
// The lock and journal files are named after the namespace's inode number (/proc/self/ns/net), and
// the kernel reuses those numbers: after a namespace is deleted, another may get its inode, and
// after a reboot every number starts over. A journal left by a run that was killed in a namespace
// that is gone must never be rolled back into whichever namespace now has its number. So a journal
// also records the namespace's cookie (SO_NETNS_COOKIE: a 64-bit number the kernel never gives to
// another namespace while it runs, net_alloc -> atomic64_inc_return(&net_cookie), Linux 5.14 and
// later) and the boot id (/proc/sys/kernel/random/boot_id: new at every boot).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmactl {

struct NetnsIdentity {
  std::string inode;                 // "4026531840"; "host" when /proc/self/ns/net cannot be read
  std::optional<std::uint64_t> cookie;  // nullopt: a kernel before 5.14 (or no socket)
  std::string boot_id;               // "" when unknown
};

// The inode number of this process's network namespace, as in the lock and journal file names.
std::string netns_id();
// This process's network namespace, now. The boot id comes from the running kernel's /proc, never
// from under --root: it is the kernel's, as the namespace is.
NetnsIdentity this_netns();

// Why `recorded` is not the namespace `now` (nullopt: the same one, or nothing tells them apart).
// A different boot, or a different cookie where both have one, is another namespace.
std::optional<std::string> netns_mismatch(const NetnsIdentity& recorded, const NetnsIdentity& now);

nlohmann::json to_json(const NetnsIdentity& identity);
// Missing fields (a journal of an older rdmactl) stay unknown.
NetnsIdentity netns_identity_from_json(const nlohmann::json& json);

}  // namespace rdmactl
