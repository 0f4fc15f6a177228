// SPDX-License-Identifier: Apache-2.0
#include "agent/core/result.h"

#include <cstring>

namespace rdmactl {

std::string Diagnostic::to_string() const {
  std::string out = file.empty() ? "<spec>" : file;
  if (line > 0) {
    out.append(":").append(std::to_string(line));
    if (column > 0) out.append(":").append(std::to_string(column));
  }
  out.append(": ");
  if (!path.empty()) out.append(path).append(": ");
  out.append(message);
  return out;
}

std::string Error::to_string() const {
  std::string out;
  if (!where.empty()) out = where + ": ";
  out += message;
  if (err_no != 0) out += std::string(" (") + std::strerror(err_no) + ")";
  return out;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidSpec: return "invalid-spec";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kNotSupported: return "not-supported";
    case ErrorKind::kNotFound: return "not-found";
    case ErrorKind::kPermission: return "permission";
    case ErrorKind::kPlatform: return "platform";
    case ErrorKind::kVerification: return "verification";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kInterrupted: return "interrupted";
  }
  return "platform";
}

int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return 64;
    case ErrorKind::kInvalidSpec: return 65;
    default: return 1;
  }
}

bool can_retry(const Error& error) {
  return error.kind == ErrorKind::kTimeout || error.err_no == EBUSY || error.err_no == EAGAIN;
}

Error make_error(ErrorKind kind, std::string message, std::string where, int err_no) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  e.where = std::move(where);
  e.err_no = err_no;
  return e;
}

Error make_errno_error(std::string what, int err_no, std::string where) {
  ErrorKind kind = ErrorKind::kPlatform;
  switch (err_no) {
    case EPERM:
    case EACCES: kind = ErrorKind::kPermission; break;
    case ENOENT:
    case ENODEV: kind = ErrorKind::kNotFound; break;
    case EOPNOTSUPP: kind = ErrorKind::kNotSupported; break;
    default: break;
  }
  return make_error(kind, std::move(what), std::move(where), err_no);
}

}  // namespace rdmactl
