// SPDX-License-Identifier: Apache-2.0
// Reading files that others write (the spec, the sysctl allow-list) without trusting them.
//
// A spec path can name anything: a FIFO that nobody writes (open and read would block the agent
// for ever), /dev/zero or /dev/urandom (endless), a multi-gigabyte file. Only a regular file is
// read, its type checked again on the open descriptor (the path may be swapped between stat and
// open), opened O_NONBLOCK so that even a FIFO swapped in cannot block the open, and at most
// limit + 1 bytes are read, so that a file that grows while it is read is still refused.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <istream>
#include <string>

#include "agent/core/result.h"

namespace rdmactl {

// What a stat() mode is, for messages: "a FIFO", "a character device", "a directory", ...
std::string file_type_phrase(mode_t mode);

// The bytes of the regular file at `path` (symbolic links followed), at most `limit` of them.
// `name` is how messages show the file. A file of another type, or larger than `limit`, is
// kInvalidSpec naming what it is; a file that cannot be opened or read is the errno's error.
Result<std::string> read_regular_file(const std::string& path, std::size_t limit, const std::string& name);

// The bytes written into the FIFO (a pipe) at `path`, at most `limit` of them: what a shell's
// process substitution (`-f <(render)`) or /dev/stdin on a pipe name. The open and the reads
// block until the writer writes or closes, as standard input's do: for a command line, not for
// the agent, which must never wait on a FIFO nobody writes. Anything but a FIFO on the opened
// descriptor is refused; more than `limit` bytes is kInvalidSpec.
Result<std::string> read_fifo(const std::string& path, std::size_t limit, const std::string& name);

// At most `limit` bytes from a stream (standard input); more is kInvalidSpec. Reads at most
// limit + 1 bytes, so an endless stream costs a bounded amount of time and memory.
Result<std::string> read_bounded_stream(std::istream& in, std::size_t limit, const std::string& name);

// "4 MiB", "1.5 KiB", "17 bytes".
std::string size_text(std::size_t bytes);

}  // namespace rdmactl
