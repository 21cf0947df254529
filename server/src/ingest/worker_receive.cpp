// The worker (worker.h): the main connection's loop, which decodes what it receives,
// probes the program's clock and writes the capture's readings; and the merge of every
// connection's bytes into the one stream the writer and the model take.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/server/text.h"
#include "gnomon/server/worker.h"
#include "ingest/stream_decoder.h"
#include "ingest/worker_parts.h"
#include "model/trace_builder.h"

namespace gnomon::server {

using namespace ingest;

namespace {

int64_t MonotonicRawNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// This capture run, as its CaptureClock readings name it: a random id, and the boot id
// of the kernel whose CLOCK_REALTIME it reads (the host's name when there is none).
struct CaptureIdentity {
  uint64_t id = 0;
  std::string domain;
};
const CaptureIdentity& ThisCapture() {
  // Never destroyed: a worker's thread may still read it while the process exits (a
  // worker held by a static is joined after the statics made since are gone).
  static const CaptureIdentity& identity = *new CaptureIdentity([] {
    CaptureIdentity made;
    // Random where the kernel gives randomness; else the time and pid, still unlikely to
    // meet another capture's.
    if (getrandom(&made.id, sizeof(made.id), 0) != ssize_t(sizeof(made.id))) {
      timespec ts{};
      clock_gettime(CLOCK_REALTIME, &ts);
      made.id = (uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec)) ^ (uint64_t(getpid()) << 40);
    }
    if (made.id == 0) made.id = 1;
    std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
    if (!std::getline(boot_id, made.domain) || made.domain.empty()) {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      made.domain = std::string("host:") + host;
    }
    return made;
  }());
  return identity;
}

// Appends the capture's reading of the common reference (protocol: CaptureClock):
// CLOCK_REALTIME between two readings of its own clock, the tightest of five, with the
// error the kernel states for it.
void AppendCaptureClock(std::vector<uint8_t>& out) {
  protocol::CaptureClock reading{};
  reading.capture_id = ThisCapture().id;
  reading.reference = 1;
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const int64_t before = MonotonicRawNs();
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t after = MonotonicRawNs();
    if (uint64_t(after - before) >= best) continue;
    best = uint64_t(after - before);
    reading.before_ns = uint64_t(before);
    reading.after_ns = uint64_t(after);
    reading.reference_ns = uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
  }
  // The kernel's stated error, but none where the clock is not synchronised: its maxerror
  // then stops growing at 16 s while the clock may be off by any amount.
  timex state{};  // modes 0: only read
  const int clock_state = adjtimex(&state);
  reading.reference_error_ns =
      clock_state < 0 || clock_state == TIME_ERROR || (state.status & STA_UNSYNC) != 0
          ? UINT64_MAX
          : uint64_t(std::max(0L, state.maxerror)) * 1000;
  const std::string_view domain = ThisCapture().domain;
  protocol::AppendMessage(out, reading, {.domain = domain.substr(0, protocol::kMaxStringBytes)});
}

// The probes in flight: when each left, by sequence (a ring: a reply later than 255
// newer probes is no use).
class ProbeLog {
 public:
  void Sent(uint32_t sequence, int64_t sent_ns) { slots_[sequence % slots_.size()] = {sequence, sent_ns}; }
  // When the probe left, once; -1 when unknown (never sent, answered already, too old).
  int64_t Take(uint32_t sequence) {
    Slot& slot = slots_[sequence % slots_.size()];
    if (slot.sequence != sequence || slot.sent_ns < 0) return -1;
    const int64_t sent = slot.sent_ns;
    slot.sent_ns = -1;
    return sent;
  }

 private:
  struct Slot {
    uint32_t sequence = 0;
    int64_t sent_ns = -1;
  };
  std::array<Slot, 256> slots_{};
};

// Bytes received and not yet decoded. Not zero-filled: a quiet program's connection
// touches only the pages its bytes reach, so a capture of many programs, a buffer each,
// holds what they send rather than 4 MiB apiece.
class ReceiveBuffer {
 public:
  explicit ReceiveBuffer(size_t size) : data_(new uint8_t[size]), size_(size) {}
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  // Grows to `size`, keeping the first `keep` bytes.
  void Grow(size_t size, size_t keep) {
    std::unique_ptr<uint8_t[]> grown(new uint8_t[size]);
    std::memcpy(grown.get(), data_.get(), keep);
    data_ = std::move(grown);
    size_ = size;
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_;
};

uint64_t ZonesSoFar(const CountingHandler& h) { return h.zones; }
uint64_t ZonesSoFar(const BuildingHandler& h) { return h.model.zone_count; }
uint64_t DroppedSoFar(const CountingHandler& h) { return h.dropped; }
uint64_t DroppedSoFar(const BuildingHandler& h) { return h.model.diagnostics.client_dropped_events; }
bool Ended(const CountingHandler& h) { return h.ended; }
bool Ended(const BuildingHandler& h) { return h.model.diagnostics.ended_cleanly; }
const std::string& NameOf(const CountingHandler& h) { return h.program_name; }
const std::string& NameOf(const BuildingHandler& h) { return h.model.program.name; }
std::optional<uint32_t> ContextOf(const CountingHandler& h) { return h.context; }
std::optional<uint32_t> ContextOf(const BuildingHandler&) { return std::nullopt; }  // never with lanes

}  // namespace

template <typename Handler>
void Worker::ReceiveLoop(Handler& handler) {
  (void)ThisCapture();  // its first call reads /proc: here, not under the model's lock
  ReceiveBuffer buffer(kReceiveBufferBytes);
  size_t filled = 0;
  size_t undecoded = 0;        // bytes at the end of buffer[0, filled) not yet offered to the decoder
  uint64_t stream_offset = 0;  // of buffer[0] in the stream
  // Clock probes: when the next leaves, and the capture's readings of those in flight.
  ProbeLog probes;
  uint32_t probe_sequence = 0;
  auto next_probe = Clock::now();
  int64_t received_ns = 0;       // when the latest bytes arrived: no reply came later
  uint64_t zones_counted = 0;    // of ZonesSoFar(handler), added to zones_received_
  bool end_placed = false;       // the goodbye went to the writer (after the lanes)
  std::vector<uint8_t> samples;  // the ClockSamples for the replies just decoded, and CaptureClocks
  auto next_reference = Clock::now();
  auto send_probe = [&] {
    protocol::ClockProbe probe{};
    std::memcpy(probe.magic, protocol::kClockProbeMagic.data(), sizeof(probe.magic));
    probe.sequence = ++probe_sequence;
    const int64_t sent_ns = MonotonicRawNs();
    const ssize_t n = send(fd_, &probe, sizeof(probe), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == ssize_t(sizeof(probe))) {
      probes.Sent(probe.sequence, sent_ns);
    } else if (n > 0) {
      program_answers_probes_ = false;  // a probe cut in two: the program waits for the rest forever
    }
    // From now, not from when it was due: after a stall, one probe, not a burst.
    next_probe = std::max(next_probe, Clock::now()) +
                 (probe_sequence < 10 ? std::chrono::milliseconds(10) : std::chrono::milliseconds(100));
  };
  // Decodes, then answers each ClockReply with the capture's ClockSample (decoded too,
  // and written after the bytes that held the reply).
  auto decode_with_samples = [&] {
    DecodeResult result = DecodeMessages(buffer.data(), filled, handler);
    samples.clear();
    for (const protocol::ClockReply& reply : handler.replies) {
      const int64_t sent_ns = probes.Take(reply.sequence);
      if (sent_ns < 0) continue;
      protocol::AppendMessage(samples, protocol::ClockSample{.sequence = reply.sequence,
                                                             .probe_sent_ns = uint64_t(sent_ns),
                                                             .reply_received_ns = uint64_t(received_ns)});
    }
    handler.replies.clear();
    if (program_answers_probes_ && Clock::now() >= next_reference) {
      AppendCaptureClock(samples);
      next_reference = Clock::now() + std::chrono::seconds(1);
    }
    if (!samples.empty()) {
      handler.writing_samples = true;
      DecodeMessages(samples.data(), samples.size(), handler);
      handler.writing_samples = false;
    }
    return result;
  };
  // Decodes what the buffer holds, unless readers hold the model and `may_wait` is
  // false: then the bytes wait for the next turn. False once the stream failed.
  auto decode = [&](bool may_wait) {
    const std::optional<uint32_t> context = ContextOf(handler);  // the thread the bytes start on
    DecodeResult result;
    if constexpr (std::is_same_v<Handler, BuildingHandler>) {
      auto build = [&](TraceModel&) { result = decode_with_samples(); };
      if (!model_.TryWrite(build)) {
        if (!may_wait && filled < kMaxBacklogBytes) return true;
        model_.Write(build);
      }
    } else {
      result = decode_with_samples();
    }
    undecoded = 0;
    // With lanes the goodbye waits for them: what they still hold goes before it.
    size_t before_end = result.consumed;
    if (lane_token_ != 0 && !end_placed && Ended(handler)) {
      protocol::WalkMessages(buffer.data(), result.consumed, [&](const uint8_t* p, size_t) {
        if (p[0] != uint8_t(protocol::MessageType::kEndOfStream)) return true;
        before_end = size_t(p - buffer.data());
        return false;
      });
      end_placed = true;
    }
    {
      std::unique_lock lock(append_mutex_);
      AppendFrom(0, context, buffer.data(), before_end);
      if (!samples.empty()) Emit(samples.data(), samples.size());
      main_appended_ = stream_offset + before_end;
      if (before_end < result.consumed) {
        main_final_ = true;
        appended_.notify_all();
        // The program closed its lanes before its goodbye: they end once they have added
        // what they hold. One that adds nothing for 5 s is not waited for.
        uint64_t seen = lane_appends_;
        auto progress = Clock::now();
        while (lanes_open_ > 0 && !stop_requested_.load() && !lane_failed_.load() &&
               Clock::now() - progress < std::chrono::seconds(5)) {
          appended_.wait_for(lock, std::chrono::milliseconds(100));
          if (lane_appends_ != seen) {
            seen = lane_appends_;
            progress = Clock::now();
          }
        }
        AppendFrom(0, context, buffer.data() + before_end, result.consumed - before_end);
        main_appended_ = stream_offset + result.consumed;
      }
      appended_.notify_all();
    }
    messages_received_.fetch_add(result.messages, std::memory_order_relaxed);
    zones_received_.fetch_add(ZonesSoFar(handler) - zones_counted, std::memory_order_relaxed);
    zones_counted = ZonesSoFar(handler);
    program_dropped_.store(DroppedSoFar(handler), std::memory_order_relaxed);
    if (!NameOf(handler).empty()) {
      std::lock_guard lock(error_mutex_);
      if (program_name_.empty()) program_name_ = NameOf(handler);
    }
    if (result.failed) {
      Fail(State::kFailed, "malformed stream at byte " + std::to_string(stream_offset + result.consumed) +
                               ": " + result.error + "; closed the connection, kept everything before it");
      return false;
    }
    std::memmove(buffer.data(), buffer.data() + result.consumed, filled - result.consumed);
    filled -= result.consumed;
    stream_offset += result.consumed;
    return true;
  };
  while (true) {
    if (lane_failed_.load()) break;  // it said why
    if (stop_requested_.load()) {
      if (undecoded > 0) decode(true);
      Fail(State::kStopped, "");
      break;
    }
    int timeout_ms = kPollMs;
    if (program_answers_probes_ && !Ended(handler)) {
      if (Clock::now() >= next_probe) send_probe();
      const auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_probe - Clock::now()).count();
      timeout_ms = int(std::clamp<int64_t>(wait + 1, 0, kPollMs));
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready == 0) {
      if (undecoded > 0 && !decode(false)) break;
      if (model_sink_) {
        std::lock_guard lock(append_mutex_);
        DrainModelSink(false);
      }
      if (options_.writer != nullptr) options_.writer->FlushIfOld();
      continue;
    }
    if (buffer.size() - filled < kReceiveBufferBytes / 4)
      buffer.Grow(buffer.size() + kReceiveBufferBytes, filled);
    const ssize_t n = ready < 0 ? -1 : recv(fd_, buffer.data() + filled, buffer.size() - filled, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (lane_failed_.load()) break;  // it closed this connection, and said why
      if (undecoded > 0 && !decode(true)) break;
      if (Ended(handler)) {
        Fail(State::kEnded, "");
      } else if (filled > 0) {
        Fail(State::kDisconnected, "the connection closed mid-message at stream byte " +
                                       std::to_string(stream_offset) + ": " +
                                       DescribeTruncation(buffer.data(), filled));
      } else {
        Fail(State::kDisconnected,
             // A program that dies with clock probes unread resets the connection.
             n == 0 || errno == ECONNRESET
                 ? "the program closed the connection without saying goodbye (killed or crashed?)"
                 : std::string("connection lost: ") + std::strerror(errno));
      }
      break;
    }
    received_ns = MonotonicRawNs();
    filled += static_cast<size_t>(n);
    undecoded += static_cast<size_t>(n);
    bytes_received_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    main_reads_.fetch_add(1, std::memory_order_relaxed);
    if (!decode(false)) break;
    if (undecoded == 0 && Ended(handler) && filled == 0) {
      Fail(State::kEnded, "");
      break;
    }
  }
  ::shutdown(fd_, SHUT_RDWR);
}

// The handlers the worker receives with (Start).
template void Worker::ReceiveLoop<BuildingHandler>(BuildingHandler&);
template void Worker::ReceiveLoop<CountingHandler>(CountingHandler&);

void Worker::AppendFrom(int from, std::optional<uint32_t> context, const uint8_t* bytes, size_t size,
                        ZoneOps* ops, LaterRuns* later, const std::shared_ptr<const void>& owner) {
  if ((options_.writer == nullptr && !model_sink_) || size == 0) return;
  uint8_t restate[sizeof(protocol::ThreadContext)];
  size_t restate_size = 0;
  if (last_appender_ != from && last_appender_ >= 0 && context) {
    protocol::StoreLe(restate, protocol::ThreadContext{.thread_id = *context});
    restate_size = sizeof(restate);
  }
  Emit(bytes, size, ops, later, {restate, restate_size}, owner);
  last_appender_ = from;
  if (from > 0) ++lane_appends_;
}

void Worker::Emit(const uint8_t* bytes, size_t size, ZoneOps* ops, LaterRuns* later,
                  std::span<const uint8_t> before, const std::shared_ptr<const void>& owner) {
  if (options_.writer != nullptr && owner != nullptr) {
    options_.writer->Refer(before, bytes, size, owner);
  } else if (options_.writer != nullptr) {
    if (!before.empty()) options_.writer->Append(before.data(), before.size());
    options_.writer->Append(bytes, size);
  }
  if (!model_sink_) return;
  ModelSink& sink = *model_sink_;
  const bool room = sink.held.size() + before.size() + size <= kMaxBacklogBytes;
  if (ops == nullptr) {
    auto build = [&](TraceModel&) {
      sink.DecodeHeld();
      if (!before.empty()) sink.Decode(before.data(), before.size());
      sink.Decode(bytes, size);
    };
    if (model_.TryWrite(build)) return;
    if (!room) {
      model_.Write(build);
      return;
    }
  } else {
    // A lane's paired zones: beside the other lanes storing their threads' zones.
    if (model_.TryJoinWriters() || (!room && (model_.JoinWriters(), true))) {
      // Left when the turn is over, unless runs are left to store (StoreLaterRuns leaves).
      struct Joined {
        SharedModel& model;
        const LaterRuns& later;
        ~Joined() {
          if (later.runs.empty()) model.LeaveWriters();
        }
      } joined{model_, *later};
      // Other lanes may be storing their threads' zones: the builder takes a thread again
      // through the gate (and a goodbye, which tidies them all, waits for every store).
      sink.handler.ForgetThread();
      sink.DecodeHeld();
      if (!before.empty()) sink.Decode(before.data(), before.size());
      // The runs on threads nothing after them touches (in a lane's batch, each thread's
      // last), it stores once the merge's turn is over.
      ops->Replay(
          sink.handler, [&](const uint8_t* p, size_t n) { sink.Decode(p, n); },
          [&](const ZoneOps::Run& run) {
            LaterRuns::Held held{nullptr, nullptr, run};
            if (!sink.handler.HoldRun(run, held.thread, held.open)) return false;
            std::lock_guard lock(sink.store_mutex);
            sink.storing.insert(held.thread);
            later->runs.push_back(held);
            return true;
          });
      return;
    }
  }
  sink.held.insert(sink.held.end(), before.begin(), before.end());
  sink.held.insert(sink.held.end(), bytes, bytes + size);
}

void Worker::StoreLaterRuns(LaterRuns& later) {
  if (later.runs.empty()) return;
  ModelSink& sink = *model_sink_;
  for (const LaterRuns::Held& held : later.runs) {
    TraceBuilder::StoreRun(held.run, *held.thread, *held.open);
    {
      std::lock_guard lock(sink.store_mutex);
      sink.storing.erase(sink.storing.find(held.thread));
    }
    sink.stored.notify_all();
  }
  later.runs.clear();
  model_.LeaveWriters();
}

void Worker::DrainModelSink(bool may_wait) {
  ModelSink& sink = *model_sink_;
  if (sink.held.empty()) return;
  auto build = [&](TraceModel&) { sink.DecodeHeld(); };
  if (!model_.TryWrite(build) && may_wait) model_.Write(build);
}

}  // namespace gnomon::server
