// SPDX-License-Identifier: Apache-2.0
// The peer test's pure parts: the peer address, the data pattern, the class and the verdict, the
// steps' names and rdma_cm's answers in words. The client is peer_client.cpp, the responder
// peer_responder.cpp, the wire format peer_protocol.cpp.
#include "agent/selftest/peer.h"

#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>

#include "agent/selftest/peer_internal.h"
#include "agent/selftest/traffic_class.h"
#include "agent/selftest/verdict.h"

namespace rdmactl {

using peer_detail::errno_text;

std::string PeerAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<PeerAddress> parse_peer_address(std::string_view text, int default_port) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorKind::kUsage, "\"" + std::string(text) + "\": " + why, "peer address");
  };
  PeerAddress out;
  out.port = default_port;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("no closing ] after the IPv6 address");
    out.host = std::string(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected :PORT after ]");
      port_text = rest.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    if (text.find(':', colon + 1) != std::string_view::npos) {
      out.host = std::string(text);  // a bare IPv6 address
    } else {
      out.host = std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    out.host = std::string(text);
  }
  if (out.host.empty()) return bad("no address");
  if (!port_text.empty()) {
    int port = 0;
    for (char ch : port_text) {
      if (ch < '0' || ch > '9' || port > 65535) return bad("port \"" + std::string(port_text) + "\" is not a number from 1 to 65535");
      port = port * 10 + (ch - '0');
    }
    if (port < 1 || port > 65535) return bad("port \"" + std::string(port_text) + "\" is not a number from 1 to 65535");
    out.port = port;
  }
  return out;
}

void fill_pattern(std::span<uint8_t> buffer, uint64_t seed) {
  // splitmix64: every 8 bytes a fresh word from the seed and the position.
  uint64_t state = seed;
  for (size_t i = 0; i < buffer.size(); i += 8) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (size_t j = 0; j < 8 && i + j < buffer.size(); ++j) buffer[i + j] = static_cast<uint8_t>(z >> (8 * j));
  }
}

std::optional<size_t> first_difference(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  const size_t n = std::min(a.size(), b.size());
  const auto [ia, ib] = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  if (ia != a.begin() + static_cast<std::ptrdiff_t>(n)) return static_cast<size_t>(ia - a.begin());
  if (a.size() != b.size()) return n;
  return std::nullopt;
}

std::optional<double> median(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

const PeerLocalPort* find_local_port(const PeerOptions& options, const std::string& device, int port) {
  for (const PeerLocalPort& p : options.local_ports) {
    if (p.device == device && p.port == port) return &p;
  }
  return nullptr;
}

std::optional<TrafficClass> peer_traffic_class(const PeerOptions& options, const PeerLocalPort* local, bool ethernet) {
  // InfiniBand: rdma_cm would ask the SA for a path of that QoS class instead; not a ToS.
  if (!ethernet) return std::nullopt;
  if (local && local->traffic_class) return local->traffic_class;
  if (options.fallback_class) return options.fallback_class;
  TrafficClass none;
  none.source = kClassNone;
  none.priority_source = kPriorityNone;
  return none;
}

SelftestResult judge_peer(SelftestResult result, const PeerLocalPort* local, double min_ratio, const std::string& note) {
  BandwidthFigures figures;
  figures.measured_gbps = result.bandwidth_gbps;
  figures.min_ratio = min_ratio;
  if (local) {
    figures.link_layer = local->link_layer;
    figures.rate_gbps = local->rate_gbps;
    figures.rate_text = local->rate_text;
  }
  const BandwidthVerdict verdict = judge_bandwidth(figures);
  result.test = "peer";
  result.outcome = verdict.outcome;
  result.expected_gbps = verdict.expected_gbps;
  result.reason = verdict.reason;
  if (!local) result.reason += " (" + result.device + "/" + std::to_string(result.port) + " is not in the observed state)";
  if (!note.empty()) result.reason += "; " + note;
  return result;
}

const char* peer_step_name(PeerStep step) {
  switch (step) {
    case PeerStep::kAddress: return "address resolution";
    case PeerStep::kRoute: return "route resolution";
    case PeerStep::kConnect: return "connect";
    case PeerStep::kResources: return "RDMA resources";
    case PeerStep::kWrite: return "RDMA WRITE";
    case PeerStep::kRead: return "RDMA READ";
    case PeerStep::kCompare: return "compare";
    case PeerStep::kRoundTrip: return "round trip";
    case PeerStep::kBandwidth: return "bandwidth";
  }
  return "?";
}

SelftestResult peer_failure(SelftestResult partial, PeerStep step, const std::string& detail) {
  partial.test = "peer";
  partial.outcome = SelftestResult::Outcome::kFailed;
  partial.reason = std::string(peer_step_name(step)) + ": " + detail;
  return partial;
}

std::string describe_reject_reason(int reason) {
  switch (reason) {
    case 3: return "the peer is out of resources (reject reason 3)";
    case 4: return "the peer's CM timed out (reject reason 4)";
    case 8: return "nothing listens on that port: is `rdmactl serve` running there? (reject reason 8, invalid service ID)";
    case 12: return "the peer does not know this node's GID (reject reason 12, invalid GID)";
    case 26: return "MTU mismatch (reject reason 26)";
    case 27: return "the peer cannot take that many RDMA READs (reject reason 27)";
    case 28: return "refused by the peer's application (reject reason 28, consumer defined)";
    default: return "reject reason " + std::to_string(reason);
  }
}

std::string describe_cm_event(int event, int status) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_ERROR:
      if (status == -ENODEV || status == -EADDRNOTAVAIL) {
        return "no RDMA device has a route to that address (" + errno_text(status) + ")";
      }
      if (status == -ETIMEDOUT || status == -EHOSTUNREACH) {
        return "the address did not answer neighbour resolution (" + errno_text(status) + ")";
      }
      return "address error: " + errno_text(status);
    case RDMA_CM_EVENT_ROUTE_ERROR: return "route error: " + errno_text(status);
    case RDMA_CM_EVENT_REJECTED:
      // IB and RoCE report the CM reject reason (positive); iWARP an errno (negative).
      return "rejected: " + (status > 0 ? describe_reject_reason(status) : errno_text(status));
    case RDMA_CM_EVENT_UNREACHABLE:
      return status == -ETIMEDOUT ? "unreachable: the peer never answered the connect request (timeout)"
                                  : "unreachable: " + errno_text(status);
    case RDMA_CM_EVENT_CONNECT_ERROR: return "connection error: " + errno_text(status);
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "the RDMA device was removed";
    case RDMA_CM_EVENT_DISCONNECTED: return "the peer disconnected";
    default:
      return std::string("unexpected rdma_cm event ") + rdma_event_str(static_cast<rdma_cm_event_type>(event)) +
             (status ? " (" + errno_text(status) + ")" : std::string());
  }
}

}  // namespace rdmactl
