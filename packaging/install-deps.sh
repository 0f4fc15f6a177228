#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what rdmactl needs, from Debian 12's packages only.
#
#   packaging/install-deps.sh           to build rdmactl (the README's first command): the
#                                       compiler, CMake and the libraries, about 20 s on a bare machine
#   packaging/install-deps.sh --tests   and everything tests/run.sh uses besides (GoogleTest, the
#                                       integration tests' tools, ibsim and OpenSM, yanglint); the VM
#                                       test's own packages come from tests/vm/setup.sh
#
# Idempotent and non-interactive: packages already installed are skipped; apt-get runs only when
# something is missing. Run as root (or through sudo).
set -euo pipefail

tests=false
case ${1:-} in
  "") ;;
  --tests) tests=true ;;
  -h|--help) sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown argument '$1' (--tests or nothing; --help)" >&2; exit 64 ;;
esac

packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  # libraries (use these before writing anything by hand)
  libibverbs-dev librdmacm-dev libyaml-cpp-dev libnl-3-dev libnl-route-3-dev libmnl-dev
  libcpp-httplib-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libvalijson-dev libssl-dev
  # PCI configuration space (PCIe Max_Read_Request_Size)
  libpci-dev
  # `rdmactl fabric`: rdma-core's diag libraries
  libibnetdisc-dev libibmad-dev libibumad-dev
)
test_packages=(
  libgtest-dev libgmock-dev
  # tests: real-kernel netns tests check results with iproute2's `ip -j`
  iproute2 procps util-linux
  # the VM's check 42 compares rdmactl's PCIe Device Control with lspci and setpci
  pciutils
  # integration tests: the real ansible-playbook (ansible-core 2.14), the Salt modules' Python;
  # ansible-test's validate-modules offline (tests/integration/ansible/sanity.sh): its pip
  # requirements from Debian instead (the venv is made --without-pip, so no python3-venv)
  ansible-core python3 python3-jinja2 python3-yaml python3-voluptuous python3-markupsafe
  # the Debian package (packaging/deb/build.sh) and its test; node for the Kubernetes schema check
  dpkg-dev lintian help2man binutils curl systemd nodejs
  # promtool (checks the metrics), zsh (checks the completion script)
  prometheus zsh
  # the ibsim tests: a simulated InfiniBand fabric (ibsim, its libumad2sim preload) with the real
  # OpenSM and infiniband-diags; jq and bc for the scenario scripts
  ibsim-utils libumad2sim0 opensm infiniband-diags jq bc
  # Graphviz's `dot` renders `rdmactl fabric --format dot` in the ibsim tests (tests/ibsim/render-picture.sh)
  graphviz
  # yanglint (libyang 2.1): the SONiC output is checked against SONiC's YANG models (tests/switch/)
  libyang2-tools
)
if $tests; then
  packages+=("${test_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
# npm (the Kubernetes schema check): Debian's npm package depends on Debian's nodejs; a nodejs
# from elsewhere (NodeSource) brings its own npm. Debian's is wanted only where there is none.
if $tests; then
  command -v npm > /dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run as root (sudo $0)" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
