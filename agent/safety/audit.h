// SPDX-License-Identifier: Apache-2.0
// The audit log: every write rdmactl makes to a host, one JSON line each, appended to
// /var/log/rdmactl/audit.jsonl (under --root) and, when rdmactl runs under systemd, logged to
// standard error too, which systemd puts in the journal:
//   {"time": "2026-12-01T10:00:00Z", "node": "gpu-01", "resource": "netdev/ens1f0np0",
//    "field": "mtu", "old": 1500, "new": 9000, "action": "apply", "result": "ok",
//    "who": "cli:alice", "command": "rdmactl apply -f /etc/rdmactl/fabric.yaml"}
// action: apply (a planned change), revert (a rollback's), put back (a side effect undone by a
// rollback), recover (the revert of a killed run's journal), progress (a step of a long write, a
// firmware burn's percentage, in "detail"). result: "ok" or the error. who:
// "cli:<user>" (the login name, or SUDO_USER's under sudo), "agent:<trigger>" for serve, with
// "token:<first 8 hex digits of the token's SHA-256>" for an API request. command: the CLI's
// command line (as the host lock records it); the agent's lines have none (its trigger says why).
#pragma once

#include <string>
#include <string_view>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/state/change.h"

namespace rdmactl {

class AuditLog {
 public:
  AuditLog(const HostFs& fs, std::string node, std::string who, std::string command = "");
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;
  // Appends one line (and logs it under systemd). A log that cannot be written is a warning, not
  // a failed change: the write it records has happened.
  // `detail`, when given, is added as "detail" (a burn's progress: action "progress").
  void record(const Change& change, std::string_view action, const Result<void>& result,
              std::string_view detail = {}) const;
  void set_who(std::string who) { who_ = std::move(who); }

 private:
  const HostFs& fs_;
  std::string node_;
  std::string who_;
  std::string command_;
  // The log, opened (O_APPEND) at the first record and kept for this object's life: one write(2)
  // a line, not an open and a close. The agent makes one AuditLog a reconcile, so a log rotated
  // by renaming is reopened at the next one.
  mutable int fd_ = -1;
  mutable bool open_failed_ = false;
};

// "cli:alice": the user running this command (SUDO_USER under sudo).
std::string cli_user();
// "token:3fa2c1d0": a short fingerprint of an API token, never the token.
std::string token_fingerprint(std::string_view token);

}  // namespace rdmactl
