// The sender (sender.h), its lanes: more connections to a server that asked for them,
// each draining its share of the threads on a thread of its own.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "gnomon/client/thread_writer.h"
#include "gnomon/protocol/byte_io.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/tracefile/trace_writer.h"
#include "inside_library.h"
#include "registry.h"
#include "sender.h"
#include "shipping.h"

namespace gnomon::client {

using protocol::StoreLe;

bool Sender::TakeLane(int fd, uint32_t token) {
  if (conn_fd_ < 0 || lanes_wanted_ == 0 || lane_token_ == 0 || token != lane_token_ || !lanes_.empty() ||
      lane_fds_.size() >= lanes_wanted_)
    return false;
  lane_fds_.push_back(fd);
  Answer(fd, protocol::HandshakeStatus::kOk, protocol::kCapLanes, uint32_t(lane_fds_.size()));
  uint8_t byte;
  if (recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
    ForgetLanes();  // the server gave up on them (this program was slow to answer): none
  } else if (lane_fds_.size() == lanes_wanted_) {
    StartLanes();
  }
  return true;
}

void Sender::ForgetLanes() {
  for (const int fd : lane_fds_) close(fd);
  lane_fds_.clear();
  lanes_wanted_ = 0;
  lane_token_ = 0;
  lanes_pending_.store(false);
}

void Sender::StartLanes() {
  // Whatever the connection drained of each thread went before this point of its stream,
  // and every batch a lane sends names a later one: each thread's order holds.
  threads_on_lanes_ = true;
  lanes_stop_.store(false);
  lanes_finish_.store(false);
  lanes_failed_.store(false);
  for (const int fd : lane_fds_) {
    MakeShipping(fd);
    auto lane = std::make_unique<Lane>();
    lane->fd = fd;
    lane->index = uint32_t(lanes_.size());
    lane->out.reserve(2 * kFlushBytes);
    lanes_.push_back(std::move(lane));
  }
  lane_fds_.clear();
  lane_token_ = 0;  // no more lanes for this connection
  lanes_pending_.store(false);
  for (const std::unique_ptr<Lane>& lane : lanes_)
    lane->thread = std::thread([this, &lane = *lane] { RunLane(lane); });
}

void Sender::RunLane(Lane& lane) {
  MarkLibraryThread();
  pthread_setname_np(pthread_self(), "gnomon-lane");
  registry_.NameQuietLibraryThread(("gnomon sender lane " + std::to_string(lane.index)).c_str());
  const uint32_t lanes = uint32_t(lanes_.size());
  std::vector<ThreadState*> mine;
  std::vector<ThreadState*> exited;
  auto idle = std::chrono::microseconds(1000);  // doubles while there is nothing to drain
  Clock::time_point held_since;                 // when the bytes held in lane.out were drained first
  lane.out.assign(sizeof(protocol::LaneBatch), 0);
  while (!lanes_stop_.load()) {
    const bool finishing = lanes_finish_.load();
    const bool held = lane.out.size() > sizeof(protocol::LaneBatch);
    // Threads that record on through the exit are left; what is held goes first.
    if (finishing && !held && Clock::now() >= stop_deadline_.load()) return;
    mine.clear();
    {
      std::lock_guard lock(registry_.mutex());
      for (ThreadState* thread : registry_.threads())
        if (thread->id % lanes == lane.index) mine.push_back(thread);
    }
    bool drained = false;
    bool ok = true;
    for (size_t i = 0; i < mine.size() && ok; ++i) {
      const size_t before = lane.out.size();
      if (DrainThread(*mine[i], lane.out, lane.context)) exited.push_back(mine[i]);
      drained = drained || lane.out.size() != before;
      if (lane.out.size() >= kFlushBytes) ok = ShipLane(lane);
    }
    if (!held) held_since = Clock::now();
    // A small batch waits for more (kBatchHold, from the look that drained its first
    // bytes): a lane that shipped whatever a thread had committed since its last look
    // sent thousands of 1 KiB batches a second, each a send and a wakeup of the
    // receiver's threads, and kept a core busy doing it. What it holds when the capture
    // goes away (lanes_stop_) goes with it, as what it was sending did.
    if (ok && lane.out.size() > sizeof(protocol::LaneBatch) &&
        BatchIsDue(lane.out.size(), held_since, finishing || !exited.empty())) {
      ok = ShipLane(lane);
    }
    if (!ok) {
      if (!lanes_stop_.load()) lanes_failed_.store(true);
      return;
    }
    // Only now: their last bytes are on their way.
    for (ThreadState* thread : exited) ReleaseThread(thread);
    exited.clear();
    if (lane.out.size() > sizeof(protocol::LaneBatch)) {  // held: more is coming
      idle = std::chrono::microseconds(1000);
      std::this_thread::sleep_for(kBatchStep);
      continue;
    }
    if (drained) {
      idle = std::chrono::microseconds(1000);
      continue;
    }
    if (finishing) return;
    std::this_thread::sleep_for(idle);
    idle = std::min(idle * 2, std::chrono::microseconds(8000));
  }
}

bool Sender::ShipLane(Lane& lane) {
  const std::optional<uint64_t> after = SyncMainStream();  // after the drain: see there
  if (!after) return false;
  protocol::LaneBatch header{};
  std::memcpy(header.magic, protocol::kLaneBatchMagic.data(), sizeof(header.magic));
  header.size = uint32_t(lane.out.size() - sizeof(header));
  header.after = *after;
  StoreLe(lane.out.data(), header);
  const bool sent = SendFully(lane.fd, lane.out.data(), lane.out.size(), nullptr, &lanes_stop_);
  lane.out.resize(sizeof(header));
  return sent;
}

// Called once a batch is drained: a thread published an event only after the
// definitions it names were in the log, so the log read now holds them all.
std::optional<uint64_t> Sender::SyncMainStream() {
  // Tried, not waited for: Disconnect() may hold it while it joins the lanes.
  std::unique_lock lock(main_mutex_, std::defer_lock);
  while (!lock.try_lock()) {
    if (lanes_stop_.load()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (conn_fd_ < 0 || lanes_stop_.load()) return std::nullopt;
  {
    std::lock_guard registry_lock(registry_.mutex());
    registry_.definitions().TakeNew(out_);
  }
  // out_ holds whatever the connection has not sent yet (AppInfo, right after it came,
  // and what Pump holds).
  const bool sent = out_.empty() || SendFully(conn_fd_, out_.data(), out_.size(), &main_sent_, &lanes_stop_);
  out_.clear();
  if (!sent) return std::nullopt;
  return main_sent_;
}

void Sender::FinishLanes() {
  lanes_finish_.store(true);
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
    shutdown(lane->fd, SHUT_WR);  // the server reads the lane's end, then the goodbye
  }
}

void Sender::JoinLanes() {
  lanes_stop_.store(true);
  for (const std::unique_ptr<Lane>& lane : lanes_) shutdown(lane->fd, SHUT_RDWR);  // a blocked send returns
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
    close(lane->fd);
  }
  lanes_.clear();
  threads_on_lanes_ = false;
  lanes_stop_.store(false);
  lanes_finish_.store(false);
  lanes_failed_.store(false);
}

}  // namespace gnomon::client
