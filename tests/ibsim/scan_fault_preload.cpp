// SPDX-License-Identifier: Apache-2.0
// An LD_PRELOAD library for the ibsim scenarios serve-crash and serve-stall (run-scenario.sh),
// which put it in serve's environment and so in its scans' (agent/daemon/fabric_monitor.h): the
// agent itself never calls libibumad or libibnetdisc, its scan children do. What it does is chosen
// by RDMACTL_TEST_SCAN_FAULT; unset, both calls go straight to the real libraries.
//
//   segv             umad_init, the first call of a scan (agent/fabric/discover.cpp), raises
//                    SIGSEGV: a fault in the IB stack, as the SIGSEGV in a thread of
//                    libumad2sim.so that once took `serve --fabric-interval` down.
//   mark-discovery   ibnd_discover_fabric creates the file RDMACTL_TEST_SCAN_MARK and waits 2 s
//                    before it discovers, so that the test can stop ibsim (SIGSTOP) while a
//                    connected scan is about to send its MADs. A client killed before ibsim has
//                    answered its connect request makes ibsim exit once it runs again (ibpanic in
//                    sim_ctl_new_client: "can't connect to in socket"), so the stall must begin
//                    after the connect.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

bool scan_fault_is(const char* mode) {
  const char* fault = std::getenv("RDMACTL_TEST_SCAN_FAULT");
  return fault && std::strcmp(fault, mode) == 0;
}

}  // namespace

extern "C" int umad_init(void);
extern "C" void* ibnd_discover_fabric(char* ca_name, int ca_port, void* from, void* config);

extern "C" int umad_init(void) {
  if (scan_fault_is("segv")) raise(SIGSEGV);
  using Real = int (*)();
  auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "umad_init"));
  return real ? real() : -1;
}

extern "C" void* ibnd_discover_fabric(char* ca_name, int ca_port, void* from, void* config) {
  if (scan_fault_is("mark-discovery")) {
    if (const char* mark = std::getenv("RDMACTL_TEST_SCAN_MARK")) {
      const int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
    }
    sleep(2);
  }
  using Real = void* (*)(char*, int, void*, void*);
  auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "ibnd_discover_fabric"));
  return real ? real(ca_name, ca_port, from, config) : nullptr;
}
