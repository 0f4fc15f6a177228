// SPDX-License-Identifier: Apache-2.0
// Result<T> and Error: how every fallible function in rdmactl reports failure.
//
// Shaped like C++23 std::expected so that the move to it is mechanical. No exception crosses a
// module boundary: libraries that throw (yaml-cpp, nlohmann-json) are caught where they are called.
// The error kind decides the exit code and whether an operation may be retried.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace rdmactl {

enum class ErrorKind {
  kInvalidSpec,   // the spec is wrong: exit 65, nothing touched
  kUsage,         // the command line is wrong: exit 64
  kNotSupported,  // the host or driver cannot do this
  kNotFound,      // a device, netdev or file that should exist does not
  kPermission,    // EPERM/EACCES: usually "run as root"
  kPlatform,      // the kernel or a tool failed (netlink, sysfs, a command)
  kVerification,  // applied, but observing again shows drift
  kTimeout,
  kInterrupted,   // a signal (SIGTERM, SIGINT, SIGHUP) asked the run to stop before this step
};

// One located problem in a spec: file:line:column, the field path and what is wrong.
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
  std::string path;  // field path, e.g. defaults.interfaces[0].mtu
  std::string message;

  std::string to_string() const;
  bool operator==(const Diagnostic&) const = default;
};

struct Error {
  ErrorKind kind = ErrorKind::kPlatform;
  std::string message;
  std::string where;  // the resource or spec path it concerns, when there is one
  int err_no = 0;
  std::vector<Diagnostic> diagnostics;  // for kInvalidSpec: every problem found, in file order

  std::string to_string() const;
};

const char* error_kind_name(ErrorKind kind);
// sysexits-style exit code for a failure of this kind (64 usage, 65 invalid spec, 1 otherwise).
int exit_code_for(ErrorKind kind);
// Transient failures worth retrying (EBUSY, EAGAIN, timeouts).
bool can_retry(const Error& error);

Error make_error(ErrorKind kind, std::string message, std::string where = {}, int err_no = 0);
// An error from errno, e.g. make_errno_error("write /proc/sys/net/ipv4/tcp_ecn", errno):
// EPERM/EACCES become kPermission, ENOENT kNotFound, EOPNOTSUPP kNotSupported.
Error make_errno_error(std::string what, int err_no, std::string where = {});

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}       // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}   // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Result<void> ok() { return {}; }

}  // namespace rdmactl
