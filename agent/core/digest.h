// SPDX-License-Identifier: Apache-2.0
// SHA-256 (OpenSSL's EVP) as lower-case hex: a spec's identity, cache keys.
#pragma once

#include <string_view>
#include <string>

namespace rdmactl {

std::string sha256_hex(std::string_view bytes);

}  // namespace rdmactl
