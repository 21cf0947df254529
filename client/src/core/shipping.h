// What the sender's parts (sender.cpp, sender_connection.cpp, sender_lanes.cpp,
// sender_files.cpp) share about shipping bytes: when a batch goes, how a connection that
// ships is set up, and how sizes are said.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gnomon::client {

using Clock = std::chrono::steady_clock;

// A drain ships what it holds once it is this big (the connection, a lane, a save).
inline constexpr size_t kFlushBytes = 1 << 20;
// A lane, or the connection, ships a batch once it holds this much, or once its first
// bytes are this old, looking for more every kBatchStep meanwhile.
inline constexpr size_t kBatchBytes = 64u << 10;
inline constexpr auto kBatchHold = std::chrono::microseconds(1000);
inline constexpr auto kBatchStep = std::chrono::microseconds(200);

// Whether a batch of `bytes` whose first were drained at `held_since` ships now: it is
// big enough or old enough, or `now_anyway` (the program finishes, a thread exited).
inline bool BatchIsDue(size_t bytes, Clock::time_point held_since, bool now_anyway) {
  return now_anyway || bytes >= kBatchBytes || Clock::now() - held_since >= kBatchHold;
}

// A connection events go out on: sends wait, a quarter second at a time (SendFully),
// and leave at once.
void MakeShipping(int fd);

// "12.3 MiB".
std::string MiB(uint64_t bytes);

}  // namespace gnomon::client
