// The worker (worker.h): its lanes, opened to the program, each received on a thread of
// its own and merged into the main stream in turns.
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

// Waits up to `timeout` for fd to be ready for `events`; false on timeout or error.
bool WaitFor(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd pfd{fd, events, 0};
  return poll(&pfd, 1, int(timeout.count())) == 1 && (pfd.revents & events) != 0;
}

// The lanes' receive buffers (4 MiB, not zero-filled), given back by whoever lets go of
// one last, a lane or a compressing thread done with what the writer kept of it: the
// next lane to want one takes it rather than fault in fresh pages. Kept until a lane
// goes quiet (Trim).
class SlabPool : public std::enable_shared_from_this<SlabPool> {
 public:
  std::shared_ptr<uint8_t> Take(size_t size) {
    std::unique_ptr<uint8_t[]> bytes;
    if (size == kReceiveBufferBytes) {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        bytes = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (bytes == nullptr) bytes.reset(new uint8_t[size]);
    return std::shared_ptr<uint8_t>(bytes.release(),
                                    [pool = shared_from_this(), size](uint8_t* p) { pool->Give(p, size); });
  }
  // Frees what is kept for later: the program went quiet.
  void Trim() {
    std::vector<std::unique_ptr<uint8_t[]>> freed;
    std::lock_guard lock(mutex_);
    freed.swap(free_);
  }

 private:
  // As many as the blocks a writer holds can keep, about: 128 MiB.
  static constexpr size_t kMaxFree = 32;
  void Give(uint8_t* p, size_t size) {
    std::unique_ptr<uint8_t[]> bytes(p);
    if (size != kReceiveBufferBytes) return;
    std::lock_guard lock(mutex_);
    if (free_.size() < kMaxFree) free_.push_back(std::move(bytes));
  }
  std::mutex mutex_;
  std::vector<std::unique_ptr<uint8_t[]>> free_;
};

// A lane's piece of decoded bytes, for its turn in the merge.
struct LanePiece {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  uint64_t after = 0;                 // what of the main stream it needs first
  std::optional<uint32_t> context;    // the lane's thread before it
  ZoneOps* ops = nullptr;             // its zones, paired
  std::shared_ptr<const void> owner;  // keeps `bytes` where they are
  uint64_t zones = 0;                 // received in it, counted once it has its place
  uint64_t messages = 0;
};

// Takes a model-building lane's turns in the merge, and stores their runs, on a thread
// of its own ("gnomon-store"), in the order handed: the lane receives and pairs the next
// pieces meanwhile, up to kPiecesInFlight ahead. The two halves of a lane's work then
// overlap, and on a host whose cores are all busy the lane's work gets two threads'
// share of them rather than one.
class TurnTaker {
 public:
  // turn(piece) takes the piece's turn; false: the piece has no place, and no piece after
  // it is taken.
  TurnTaker(chunk_memory::BlockReserve& reserve, std::function<bool(LanePiece&)> turn)
      : turn_(std::move(turn)), thread_([this, &reserve] { Run(reserve); }) {}
  ~TurnTaker() { Finish(); }
  TurnTaker(const TurnTaker&) = delete;
  TurnTaker& operator=(const TurnTaker&) = delete;

  // Hands a piece, once fewer than kPiecesInFlight are; false when one before had no
  // place (this one is not taken).
  bool Hand(LanePiece piece) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return pieces_.size() < kPiecesInFlight; });
    if (refused_.load()) return false;
    pieces_.push_back(std::move(piece));
    changed_.notify_all();
    return true;
  }
  // A piece had no place: the lane stops.
  bool refused() const { return refused_.load(); }
  // Waits for every piece handed to take its turn, and ends the thread.
  void Finish() {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return pieces_.empty(); });
      stop_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run(chunk_memory::BlockReserve& reserve) {
    pthread_setname_np(pthread_self(), "gnomon-store");
    const chunk_memory::UseBlockReserve use_reserve(reserve);  // the runs' zones are stored here
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return !pieces_.empty() || stop_; });
      if (pieces_.empty()) return;
      LanePiece& piece = pieces_.front();  // stays in flight, its ZoneOps untouched, until done
      const bool after_refused = refused_.load();
      lock.unlock();
      // None after a piece with no place takes a turn: the lane's stream has a hole there.
      const bool placed = !after_refused && turn_(piece);
      lock.lock();
      if (!placed) refused_.store(true);
      pieces_.pop_front();  // its buffer may go back to the pool
      changed_.notify_all();
    }
  }
  std::function<bool(LanePiece&)> turn_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<LanePiece> pieces_;  // handed, the first taking its turn
  bool stop_ = false;
  std::atomic<bool> refused_{false};  // a piece had no place: none after it takes a turn
  std::thread thread_;                // last: starts once the rest is made
};

}  // namespace

// A lane's receive buffer. The writer reads the bytes a lane gives it where they were
// received (tracefile::TraceWriter::Stream::Refer), so nothing it shared moves or is received
// over: the lane receives after it, and the bytes left to decode move to a fresh buffer
// once room runs low.
class Worker::LaneBuffer {
 public:
  explicit LaneBuffer(std::shared_ptr<SlabPool> pool)
      : pool_(std::move(pool)), slab_(pool_->Take(kReceiveBufferBytes)), size_(kReceiveBufferBytes) {}
  uint8_t* data() const { return slab_.get(); }
  size_t size() const { return size_; }
  // The lane is idle: the pool lets go of the buffers it keeps.
  void Idle() { pool_->Trim(); }
  // What keeps the buffer's bytes where they are, for the writer.
  std::shared_ptr<const void> Share() {
    shared_ = true;
    return slab_;
  }
  // Room to receive after [begin, filled), the bytes left to decode, which move to the
  // front (of a fresh buffer when this one is shared or too small: a bigger one for a
  // message bigger than a buffer). Returns where they begin now.
  size_t MakeRoom(size_t begin, size_t& filled) {
    const size_t rest = filled - begin;
    if (!shared_) {
      std::memmove(slab_.get(), slab_.get() + begin, rest);
      begin = 0;
      filled = rest;
    }
    if (size_ - filled >= kReceiveBufferBytes / 4) return begin;
    const size_t size = rest + kReceiveBufferBytes / 4 <= kReceiveBufferBytes ? kReceiveBufferBytes
                                                                              : rest + kReceiveBufferBytes;
    std::shared_ptr<uint8_t> fresh = pool_->Take(size);
    std::memcpy(fresh.get(), slab_.get() + begin, rest);
    slab_ = std::move(fresh);
    size_ = size;
    shared_ = false;
    filled = rest;
    return 0;
  }

 private:
  std::shared_ptr<SlabPool> pool_;
  std::shared_ptr<uint8_t> slab_;
  size_t size_;
  bool shared_ = false;
};

Status Worker::OpenLanes() {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &length) != 0)
    return Status::Error(std::string("cannot open lanes: ") + std::strerror(errno));
  protocol::ServerHello hello{};
  std::memcpy(hello.magic, protocol::kServerHelloMagic.data(), sizeof(hello.magic));
  hello.version = protocol::kProtocolVersion;
  hello.flags = protocol::kServerLaneHello;
  hello.reserved = lane_token_;
  std::vector<int> opened;
  uint32_t lane = 1;
  auto fail = [&](const std::string& why) {
    for (const int fd : opened) ::close(fd);
    return Status::Error("cannot open lane " + std::to_string(lane) + " to " + where_ + ": " + why);
  };
  // All of them within the handshake's time, a slice at a time so that a stop ends it.
  const auto deadline = Clock::now() + kHandshakeTimeout;
  auto wait_for = [&](int fd, short events) {
    while (!lanes_stop_.load() && !stop_requested_.load() && Clock::now() < deadline) {
      if (WaitFor(fd, events, std::chrono::milliseconds(100))) return true;
    }
    return false;
  };
  for (; lane <= std::min(options_.lanes, protocol::kMaxLanes); ++lane) {
    const int fd = socket(peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(std::strerror(errno));
    opened.push_back(fd);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&peer), length) != 0 && errno != EINPROGRESS)
      return fail(std::strerror(errno));
    int error = 0;
    socklen_t error_length = sizeof(error);
    if (!wait_for(fd, POLLOUT) || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) != 0 ||
        error != 0)
      return fail(error != 0 ? std::strerror(error) : "no answer");
    if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != ssize_t(sizeof(hello)))
      return fail("the hello did not go");
    uint8_t reply[sizeof(protocol::ClientHello)];
    size_t got = 0;
    while (got < sizeof(reply) && wait_for(fd, POLLIN)) {
      const ssize_t n = recv(fd, reply + got, sizeof(reply) - got, 0);
      if (n <= 0) break;
      got += size_t(n);
    }
    const auto answer = protocol::ParseClientHello(reply, got);
    if (answer && answer->status == protocol::HandshakeStatus::kBusy)
      return fail("the program refused it (it gave up waiting for its lanes)");
    if (Status s = CheckClientHello(reply, got, where_); !s.ok()) return fail(s.message());
    if ((answer->capabilities & protocol::kCapLanes) == 0)
      return fail("the program did not take it as a lane");
  }
  for (const int fd : opened) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::lock_guard lock(append_mutex_);
  lane_fds_ = std::move(opened);
  lanes_up_.store(uint32_t(lane_fds_.size()));
  return Status::Ok();
}

void Worker::RunLanes() {
  pthread_setname_np(pthread_self(), "gnomon-lane");
  if (Status s = OpenLanes(); !s.ok()) {
    // The program keeps everything on the main connection while not all have come.
    if (!lanes_stop_.load() && !stop_requested_.load())
      std::fprintf(stderr, "gnomon: %s; receiving over one connection\n", s.message().c_str());
    std::lock_guard lock(append_mutex_);
    lanes_open_ = 0;
    appended_.notify_all();
    return;
  }
  const auto slabs = std::make_shared<SlabPool>();
  auto receive = [this, &slabs](size_t lane) {
    LaneBuffer buffer(slabs);
    if (model_sink_) {
      ModelLaneHandler handler;
      LaneLoop(lane, handler, buffer);
    } else {
      LaneHandler handler;
      LaneLoop(lane, handler, buffer);
    }
  };
  std::vector<std::thread> others;
  for (size_t lane = 1; lane < lane_fds_.size(); ++lane) others.emplace_back(receive, lane);
  receive(0);
  for (std::thread& other : others) other.join();
}

template <typename Handler>
void Worker::LaneLoop(size_t index, Handler& handler, LaneBuffer& buffer) {
  pthread_setname_np(pthread_self(), "gnomon-lane");          // the first lane's is RunLanes()'s
  const chunk_memory::UseBlockReserve use_reserve(reserve_);  // a model is built here too
  const int fd = lane_fds_[index];
  const int from = int(index) + 1;
  constexpr bool kPairs = std::is_same_v<Handler, ModelLaneHandler>;
  // A piece's turn in the merge; then, beside the next lane's turn, the runs left to
  // store, and the blocks the turn filled to the compressing threads (whose lock, under
  // a turn, held up every lane). False: it has no place.
  auto take_turn = [this, from](LanePiece& piece, LaterRuns& later) {
    {
      std::unique_lock lock(append_mutex_);
      while (main_appended_ < piece.after && !main_final_ && !lanes_stop_.load())
        appended_.wait_for(lock, std::chrono::milliseconds(100));
      if (main_appended_ < piece.after) return false;  // the main connection ended first
      // The writer reads the bytes where they are: no copy in the turn, nor after it.
      AppendFrom(from, piece.context, piece.bytes, piece.size, piece.ops, &later,
                 options_.writer != nullptr ? piece.owner : nullptr);
    }
    zones_received_.fetch_add(piece.zones, std::memory_order_relaxed);
    messages_received_.fetch_add(piece.messages, std::memory_order_relaxed);
    StoreLaterRuns(later);
    if (options_.writer != nullptr) options_.writer->HandOver();
    return true;
  };
  LaterRuns later;  // a lane that takes its own turns
  std::optional<TurnTaker> taker;
  if constexpr (kPairs) {
    taker.emplace(reserve_, [take_turn, later = LaterRuns{}](LanePiece& piece) mutable {
      return take_turn(piece, later);
    });
  }
  size_t begin = 0;  // in the buffer: the first byte not taken yet
  size_t filled = 0;
  uint64_t batch_left = 0;  // bytes of the current batch not taken yet
  uint64_t after = 0;       // what of the main stream the current batch needs first
  uint64_t lane_offset = 0;
  uint64_t zones_counted = 0;
  std::string error;
  bool placeable = true;  // false once a batch needs main bytes that never came
  while (error.empty() && placeable && !lanes_stop_.load() && !(taker && taker->refused())) {
    size_t pos = begin;
    while (error.empty()) {
      if (batch_left == 0) {
        if (filled - pos < sizeof(protocol::LaneBatch)) break;
        const auto header = protocol::LoadLe<protocol::LaneBatch>(buffer.data() + pos);
        const uint32_t size = header.size;  // packed: copied before use
        const uint64_t needs = header.after;
        if (std::memcmp(header.magic, protocol::kLaneBatchMagic.data(), sizeof(header.magic)) != 0) {
          error = "not a lane batch";
        } else if (size == 0 || size > protocol::kMaxLaneBatchBytes) {
          error = "a lane batch of " + std::to_string(size) + " bytes (1 to 16 MiB)";
        } else if (needs < after) {
          error = "a lane batch goes back in the main stream";
        }
        if (!error.empty()) break;
        after = needs;
        batch_left = size;
        lane_batches_received_.fetch_add(1, std::memory_order_relaxed);
        pos += sizeof(header);
        lane_offset += sizeof(header);
        continue;
      }
      const size_t available = size_t(std::min<uint64_t>(batch_left, filled - pos));
      const std::optional<uint32_t> context = handler.context;
      // The turn taker is done with it: Hand returns once no piece is in flight, and the
      // ring holds one more ZoneOps than that.
      if constexpr (kPairs) handler.ops->Clear();
      const DecodeResult result = DecodeMessages(buffer.data() + pos, available, handler);
      if (result.failed) {
        error = result.error;
      } else if (result.consumed == 0) {
        if (available == batch_left) error = "a lane batch ends inside a message";
        break;
      }
      // The buffer's bytes stay where they are until the piece's turn is over: the
      // writer's, and a model-building lane's, taken by another thread.
      LanePiece piece{buffer.data() + pos,
                      result.consumed,
                      after,
                      context,
                      nullptr,
                      kPairs || options_.writer != nullptr ? buffer.Share() : nullptr,
                      0,
                      result.messages};
      if constexpr (kPairs) {
        piece.zones = handler.ops->zone_count();
        piece.ops = handler.ops;
        placeable = taker->Hand(std::move(piece));
        handler.Next();
      } else {
        piece.zones = handler.zones - zones_counted;
        zones_counted = handler.zones;
        placeable = take_turn(piece, later);
      }
      if (!placeable) break;
      pos += result.consumed;
      batch_left -= result.consumed;
      lane_offset += result.consumed;
    }
    begin = buffer.MakeRoom(pos, filled);
    if (!error.empty() || !placeable) break;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, kPollMs);
    if (ready == 0) {
      buffer.Idle();
      if (model_sink_) {
        std::lock_guard lock(append_mutex_);
        DrainModelSink(false);
      }
      continue;
    }
    const ssize_t n = ready < 0 ? -1 : recv(fd, buffer.data() + filled, buffer.size() - filled, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // the program closed it: it ends, or it left (the main connection says which)
    filled += size_t(n);
    bytes_received_.fetch_add(uint64_t(n), std::memory_order_relaxed);
    lane_bytes_received_.fetch_add(uint64_t(n), std::memory_order_relaxed);
  }
  if (taker) taker->Finish();  // every piece handed takes its turn before the lane ends
  if (!error.empty()) {
    Fail(State::kFailed, "malformed stream on lane " + std::to_string(from) + " at byte " +
                             std::to_string(lane_offset) + ": " + error +
                             "; closed the connection, kept everything before it");
    lane_failed_.store(true);
    ::shutdown(fd_, SHUT_RDWR);  // the main thread wakes, and ends
  }
  std::lock_guard lock(append_mutex_);
  --lanes_open_;
  appended_.notify_all();
}

void Worker::EndLanes() {
  if (!lanes_thread_.joinable()) return;
  {
    // What the lanes hold that the main stream allows still goes to the writer; a lane
    // the program keeps open past that is not waited for long.
    std::unique_lock lock(append_mutex_);
    main_final_ = true;
    appended_.notify_all();
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    while (lanes_open_ > 0 && !stop_requested_.load() && Clock::now() < deadline)
      appended_.wait_for(lock, std::chrono::milliseconds(100));
  }
  {
    std::lock_guard lock(append_mutex_);  // the lanes may still be opening
    lanes_stop_.store(true);
    for (const int fd : lane_fds_) ::shutdown(fd, SHUT_RDWR);
    appended_.notify_all();
  }
  lanes_thread_.join();
}

}  // namespace gnomon::server
