// SPDX-License-Identifier: Apache-2.0
// libibverbs owners: opening, querying and connecting; every failure carries the verbs call and errno.
#include "agent/platform/verbs.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rdmactl::verbs {
namespace {

// ibv_modify_qp and ibv_query_* return the errno value; the allocating calls return NULL and set errno.
Error verbs_error(const std::string& what, int err_no, const std::string& where = {}) {
  if (err_no == 0) err_no = EIO;
  return make_errno_error(what, err_no, where);
}

}  // namespace

Result<DeviceList> DeviceList::open() {
  int count = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    // ENOSYS: the kernel has no verbs support (no ib_uverbs); report it as "not supported".
    const int e = errno;
    if (e == ENOSYS) return make_error(ErrorKind::kNotSupported, "the kernel has no RDMA verbs support (ib_uverbs)", {}, e);
    return verbs_error("ibv_get_device_list", e);
  }
  return DeviceList(list, count);
}

Result<ibv_device*> DeviceList::find(const std::string& name) const {
  std::string names;
  for (int i = 0; i < count_; ++i) {
    ibv_device* device = list_.get()[i];
    if (name == ibv_get_device_name(device)) return device;
    names += std::string(names.empty() ? "" : ", ") + ibv_get_device_name(device);
  }
  return make_error(ErrorKind::kNotFound,
                    "libibverbs has no device " + name + " (it sees: " + (names.empty() ? "none" : names) +
                        "; is /dev/infiniband/uverbs* there and the provider library installed?)",
                    name);
}

Result<Context> Context::open(ibv_device* device) {
  errno = 0;
  ibv_context* raw = ibv_open_device(device);
  if (raw == nullptr) return verbs_error("ibv_open_device", errno, ibv_get_device_name(device));
  return Context(raw);
}

std::string Context::name() const { return ibv_get_device_name(get()->device); }

Result<ibv_device_attr> Context::query_device() const {
  ibv_device_attr attr{};
  if (int rc = ibv_query_device(get(), &attr); rc != 0) return verbs_error("ibv_query_device", rc, name());
  return attr;
}

Result<ibv_port_attr> Context::query_port(int port) const {
  ibv_port_attr attr{};
  if (int rc = ibv_query_port(get(), static_cast<uint8_t>(port), &attr); rc != 0) {
    return verbs_error("ibv_query_port", rc, name() + "/" + std::to_string(port));
  }
  return attr;
}

Result<ibv_gid> Context::query_gid(int port, int index) const {
  ibv_gid gid{};
  if (int rc = ibv_query_gid(get(), static_cast<uint8_t>(port), index, &gid); rc != 0) {
    return verbs_error("ibv_query_gid index " + std::to_string(index), rc, name() + "/" + std::to_string(port));
  }
  return gid;
}

Result<ProtectionDomain> ProtectionDomain::open(const Context& context) {
  errno = 0;
  ibv_pd* raw = ibv_alloc_pd(context.get());
  if (raw == nullptr) return verbs_error("ibv_alloc_pd", errno, context.name());
  return ProtectionDomain(raw);
}

Result<MemoryRegion> MemoryRegion::open(const ProtectionDomain& pd, size_t bytes, int access) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const size_t align = page > 0 ? static_cast<size_t>(page) : 4096;
  const size_t rounded = (bytes + align - 1) / align * align;
  std::unique_ptr<uint8_t, Free> buffer(static_cast<uint8_t*>(std::aligned_alloc(align, rounded)));
  if (!buffer) return make_error(ErrorKind::kPlatform, "out of memory for a " + std::to_string(rounded) + " byte buffer");
  std::memset(buffer.get(), 0, rounded);
  errno = 0;
  ibv_mr* raw = ibv_reg_mr(pd.get(), buffer.get(), rounded, access);
  if (raw == nullptr) {
    // ENOMEM here is usually the locked-memory limit (ulimit -l), not the machine's memory.
    const int e = errno;
    Error error = verbs_error("ibv_reg_mr of " + std::to_string(rounded) + " bytes", e);
    if (e == ENOMEM) error.message += " (check the locked-memory limit: ulimit -l)";
    return error;
  }
  return MemoryRegion(std::move(buffer), rounded, raw);
}

Result<CompletionQueue> CompletionQueue::open(const Context& context, int entries) {
  errno = 0;
  ibv_cq* raw = ibv_create_cq(context.get(), entries, nullptr, nullptr, 0);
  if (raw == nullptr) return verbs_error("ibv_create_cq of " + std::to_string(entries) + " entries", errno, context.name());
  return CompletionQueue(raw);
}

Result<QueuePair> QueuePair::open_rc(const ProtectionDomain& pd, const CompletionQueue& send_cq,
                                     const CompletionQueue& recv_cq, const Caps& caps) {
  ibv_qp_init_attr init{};
  init.send_cq = send_cq.get();
  init.recv_cq = recv_cq.get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;  // selective signalling: only WRs flagged IBV_SEND_SIGNALED complete on the CQ
  init.cap.max_send_wr = caps.send_depth;
  init.cap.max_recv_wr = caps.recv_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = caps.max_inline;
  errno = 0;
  ibv_qp* raw = ibv_create_qp(pd.get(), &init);
  if (raw == nullptr && caps.max_inline > 0) {
    // Some devices grant no inline data at all; the test works without it, only a little slower.
    init.cap.max_inline_data = 0;
    errno = 0;
    raw = ibv_create_qp(pd.get(), &init);
  }
  if (raw == nullptr) {
    return verbs_error("ibv_create_qp (RC, send queue " + std::to_string(caps.send_depth) + ")", errno);
  }
  // ibv_create_qp writes back what it granted.
  return QueuePair(raw, init.cap.max_inline_data);
}

Result<void> QueuePair::to_init(int port, int access) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port);
  attr.qp_access_flags = static_cast<unsigned>(access);
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (int rc = ibv_modify_qp(get(), &attr, mask); rc != 0) {
    return verbs_error("ibv_modify_qp to INIT", rc, "QP " + std::to_string(qp_num()));
  }
  return ok();
}

Result<void> QueuePair::to_rtr(const QpPath& path, const QpEndpoint& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = path.mtu;
  attr.dest_qp_num = remote.qp_num;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;  // 0.64 ms, perftest's value
  attr.ah_attr.port_num = static_cast<uint8_t>(path.port);
  attr.ah_attr.sl = path.sl;
  attr.ah_attr.src_path_bits = 0;
  if (path.gid_index >= 0) {
    // RoCE (and routed InfiniBand): addressed by GID; the GID's type decides RoCE v1 or v2 (UDP).
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(path.gid_index);
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.grh.traffic_class = path.traffic_class;
  } else {
    attr.ah_attr.is_global = 0;
    attr.ah_attr.dlid = remote.lid;
  }
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int rc = ibv_modify_qp(get(), &attr, mask); rc != 0) {
    return verbs_error("ibv_modify_qp to RTR (remote QP " + std::to_string(remote.qp_num) + ", MTU " +
                           std::to_string(mtu_bytes(path.mtu)) + ", GID index " + std::to_string(path.gid_index) +
                           ", traffic class " + std::to_string(path.traffic_class) + ", SL " + std::to_string(path.sl) + ")",
                       rc, "QP " + std::to_string(qp_num()));
  }
  return ok();
}

Result<void> QueuePair::to_rts(uint32_t psn) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try, perftest's value
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = psn;
  attr.max_rd_atomic = 1;
  const int mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                   IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = ibv_modify_qp(get(), &attr, mask); rc != 0) {
    return verbs_error("ibv_modify_qp to RTS", rc, "QP " + std::to_string(qp_num()));
  }
  return ok();
}

std::string gid_to_string(const ibv_gid& gid) {
  char text[40];
  const uint8_t* r = gid.raw;
  std::snprintf(text, sizeof text, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0], r[1],
                r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
  return text;
}

int mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

std::string completion_error(const ibv_wc& wc) {
  return std::string(ibv_wc_status_str(wc.status)) + " (status " + std::to_string(wc.status) + ", vendor error 0x" +
         [&] {
           char hex[16];
           std::snprintf(hex, sizeof hex, "%x", wc.vendor_err);
           return std::string(hex);
         }() +
         ", WR " + std::to_string(wc.wr_id) + ")";
}

}  // namespace rdmactl::verbs
