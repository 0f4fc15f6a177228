// SPDX-License-Identifier: Apache-2.0
// The loopback self-test: set-up through agent/platform/verbs.h, then the two measurements.
#include "agent/selftest/loopback.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <tuple>

#include "agent/platform/verbs.h"
#include "agent/selftest/verdict.h"

namespace rdmactl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kIpv4MappedPrefix = "0000:0000:0000:0000:0000:ffff:";
constexpr const char* kZeroGid = "0000:0000:0000:0000:0000:0000:0000:0000";
// Spins between clock reads while waiting for a byte to change.
constexpr int kSpinsPerClockRead = 1024;

// "0000:0000:0000:0000:0000:ffff:0a00:020f" -> "10.0.2.15"; "" when not IPv4-mapped.
std::string ipv4_of_gid(const std::string& gid) {
  if (gid.size() != 39 || gid.compare(0, 30, kIpv4MappedPrefix) != 0) return {};
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(gid.c_str() + 30, "%2x%2x:%2x%2x", &a, &b, &c, &d) != 4) return {};
  return std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c) + "." + std::to_string(d);
}

bool has_address(const std::vector<std::string>& cidrs, const std::string& ip) {
  return std::any_of(cidrs.begin(), cidrs.end(),
                     [&](const std::string& cidr) { return cidr.substr(0, cidr.find('/')) == ip; });
}

std::string loopback_port_name(const DeviceState& device, const PortState& port) {
  return device.name + "/" + std::to_string(port.port);
}

const char* verbs_port_state_name(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
  }
  return "unknown";
}

// One side of the loopback: its queue pair (with its send queue's bookkeeping) and its buffer.
struct Side {
  SendQueue sq;
  const verbs::QueuePair* qp = nullptr;
  const verbs::MemoryRegion* mr = nullptr;
};

// Waits until the byte at `p` reads `value`: how the receiving side of ib_write_lat learns that a
// write landed, without a receive queue or completion in the measured path.
Result<void> wait_for_byte(const uint8_t* p, uint8_t value, std::chrono::milliseconds stall_timeout, int iteration) {
  const volatile uint8_t* byte = p;
  const auto deadline = Clock::now() + stall_timeout;
  for (int spins = 0; *byte != value; ++spins) {
    if (spins == kSpinsPerClockRead) {
      spins = 0;
      if (Clock::now() > deadline) {
        return make_error(ErrorKind::kTimeout, "latency round trip " + std::to_string(iteration) + ": the write did not land within " +
                                                   std::to_string(stall_timeout.count()) + " ms");
      }
    }
  }
  return ok();
}

// ib_write_lat: A writes latency_bytes into B's buffer; B sees the last byte change and writes back
// into A's; A sees its last byte change. Half that round trip is one sample. Each side sends from
// the upper half of its buffer and is written into in the lower half, so that what it sends never
// looks like what it waits for.
Result<std::vector<double>> measure_latency(Side& a, Side& b, const LoopbackOptions& o) {
  const size_t size = o.latency_bytes;
  auto make_wr = [&](Side& from, const Side& to, ibv_sge& sge) {
    sge = {from.mr->address() + size, static_cast<uint32_t>(size), from.mr->lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = to.mr->address();
    wr.wr.rdma.rkey = to.mr->rkey();
    return wr;
  };
  ibv_sge sge_a{}, sge_b{};
  ibv_send_wr wr_a = make_wr(a, b, sge_a);
  ibv_send_wr wr_b = make_wr(b, a, sge_b);
  auto post = [&](Side& side, ibv_send_wr& wr) -> Result<void> {
    SendQueue& sq = side.sq;
    if (auto room = sq.make_room(1, o.stall_timeout); !room) return room.error();
    wr.send_flags = (sq.posted % sq.signal_every == sq.signal_every - 1) ? IBV_SEND_SIGNALED : 0;
    // Inline: the data travels in the work request, as ib_write_lat does for small messages.
    if (size <= side.qp->max_inline()) wr.send_flags |= IBV_SEND_INLINE;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(sq.qp, &wr, &bad); rc != 0) return make_errno_error("ibv_post_send (latency)", rc);
    ++sq.posted;
    return ok();
  };
  std::memset(a.mr->data(), 0, 2 * size);
  std::memset(b.mr->data(), 0, 2 * size);
  uint8_t* a_in_last = a.mr->data() + size - 1;
  uint8_t* a_out_last = a.mr->data() + 2 * size - 1;
  uint8_t* b_in_last = b.mr->data() + size - 1;
  uint8_t* b_out_last = b.mr->data() + 2 * size - 1;

  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(std::max(o.latency_iterations, 0)));
  const auto give_up_at = Clock::now() + o.duration;
  for (int i = 0; i < o.latency_iterations; ++i) {
    const uint8_t mark = static_cast<uint8_t>(i % 255 + 1);  // never 0, the buffers' initial value
    *a_out_last = mark;
    const auto t0 = Clock::now();
    if (auto r = post(a, wr_a); !r) return r.error();
    if (auto r = wait_for_byte(b_in_last, mark, o.stall_timeout, i); !r) return r.error();
    *b_out_last = mark;
    if (auto r = post(b, wr_b); !r) return r.error();
    if (auto r = wait_for_byte(a_in_last, mark, o.stall_timeout, i); !r) return r.error();
    const auto t1 = Clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
    // Completions are reaped outside the measured interval.
    if (auto r = a.sq.poll(); !r) return r.error();
    if (auto r = b.sq.poll(); !r) return r.error();
    if (static_cast<int>(samples.size()) >= kMinLatencySamples && t1 > give_up_at) break;
  }
  return samples;
}

// The port's end of both QPs: its LID, and on RoCE the chosen GID, checked against the device's.
Result<verbs::QpEndpoint> port_endpoint(const verbs::Context& context, const PortState& port,
                                        const ibv_port_attr& port_attr, const GidChoice& gid_choice,
                                        const std::string& where) {
  if (port_attr.state != IBV_PORT_ACTIVE) {
    return make_error(ErrorKind::kPlatform, std::string("the port is ") + verbs_port_state_name(port_attr.state) + " now, not ACTIVE", where);
  }
  verbs::QpEndpoint endpoint;
  endpoint.lid = port_attr.lid;
  if (gid_choice.index >= 0) {
    auto gid = context.query_gid(port.port, gid_choice.index);
    if (!gid) return gid.error();
    endpoint.gid = *gid;
    // The recorded table and the device's must agree, or the observation is stale (address changed).
    if (!gid_choice.gid.empty() && verbs::gid_to_string(*gid) != gid_choice.gid) {
      return make_error(ErrorKind::kPlatform,
                        "GID index " + std::to_string(gid_choice.index) + " is " + verbs::gid_to_string(*gid) +
                            " on the device but " + gid_choice.gid + " in sysfs when observed; run again",
                        where);
    }
  }
  return endpoint;
}

// Takes both QPs through INIT, RTR and RTS, each connected to the other on `path`.
Result<void> connect_pair(verbs::QueuePair& qp_a, verbs::QueuePair& qp_b, const PortState& port,
                          const verbs::QpEndpoint& endpoint, const verbs::QpPath& path) {
  verbs::QpEndpoint end_a = endpoint, end_b = endpoint;
  end_a.qp_num = qp_a.qp_num();
  end_a.psn = 0x1000;
  end_b.qp_num = qp_b.qp_num();
  end_b.psn = 0x2000;
  for (auto [qp, remote, psn] : {std::tuple{&qp_a, end_b, end_a.psn}, std::tuple{&qp_b, end_a, end_b.psn}}) {
    if (auto r = qp->to_init(port.port, IBV_ACCESS_REMOTE_WRITE); !r) return r.error();
    if (auto r = qp->to_rtr(path, remote); !r) return r.error();
    if (auto r = qp->to_rts(psn); !r) return r.error();
  }
  return ok();
}

// Bandwidth from A into B, then latency, into `result`; the verdict against the port's rate.
SelftestResult measure_and_judge(Side& a, Side& b, SelftestResult result, const PortState& port,
                                 const LoopbackOptions& o, const GidChoice& gid_choice, ibv_mtu active_mtu) {
  const verbs::MemoryRegion* mr_a = a.mr;
  const verbs::MemoryRegion* mr_b = b.mr;
  std::string error;
  // A pattern that a write which did not land cannot leave behind (B's buffer starts zeroed).
  for (size_t i = 0; i < o.message_bytes; ++i) mr_a->data()[i] = static_cast<uint8_t>(i * 7 + 1);
  auto bandwidth = measure_write_bandwidth(a.sq, {mr_a->address(), mr_a->lkey(), o.message_bytes},
                                           {mr_b->address(), mr_b->rkey(), o.message_bytes}, o);
  if (!bandwidth) {
    error = "bandwidth: " + bandwidth.error().message;
  } else if (std::memcmp(mr_a->data(), mr_b->data(), o.message_bytes) != 0) {
    error = "bandwidth: the writes completed but the target buffer does not hold the data written";
  } else {
    result.bandwidth_gbps = bandwidth->gbps();
  }
  if (error.empty()) {
    auto samples = measure_latency(a, b, o);
    if (!samples) {
      error = "latency: " + samples.error().message;
    } else {
      result.latency = summarize_latency(std::move(*samples));
    }
  }

  BandwidthFigures figures;
  figures.measured_gbps = result.bandwidth_gbps;
  figures.error = error;
  figures.link_layer = port.link_layer;
  figures.rate_gbps = port.rate_gbps;
  figures.rate_text = port.rate;
  figures.min_ratio = o.min_bandwidth_ratio;
  const BandwidthVerdict verdict = judge_bandwidth(figures);
  result.outcome = verdict.outcome;
  result.expected_gbps = verdict.expected_gbps;
  result.reason = verdict.reason + "; " + gid_choice.why + ", path MTU " +
                  std::to_string(verbs::mtu_bytes(active_mtu));
  if (bandwidth) {
    char detail[96];
    std::snprintf(detail, sizeof detail, ", %llu x %zu B writes in %.2f s",
                  static_cast<unsigned long long>(bandwidth->writes), o.message_bytes, bandwidth->seconds);
    result.reason += detail;
  }
  return result;
}

}  // namespace

Result<GidChoice> choose_gid(const PortState& port, const std::vector<std::string>& netdev_addresses) {
  if (port.link_layer == "InfiniBand") return GidChoice{-1, "", "InfiniBand: addressed by LID"};
  auto usable = [](const GidEntry& g) { return !g.gid.empty() && g.gid != kZeroGid; };
  auto pick = [&](auto&& matches) -> const GidEntry* {
    const GidEntry* best = nullptr;
    for (const GidEntry& g : port.gids) {
      if (usable(g) && matches(g) && (best == nullptr || g.index < best->index)) best = &g;
    }
    return best;
  };
  auto v2 = [](const GidEntry& g) { return g.type == "RoCE v2"; };
  auto on_port_netdev = [&](const GidEntry& g) { return !port.netdev.empty() && g.netdev == port.netdev; };
  auto describe = [](const GidEntry& g, const std::string& what) {
    return GidChoice{g.index, g.gid, what + (g.netdev.empty() ? "" : " on " + g.netdev)};
  };
  if (const GidEntry* g = pick([&](const GidEntry& e) {
        const std::string ip = ipv4_of_gid(e.gid);
        return v2(e) && on_port_netdev(e) && !ip.empty() && has_address(netdev_addresses, ip);
      })) {
    return describe(*g, "RoCE v2 GID of " + ipv4_of_gid(g->gid));
  }
  // The netdev's addresses were not given (or the GID table is ahead of them): the table itself says
  // which IPv4 addresses the netdev has.
  if (const GidEntry* g = pick([&](const GidEntry& e) { return v2(e) && on_port_netdev(e) && !ipv4_of_gid(e.gid).empty(); })) {
    return describe(*g, "RoCE v2 GID of " + ipv4_of_gid(g->gid));
  }
  if (const GidEntry* g = pick([&](const GidEntry& e) { return v2(e) && on_port_netdev(e); })) {
    return describe(*g, "RoCE v2 GID (no IPv4 address)");
  }
  if (const GidEntry* g = pick(v2)) return describe(*g, "RoCE v2 GID");
  if (const GidEntry* g = pick([](const GidEntry&) { return true; })) {
    return describe(*g, "RoCE v1 GID (the port has no RoCE v2 GID)");
  }
  return make_error(ErrorKind::kNotFound,
                    "no usable GID on the port (its netdev " + (port.netdev.empty() ? "is unknown" : port.netdev + " has no address") +
                        "); RoCE needs one");
}

LatencyFigures summarize_latency(std::vector<double> samples) {
  LatencyFigures f;
  if (samples.empty()) return f;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  f.typical_us = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  f.average_us = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  // Nearest rank: the smallest sample at or above 99% of them.
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
  f.p99_us = samples[std::clamp<size_t>(rank, 1, n) - 1];
  return f;
}

Result<SelftestResult> run_loopback(const DeviceState& device, const PortState& port, const LoopbackOptions& o) {
  const std::string where = loopback_port_name(device, port);
  if (o.message_bytes == 0 || o.queue_depth == 0 || o.signal_every == 0 || o.latency_bytes == 0 ||
      2 * o.latency_bytes > o.message_bytes) {
    return make_error(ErrorKind::kUsage, "loopback options out of range", where);
  }
  auto gid_choice = choose_gid(port, o.netdev_addresses);
  if (!gid_choice) {
    Error e = gid_choice.error();
    e.where = where;
    return e;
  }
  auto list = verbs::DeviceList::open();
  if (!list) return list.error();
  auto ibv_device = list->find(device.name);
  if (!ibv_device) return ibv_device.error();
  auto context = verbs::Context::open(*ibv_device);
  if (!context) return context.error();
  auto device_attr = context->query_device();
  if (!device_attr) return device_attr.error();
  auto port_attr = context->query_port(port.port);
  if (!port_attr) return port_attr.error();
  auto endpoint = port_endpoint(*context, port, *port_attr, *gid_choice, where);
  if (!endpoint) return endpoint.error();

  // The send queue and CQ as deep as asked, within what the device allows.
  const uint32_t depth = std::min<uint32_t>(
      {o.queue_depth, static_cast<uint32_t>(device_attr->max_qp_wr), static_cast<uint32_t>(device_attr->max_cqe)});
  const uint32_t signal_every = std::min(o.signal_every, depth);
  auto pd = verbs::ProtectionDomain::open(*context);
  if (!pd) return pd.error();
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  auto mr_a = verbs::MemoryRegion::open(*pd, o.message_bytes, access);
  if (!mr_a) return mr_a.error();
  auto mr_b = verbs::MemoryRegion::open(*pd, o.message_bytes, access);
  if (!mr_b) return mr_b.error();
  auto cq_a = verbs::CompletionQueue::open(*context, static_cast<int>(depth));
  if (!cq_a) return cq_a.error();
  auto cq_b = verbs::CompletionQueue::open(*context, static_cast<int>(depth));
  if (!cq_b) return cq_b.error();
  const verbs::QueuePair::Caps caps{depth, 1, static_cast<uint32_t>(o.latency_bytes)};
  auto qp_a = verbs::QueuePair::open_rc(*pd, *cq_a, *cq_a, caps);
  if (!qp_a) return qp_a.error();
  auto qp_b = verbs::QueuePair::open_rc(*pd, *cq_b, *cq_b, caps);
  if (!qp_b) return qp_b.error();

  // Connect each QP to the other: same port, same GID (or LID), each other's QPN and PSN.
  verbs::QpPath path{port.port, gid_choice->index, port_attr->active_mtu};
  if (o.traffic_class) {
    path.traffic_class = static_cast<uint8_t>(o.traffic_class->tos);
    path.sl = static_cast<uint8_t>(o.traffic_class->priority);
  }
  if (auto r = connect_pair(*qp_a, *qp_b, port, *endpoint, path); !r) return r.error();

  SelftestResult result;
  result.test = "loopback";
  result.device = device.name;
  result.port = port.port;
  result.gid_index = gid_choice->index;
  result.gid = gid_choice->index >= 0 ? verbs::gid_to_string(endpoint->gid) : "";
  result.traffic_class = o.traffic_class;

  Side a{{qp_a->get(), cq_a->get(), depth, signal_every}, &*qp_a, &*mr_a};
  Side b{{qp_b->get(), cq_b->get(), depth, signal_every}, &*qp_b, &*mr_b};
  return measure_and_judge(a, b, std::move(result), port, o, *gid_choice, port_attr->active_mtu);
}

}  // namespace rdmactl
