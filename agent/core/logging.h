// SPDX-License-Identifier: Apache-2.0
// Logging set-up: spdlog to standard error (reports own standard output), as text or JSON lines.
#pragma once

#include <string>

#include "agent/core/result.h"

namespace rdmactl {

// level: trace|debug|info|warn|error|off; format: text|json.
Result<void> setup_logging(const std::string& level, const std::string& format);

}  // namespace rdmactl
