// SPDX-License-Identifier: Apache-2.0
// Move-only RAII owners over libibverbs for the self-test: the device list, a device context, a
// protection domain, a registered buffer, a completion queue and an RC queue pair with the
// INIT -> RTR -> RTS steps that connect it.
//
// Each owner releases its object exactly once, in the reverse order of creation when they are
// declared in that order (a QP before its CQs, an MR before its PD, everything before the context):
// libibverbs refuses to free a PD or CQ that is still in use (EBUSY) and then leaks it.
// Fallible constructors are `static Result<T> open(...)`; verbs errors become Error with the errno.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "agent/core/result.h"

namespace rdmactl::verbs {

// Owns one pointer and its release function; the common part of every owner below.
template <typename T, int (*Release)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* raw) : raw_(raw) {}
  Handle(Handle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      raw_ = std::exchange(other.raw_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  T* get() const { return raw_; }
  void reset() {
    if (raw_ != nullptr) Release(std::exchange(raw_, nullptr));
  }

 private:
  T* raw_ = nullptr;
};

// The RDMA devices libibverbs sees (ibv_get_device_list).
class DeviceList {
 public:
  static Result<DeviceList> open();
  // The device named `name` (mlx5_0, rxe0), or kNotFound listing the devices there are.
  Result<ibv_device*> find(const std::string& name) const;
  int size() const { return count_; }

 private:
  struct Free {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
  };
  DeviceList(ibv_device** list, int count) : list_(list), count_(count) {}
  std::unique_ptr<ibv_device*, Free> list_;
  int count_ = 0;
};

// An opened device (ibv_open_device).
class Context {
 public:
  static Result<Context> open(ibv_device* device);
  ibv_context* get() const { return handle_.get(); }
  std::string name() const;

  Result<ibv_device_attr> query_device() const;
  Result<ibv_port_attr> query_port(int port) const;
  Result<ibv_gid> query_gid(int port, int index) const;

 private:
  explicit Context(ibv_context* raw) : handle_(raw) {}
  Handle<ibv_context, ibv_close_device> handle_;
};

class ProtectionDomain {
 public:
  static Result<ProtectionDomain> open(const Context& context);
  ibv_pd* get() const { return handle_.get(); }

 private:
  explicit ProtectionDomain(ibv_pd* raw) : handle_(raw) {}
  Handle<ibv_pd, ibv_dealloc_pd> handle_;
};

// A page-aligned buffer of its own, registered with `access` (IBV_ACCESS_*). The buffer lives as
// long as the registration: freeing memory the device may still write is what this type prevents.
class MemoryRegion {
 public:
  static Result<MemoryRegion> open(const ProtectionDomain& pd, size_t bytes, int access);
  ibv_mr* get() const { return handle_.get(); }
  uint8_t* data() const { return buffer_.get(); }
  size_t size() const { return bytes_; }
  uint32_t lkey() const { return handle_.get()->lkey; }
  uint32_t rkey() const { return handle_.get()->rkey; }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(buffer_.get()); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  MemoryRegion(std::unique_ptr<uint8_t, Free> buffer, size_t bytes, ibv_mr* raw)
      : buffer_(std::move(buffer)), bytes_(bytes), handle_(raw) {}
  // Declared before handle_ so that it is destroyed after the deregistration.
  std::unique_ptr<uint8_t, Free> buffer_;
  size_t bytes_ = 0;
  Handle<ibv_mr, ibv_dereg_mr> handle_;
};

class CompletionQueue {
 public:
  static Result<CompletionQueue> open(const Context& context, int entries);
  ibv_cq* get() const { return handle_.get(); }

 private:
  explicit CompletionQueue(ibv_cq* raw) : handle_(raw) {}
  Handle<ibv_cq, ibv_destroy_cq> handle_;
};

// Where an RC queue pair sends to: the other side's QP number and first PSN, and its address on
// the fabric (a GID on RoCE, a LID on InfiniBand where gid_index is -1).
struct QpEndpoint {
  uint32_t qp_num = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  ibv_gid gid{};
};

// How the path between the two sides is addressed; the same for both sides of a loopback.
struct QpPath {
  int port = 1;
  int gid_index = -1;  // -1: LID addressing (InfiniBand)
  ibv_mtu mtu = IBV_MTU_1024;
  // The class: the GRH traffic class (RoCE v2: the IP TOS byte; mlx5 programs its DSCP, rxe copies
  // it whole) and the SL (mlx5 RoCE: the Ethernet priority, sl & 7; InfiniBand: the SL).
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
};

class QueuePair {
 public:
  struct Caps {
    uint32_t send_depth = 128;
    uint32_t recv_depth = 1;
    uint32_t max_inline = 0;  // asked for; the device may grant more, or refuse (then retry with 0)
  };
  static Result<QueuePair> open_rc(const ProtectionDomain& pd, const CompletionQueue& send_cq,
                                   const CompletionQueue& recv_cq, const Caps& caps);
  ibv_qp* get() const { return handle_.get(); }
  uint32_t qp_num() const { return handle_.get()->qp_num; }
  uint32_t max_inline() const { return max_inline_; }

  // RESET -> INIT on `port`, remote peers allowed `access` (IBV_ACCESS_REMOTE_WRITE, ...).
  Result<void> to_init(int port, int access);
  // INIT -> RTR: receive from `remote` over `path`.
  Result<void> to_rtr(const QpPath& path, const QpEndpoint& remote);
  // RTR -> RTS: send, starting at `psn`.
  Result<void> to_rts(uint32_t psn);

 private:
  QueuePair(ibv_qp* raw, uint32_t max_inline) : handle_(raw), max_inline_(max_inline) {}
  Handle<ibv_qp, ibv_destroy_qp> handle_;
  uint32_t max_inline_ = 0;
};

// "fe80:0000:...:2b3c", the form sysfs prints, so that GIDs compare with the observed state.
std::string gid_to_string(const ibv_gid& gid);
// ibv_mtu -> bytes (IBV_MTU_4096 -> 4096).
int mtu_bytes(ibv_mtu mtu);
// What a completion status means, for messages ("transport retry counter exceeded").
std::string completion_error(const ibv_wc& wc);

}  // namespace rdmactl::verbs
