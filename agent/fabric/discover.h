// SPDX-License-Identifier: Apache-2.0
// Discovery of the InfiniBand subnet seen from one local port: the only code of rdmactl that talks
// to libibnetdisc, libibmad and libibumad. It fills a FabricScan (model.h): every node and port
// libibnetdisc finds (ibnd_discover_fabric), the SMInfo of every port with the IsSM capability
// (smp_query_via), the PortCounters of every port (pma_query_via, as ibqueryerrors), and what
// answers at the far end of a LinkUp port that discovery left unlinked.
//
// Runs unchanged on real hardware and on an ibsim fabric under LD_PRELOAD=libumad2sim.so
// (tests/ibsim/). It sends only queries (Get), never a Set or a counter reset.
#pragma once

#include <string>

#include "agent/core/result.h"
#include "agent/fabric/model.h"

namespace rdmactl::fabric {

struct DiscoverOptions {
  std::string ca;  // local device; empty: libibumad's choice, the first with an ACTIVE InfiniBand
                   // port (libibumad umad.c resolve_ca_name)
  int port = 0;    // its port; 0: the device's first ACTIVE (else LinkUp) InfiniBand port
  bool counters = true;  // read PortCounters
  int timeout_ms = 0;    // per MAD; 0: libibmad's default (MAD_DEF_TIMEOUT_MS, 1000 ms)
  int retries = 0;       // per MAD; 0: libibmad's default (MAD_DEF_RETRIES, 3)
};

// Scans the subnet. Errors: kNotFound "no InfiniBand port: ..." when no device or port fits (none
// at all, only Ethernet ports, --ca/--port naming something absent); kPlatform when the port has
// no link or libibnetdisc/libibumad fail. A node or port that does not answer a query is not an
// error: the scan records it (counters_error, SubnetManager::error, DanglingPort).
Result<FabricScan> discover_fabric(const DiscoverOptions& options);

}  // namespace rdmactl::fabric
