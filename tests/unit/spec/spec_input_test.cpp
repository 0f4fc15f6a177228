// SPDX-License-Identifier: Apache-2.0
// The spec as untrusted input: what load_spec refuses before parsing (size, file type), that it
// never blocks on a FIFO or reads an endless device or stream, and that addresses lists of any
// length are checked in linear time. Real FIFOs and devices, in a temporary directory.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <string>
#include <thread>

#include "agent/spec/input.h"
#include "agent/spec/spec.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace spec_spec_input_test {

const std::string kMinimal =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: minimal\n";

// The bound on a call that must not block: far above what a non-blocking call takes, far below
// the test's own TIMEOUT. A call still running then has blocked.
constexpr auto kMustReturnWithin = std::chrono::seconds(10);

// Runs `call` on a thread and waits at most kMustReturnWithin. If it has not returned, `unblock`
// releases it (so that the test ends either way) and the result is false.
bool returns_in_time(const std::function<void()>& call, const std::function<void()>& unblock) {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::thread worker([&] {
    call();
    std::lock_guard lock(mutex);
    done = true;
    done_cv.notify_all();
  });
  bool in_time = false;
  {
    std::unique_lock lock(mutex);
    in_time = done_cv.wait_for(lock, kMustReturnWithin, [&] { return done; });
  }
  if (!in_time) unblock();
  worker.join();
  return in_time;
}

class SpecInputTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return tree_.root() + "/" + name; }
  test::TempTree tree_;
};

TEST_F(SpecInputTest, AFifoIsRefusedWithoutBeingOpened) {
  const std::string fifo = path("fabric.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::optional<Result<FabricSpec>> result;
  // With no writer, open(O_RDONLY) of a FIFO blocks; opening it for writing lets such a reader go.
  const bool in_time = returns_in_time([&] { result.emplace(load_spec(fifo)); },
                                       [&] {
                                         const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
                                         if (fd >= 0) ::close(fd);
                                       });
  ASSERT_TRUE(in_time) << "load_spec blocked on a FIFO";
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->has_value());
  EXPECT_EQ(result->error().kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(result->error().message, "spec " + fifo + " is a FIFO, not a regular file: it is not read");
}

TEST_F(SpecInputTest, ASymlinkToAFifoIsRefusedToo) {
  const std::string fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(fifo, path("fabric.yaml"));
  std::optional<Result<FabricSpec>> result;
  ASSERT_TRUE(returns_in_time([&] { result.emplace(load_spec(path("fabric.yaml"))); },
                              [&] {
                                const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
                                if (fd >= 0) ::close(fd);
                              }));
  ASSERT_FALSE(result->has_value());
  EXPECT_EQ(result->error().message,
            "spec " + path("fabric.yaml") + " is a FIFO, not a regular file: it is not read");
}

// A command line may name a pipe: `rdmactl plan -f <(render spec)` (process substitution) or
// `-f /dev/stdin` on a pipe. Read as standard input is: blocking until the writer closes, bounded.
TEST_F(SpecInputTest, ACommandLineReadsAPipeAsStandardInput) {
  const std::string fifo = path("fabric.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] {
    std::ofstream out(fifo);
    out << kMinimal;
  });
  auto spec = load_spec(fifo, SpecInput::kFileOrPipe);
  writer.join();
  ASSERT_TRUE(spec) << spec.error().to_string();
  EXPECT_EQ(spec->file, fifo);
  // The agent's reading is unchanged: a regular file only (AFifoIsRefusedWithoutBeingOpened).
}

TEST_F(SpecInputTest, APipeOverTheLimitIsRefused) {
  const std::string fifo = path("fabric.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // The reader stops at the limit and closes: the writer's next write raises SIGPIPE, ignored for
  // this test (and put back after it) so that the write fails with EPIPE instead.
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &before), 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::string chunk(64 * 1024, '#');
    for (std::size_t written = 0; written <= kMaxSpecBytes + chunk.size();) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  auto text = read_spec_input(fifo, SpecInput::kFileOrPipe);
  writer.join();
  ::sigaction(SIGPIPE, &before, nullptr);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(text.error().message, "spec " + fifo + " is larger than 4 MiB (more was written into the pipe): it is not read");
}

TEST_F(SpecInputTest, DevZeroIsRefusedWithoutBeingRead) {
  std::optional<Result<FabricSpec>> result;
  // Reading /dev/zero never ends; a read bounded by the limit would still take a moment.
  ASSERT_TRUE(returns_in_time([&] { result.emplace(load_spec("/dev/zero")); }, [] {}));
  ASSERT_FALSE(result->has_value());
  EXPECT_EQ(result->error().kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(result->error().message, "spec /dev/zero is a character device, not a regular file: it is not read");
}

TEST_F(SpecInputTest, ADirectoryIsRefused) {
  auto result = load_spec(tree_.root());
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().message, "spec " + tree_.root() + " is a directory, not a regular file: it is not read");
}

TEST_F(SpecInputTest, AFileOverTheLimitIsRefusedBeforeParsing) {
  // Not YAML at all: a parser would report a syntax error, the size check comes first.
  tree_.write("/big.yaml", std::string(kMaxSpecBytes + 1, '['));
  auto result = load_spec(path("big.yaml"));
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_TRUE(result.error().diagnostics.empty());
  EXPECT_EQ(result.error().message,
            "spec " + path("big.yaml") + " is larger than 4 MiB (4194305 bytes): it is not read");
}

TEST_F(SpecInputTest, AFileOfExactlyTheLimitIsRead) {
  std::string text = kMinimal;
  const std::string filler = "# filler\n";
  while (text.size() + filler.size() <= kMaxSpecBytes) text += filler;
  text += std::string(kMaxSpecBytes - text.size() - 1, '#') + "\n";
  ASSERT_EQ(text.size(), kMaxSpecBytes);
  tree_.write("/exact.yaml", text);
  auto result = load_spec(path("exact.yaml"));
  ASSERT_TRUE(result.has_value()) << result.error().to_string();
  EXPECT_EQ(result->name, "minimal");
}

TEST_F(SpecInputTest, TextOverTheLimitIsRefusedBeforeParsing) {
  auto result = load_spec_text(std::string(kMaxSpecBytes + 1, '['), "big.yaml");
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().message, "spec big.yaml is larger than 4 MiB (4194305 bytes): it is not read");
}

// An endless standard input (`rdmactl validate -f - < /dev/zero`), counting what is taken from it.
class EndlessInput : public std::streambuf {
 public:
  std::size_t handed_out() const { return handed_out_; }

 protected:
  int_type underflow() override {
    buffer_.assign(4096, 'a');
    handed_out_ += buffer_.size();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + buffer_.size());
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  std::string buffer_;
  std::size_t handed_out_ = 0;
};

TEST(SpecStdin, AnEndlessStreamIsReadOnlyToTheLimit) {
  EndlessInput endless;
  std::istream in(&endless);
  auto text = read_bounded_stream(in, kMaxSpecBytes, "the spec on standard input");
  ASSERT_FALSE(text.has_value());
  EXPECT_EQ(text.error().message, "the spec on standard input is larger than 4 MiB (more was sent): it is not read");
  // limit + 1 bytes were wanted; the stream buffer hands out whole 4 KiB blocks.
  EXPECT_LE(endless.handed_out(), kMaxSpecBytes + 4096);
}

TEST(SpecStdin, LoadSpecReadsStandardInputBounded) {
  EndlessInput endless;
  std::streambuf* saved = std::cin.rdbuf(&endless);
  auto spec = load_spec("-");
  std::cin.rdbuf(saved);
  std::cin.clear();
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().kind, ErrorKind::kInvalidSpec);
  EXPECT_EQ(spec.error().message,
            "the spec on standard input is larger than 4 MiB (more was sent): it is not read");
  EXPECT_LE(endless.handed_out(), kMaxSpecBytes + 4096);
}

TEST_F(SpecInputTest, AFileNameThatIsNotUtf8IsShownEscaped) {
  const std::string name = path("fabric-\xff.yaml");
  tree_.write("/fabric-\xff.yaml", kMinimal + "defaults:\n  interfaces:\n    - rdmaDevice: mlx5_0\n      mtu: 1\n");
  auto result = load_spec(name);
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().diagnostics.size(), 1u);
  EXPECT_EQ(result.error().diagnostics[0].file, tree_.root() + "/fabric-\\xff.yaml");
  EXPECT_NO_THROW((void)nlohmann::json(result.error().diagnostics[0].file).dump());

  tree_.write("/ok-\xff.yaml", kMinimal);
  auto loaded = load_spec(path("ok-\xff.yaml"));
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_EQ(loaded->file, tree_.root() + "/ok-\\xff.yaml");
  EXPECT_NO_THROW((void)nlohmann::json(loaded->file).dump());
}

// The duplicate-address checks look addresses up in hash tables. Scanning every earlier address
// instead (as they once did) is 5 * 10^9 comparisons for this list: minutes, past the test's
// TIMEOUT (a scan in this one check alone took 88 s for two lists of half the size).
TEST(SpecScale, HundredThousandAddressesAreCheckedInLinearTime) {
  constexpr int kAddresses = 100000;
  std::string yaml = kMinimal + "defaults:\n  interfaces:\n    - name: eth0\n      addresses:\n";
  for (int n = 1; n <= kAddresses; ++n) {
    yaml += "        - 10." + std::to_string(n >> 16) + "." + std::to_string((n >> 8) & 0xff) + "." +
            std::to_string(n & 0xff) + "/32\n";
  }
  auto spec = load_spec_text(yaml, "many.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->defaults.interfaces.at(0).addresses->size(), static_cast<std::size_t>(kAddresses));

  // The last address again, on another interface: one problem, naming where it was first.
  yaml += "    - name: eth1\n      addresses: [10.1.134.160/32]\n";
  auto duplicate = load_spec_text(yaml, "many.yaml");
  ASSERT_FALSE(duplicate.has_value());
  ASSERT_EQ(duplicate.error().diagnostics.size(), 1u);
  EXPECT_EQ(duplicate.error().diagnostics[0].message,
            "address 10.1.134.160/32 is also on netdev eth0 (line 100008)");
}

}  // namespace spec_spec_input_test
}  // namespace rdmactl
