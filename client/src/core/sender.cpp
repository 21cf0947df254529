// The sender (sender.h): its loop, draining the threads and the definitions, shipping,
// and its end. Its connections, lanes and files are in sender_connection.cpp,
// sender_lanes.cpp and sender_files.cpp.
#include "sender.h"

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
#include "shipping.h"

namespace gnomon::client {
namespace {

constexpr auto kCalibrationPeriod = std::chrono::seconds(1);
constexpr auto kModulesPeriod = std::chrono::seconds(1);
constexpr auto kFirstCalibrationGap = std::chrono::milliseconds(20);
constexpr uint32_t kOwnFileExitFlushMs = 60000;

// The program's rank in a job of many processes: GNOMON_RANK, else the launcher's
// (torchrun and most: RANK; Open MPI; MPICH and Intel MPI; Slurm; then LOCAL_RANK),
// -1 when none is set or it is not a number.
int64_t ProcessRank() {
  for (const char* variable :
       {"GNOMON_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const long long rank = std::strtoll(value, &end, 10);
    if (*end == '\0' && rank >= 0 && errno == 0) return rank;
  }
  return -1;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return {};
  return name;
}

}  // namespace

void MakeShipping(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval send_timeout{0, 250 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
}

std::string MiB(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}

bool Sender::is_connected() const { return registry_.is_connected(); }

Sender::Sender(Registry& registry)
    : registry_(registry), announcer_(registry.config().announce, registry.config().announce_to) {
  out_.reserve(2 * kFlushBytes);
}

Sender::~Sender() {
  JoinLanes();
  for (const PendingHandshake& pending : pending_) close(pending.fd);
  if (conn_fd_ >= 0) close(conn_fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (collector_fd_ >= 0) close(collector_fd_);
}

void Sender::Start() {
  start_unix_ns_ = ReadClockNs(CLOCK_REALTIME);
  first_pair_ = ReadCalibrationPair();
  TakeCalibration();
  next_calibration_ = Clock::now() + kFirstCalibrationGap;
  if (own_file_ != nullptr) {  // the file is the server, from the start
    AppendAppInfo(out_);
    BeginDefinitions();
    registry_.SetConnected(true);
  }
  if (registry_.config().save_signal != 0) InstallSaveSignal(registry_.config().save_signal);
  thread_ = std::thread([this] { Run(); });
  thread_id_ = thread_.get_id();
  running_.store(true, std::memory_order_release);
}

void Sender::Stop() {
  if (!thread_.joinable()) return;
  // A file on this machine takes what is left at its own pace: a longer bound, only
  // against threads that keep recording while the program exits.
  const uint32_t flush_ms = writes_own_file_ ? std::max(registry_.config().exit_flush_ms, kOwnFileExitFlushMs)
                                             : registry_.config().exit_flush_ms;
  stop_deadline_ = Clock::now() + std::chrono::milliseconds(flush_ms);
  stop_.store(true);
  thread_.join();
  announcer_.Withdraw();
}

bool Sender::WaitForServer(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // Connected, and the lanes it asked for are up (or given up on): what is recorded from
  // here on goes the way the rest of the capture will. With no port of its own and no
  // collector to connect to, nothing will come.
  const bool none_can_come = listen_fd_ < 0 && registry_.config().collector_host.empty();
  while (!registry_.is_connected() || lanes_pending_.load()) {
    if (Clock::now() >= deadline || none_can_come || registry_.is_shut_down())
      return registry_.is_connected();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void Sender::TakeCalibration() {
  const CalibrationPair pair = ReadCalibrationPair();
  const int64_t elapsed_ns = pair.monotonic_raw_ns - first_pair_.monotonic_raw_ns;
  if (elapsed_ns > 0 && pair.tick > first_pair_.tick) {
    ticks_per_second_ = double(pair.tick - first_pair_.tick) * 1e9 / double(elapsed_ns);
  }
  std::vector<uint8_t> bytes;
  protocol::AppendMessage(bytes, protocol::CpuCalibration{.tick = pair.tick,
                                                          .monotonic_raw_ns = pair.monotonic_raw_ns,
                                                          .monotonic_ns = pair.monotonic_ns,
                                                          .uncertainty_ns = pair.uncertainty_ns});
  registry_.AddClockSample(0, bytes.data(), bytes.size());
  registry_.NoteCalibration(pair);
  next_calibration_ = Clock::now() + kCalibrationPeriod;
}

void Sender::AnnounceModules() {
  const Config& config = registry_.config();
  if (config.callstack_depth == 0 && config.sampling_hz == 0) {
    next_modules_ = Clock::time_point::max();
    return;
  }
  std::vector<uint8_t> bytes;
  module_map_.AppendNew(bytes);
  if (!bytes.empty()) registry_.AddDefinition(bytes.data(), bytes.size());
  next_modules_ = Clock::now() + kModulesPeriod;
}

void Sender::Announce() {
  if (listen_fd_ < 0) return;
  char host[protocol::kMaxHostName + 1] = {};
  gethostname(host, sizeof(host) - 1);
  const auto pid = static_cast<uint32_t>(getpid());
  announcer_.Publish({.name = program_invocation_short_name,
                      .pid = pid,
                      .host = host,
                      .address = registry_.config().address,
                      .port = port_,
                      .start_unix_ns = static_cast<uint64_t>(start_unix_ns_),
                      .start_ticks = protocol::ProcessStartTicks(pid)});
}

void Sender::Run() {
  MarkLibraryThread();
  pthread_setname_np(pthread_self(), "gnomon-sender");  // as top and debuggers show it
  registry_.NameQuietLibraryThread("gnomon sender");    // as the trace's context switches show it
  // Here, not on the thread that made the first Gnomon call: a slow file system delays
  // the announcement, never the program.
  Announce();
  bool final_calibration_taken = false;
  while (true) {
    const bool stopping = stop_.load();
    const auto now = Clock::now();
    if (now >= next_calibration_) TakeCalibration();
    if (now >= next_modules_) AnnounceModules();
    announcer_.Tick(now);
    registry_.EndStartIfDue(now);
    ServeSaveRequests();
    if (lanes_failed_.load()) Disconnect(nullptr);  // the server left, or broke a lane
    if (lanes_wanted_ > 0 && lanes_.empty() && now >= lanes_deadline_) ForgetLanes();
    if (!has_sink()) {
      if (!stopping) {
        ServiceConnections(std::chrono::milliseconds(50));
        continue;
      }
      const uint32_t wait_ms = registry_.config().exit_wait_for_server_ms;
      if (wait_ms == 0 || (listen_fd_ < 0 && registry_.config().collector_host.empty())) break;
      const auto wait_deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
      while (conn_fd_ < 0 && Clock::now() < wait_deadline) {
        announcer_.Tick(Clock::now());  // still announced while it waits to be connected to
        ServiceConnections(std::chrono::milliseconds(50));
      }
      if (conn_fd_ < 0) break;
      stop_deadline_ = Clock::now() + std::chrono::milliseconds(registry_.config().exit_flush_ms);
    }
    if (stopping && !final_calibration_taken) {
      TakeCalibration();
      final_calibration_taken = true;
    }
    if (stopping && lanes_pending_.load() &&
        Clock::now() < std::min(lanes_deadline_, stop_deadline_.load())) {
      // A server that connected just now: its lanes may still come, and a program at its
      // end sends all it has over them rather than over one connection.
      ServiceConnections(std::chrono::milliseconds(5));
      continue;
    }
    if (stopping && !lane_fds_.empty()) ForgetLanes();  // not all came: the server sees them end
    if (stopping && !lanes_.empty() && !lanes_finish_.load()) {
      FinishLanes();
      if (lanes_failed_.load()) {  // what a lane held is lost: no goodbye, the server says so
        Disconnect(nullptr);
        continue;
      }
    }
    const int64_t sent = Pump();
    if (sent < 0) continue;
    if (stopping) {
      if (sent == 0 || Clock::now() >= stop_deadline_.load()) {
        {
          std::lock_guard lock(main_mutex_);
          protocol::AppendMessage(out_, protocol::EndOfStream{.tick = detail::Now()});
          Flush();
        }
        // Wait (bounded) for the server to close first, so the last bytes are not lost
        // to a reset: reading what it still sends (clock probes), since closing with
        // bytes unread resets the connection too, and a reset throws away what the
        // server has not read yet. A busy capture (many programs on few cores) may be
        // seconds behind: it has until the exit flush's deadline.
        if (conn_fd_ >= 0) {
          shutdown(conn_fd_, SHUT_WR);
          const auto deadline =
              std::max(Clock::now() + std::chrono::milliseconds(500), stop_deadline_.load());
          uint8_t unread[256];
          while (Clock::now() < deadline) {
            pollfd pfd{conn_fd_, POLLIN, 0};
            if (poll(&pfd, 1, 50) < 0) break;
            const ssize_t n = recv(conn_fd_, unread, sizeof(unread), MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
          }
        }
        Disconnect(nullptr);
        break;
      }
      continue;
    }
    // Idle: wait a little for anything. Holding a batch: until the next look for more.
    // Busy: only look, so a second server is answered (busy) and a server that left is
    // noticed without slowing the shipping down. A clock probe ends any wait.
    ServiceConnections(holding_ ? std::chrono::microseconds(kBatchStep)
                                : std::chrono::microseconds(sent == 0 ? 1000 : 0));
  }
  JoinLanes();
  std::lock_guard lock(save_mutex_);  // a save asked for as the program ended
  if (save_request_ != nullptr && !save_request_->done) {
    save_request_->error = "the profiler has stopped";
    save_request_->done = true;
    save_done_.notify_all();
  }
}

void Sender::BeginDefinitions() {
  std::lock_guard registry_lock(registry_.mutex());
  registry_.definitions().BeginServer(out_);
}

void Sender::AppendAppInfo(std::vector<uint8_t>& out, bool host_info) const {
  const std::string_view name = program_invocation_short_name;
  protocol::AppendMessage(
      out,
      protocol::AppInfo{.pid = static_cast<uint32_t>(getpid()),
                        .timer_kind = static_cast<uint8_t>(CurrentTimerKind()),
                        .ticks_per_second_estimate = static_cast<uint64_t>(ticks_per_second_),
                        .start_unix_ns = start_unix_ns_,
                        .start_tick = first_pair_.tick},
      {.name = name.substr(0, protocol::kMaxStringBytes)});
  if (!host_info) return;
  static const int64_t rank = ProcessRank();
  static const std::string host = HostName();
  protocol::AppendMessage(out, protocol::HostInfo{.rank = rank},
                          {.host = std::string_view(host).substr(0, protocol::kMaxStringBytes)});
  const ProgramEnvironmentInfo& environment = environment_;
  auto fit = [](const std::string& text) {
    return std::string_view(text).substr(0, protocol::kMaxStringBytes);
  };
  protocol::AppendMessage(out,
                          protocol::ProgramEnvironment{.logical_cpus = environment.logical_cpus,
                                                       .memory_bytes = environment.memory_bytes},
                          {.system = fit(environment.system),
                           .cpu = fit(environment.cpu),
                           .settings = fit(environment.settings)});
}

int64_t Sender::Pump() {
  static thread_local std::vector<ThreadState*> snapshot;
  static thread_local std::vector<ThreadState*> exited;
  snapshot.clear();
  exited.clear();
  std::unique_lock main_lock(main_mutex_);
  if (conn_fd_ < 0 && own_file_ == nullptr) return -1;
  if (out_.empty()) held_since_ = Clock::now();  // what this drain finds is held from now
  const size_t held = out_.size();
  {
    std::lock_guard lock(registry_.mutex());
    registry_.definitions().TakeNew(out_);
    if (!threads_on_lanes_) snapshot = registry_.threads();
  }
  int64_t event_bytes = int64_t(out_.size() - held);  // the log's new bytes
  for (ThreadState* thread : snapshot) {
    const size_t before = out_.size();
    if (DrainThread(*thread, out_, current_context_)) exited.push_back(thread);
    event_bytes += static_cast<int64_t>(out_.size() - before);
    if (out_.size() >= kFlushBytes && !Flush()) return -1;
  }
  const uint64_t dropped = registry_.dropped_events();
  if (dropped != dropped_sent_) {
    protocol::AppendMessage(out_, protocol::DroppedEvents{.total_events = dropped});
    dropped_sent_ = dropped;
  }
  // A small batch waits for more, as a lane's does (RunLane): shipping whatever each look
  // found, a steady program's sender spent half a core on 2 cores sending a few hundred
  // bytes at a time, and the receiver as many wakeups.
  holding_ = !out_.empty() && !BatchIsDue(out_.size(), held_since_, stop_.load() || !exited.empty());
  if (!holding_ && !out_.empty() && !Flush()) return -1;
  main_lock.unlock();
  for (ThreadState* thread : exited) ReleaseThread(thread);
  return event_bytes;
}

bool Sender::DrainThread(ThreadState& thread, std::vector<uint8_t>& out, uint32_t& context) {
  const bool finished = thread.finished.load(std::memory_order_acquire);
  if (thread.read_chunk == nullptr) {
    thread.read_chunk = thread.head.load(std::memory_order_acquire);
    thread.read_pos = 0;
    if (thread.read_chunk == nullptr) return finished;
  }
  while (true) {
    Chunk* chunk = thread.read_chunk;
    Chunk* next = chunk->next.load(std::memory_order_acquire);
    const uint32_t end = chunk->committed.load(std::memory_order_acquire);
    if (end > thread.read_pos) {
      if (context != thread.id) {
        protocol::AppendMessage(out, protocol::ThreadContext{.thread_id = thread.id});
        context = thread.id;
      }
      out.insert(out.end(), chunk->data + thread.read_pos, chunk->data + end);
      thread.read_pos = end;
    }
    if (next == nullptr) return finished;
    // The producer moved on, so `end` (read after `next`) was the chunk's final size.
    thread.read_chunk = next;
    thread.read_pos = 0;
    chunk->Reset();
    Chunk* expected = nullptr;
    if (thread.spare.compare_exchange_strong(expected, chunk, std::memory_order_acq_rel)) {
      AdvanceBufferEpoch();  // the thread may be waiting for a chunk: this one is its own
    } else {
      registry_.pool().Release(chunk);
    }
    if (out.size() >= kFlushBytes) return false;
  }
}

void Sender::ReleaseThread(ThreadState* thread) {
  registry_.RetireThread(thread);
  if (thread->read_chunk != nullptr) registry_.pool().Release(thread->read_chunk);
  if (Chunk* spare = thread->spare.exchange(nullptr)) registry_.pool().Release(spare);
  delete thread;
}

bool Sender::Flush() {
  if (own_file_ != nullptr) {
    own_file_->Append(out_.data(), out_.size());
    own_file_->FlushIfOld();
    out_.clear();
    return true;
  }
  const bool ok = SendAll(out_.data(), out_.size());
  out_.clear();
  return ok;
}

bool Sender::SendAll(const uint8_t* data, size_t size) {
  if (conn_fd_ < 0) return false;
  if (SendFully(conn_fd_, data, size, &main_sent_, nullptr)) return true;
  Disconnect(stop_.load() && Clock::now() >= stop_deadline_.load()
                 ? "the server did not take the remaining events in time"
                 : nullptr);
  return false;
}

bool Sender::SendFully(int fd, const uint8_t* data, size_t size, uint64_t* sent,
                       const std::atomic<bool>* give_up) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);  // waits up to the send timeout
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      if (sent != nullptr) *sent += uint64_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if ((give_up != nullptr && give_up->load()) || (stop_.load() && Clock::now() >= stop_deadline_.load()))
        return false;
      continue;
    }
    return false;
  }
  return true;
}

void Sender::Disconnect(const char* reason) {
  if (reason != nullptr) std::fprintf(stderr, "gnomon: %s\n", reason);
  // The lanes end first: nothing drains a thread once the connection is gone (a save or
  // the ring may walk the chains then). This may run under main_mutex_, which a lane
  // only tries for.
  JoinLanes();
  ForgetLanes();
  std::lock_guard lock(main_mutex_);
  if (conn_fd_ >= 0) {
    // Bytes left unread (clock probes) would turn the close into a reset, which can
    // throw away the last events still on their way.
    uint8_t unread[256];
    while (recv(conn_fd_, unread, sizeof(unread), MSG_DONTWAIT) > 0) {
    }
    close(conn_fd_);
  }
  conn_fd_ = -1;
  answers_probes_ = false;
  {
    std::lock_guard registry_lock(registry_.mutex());
    registry_.definitions().EndServer();
  }
  if (own_file_ != nullptr) own_file_->Append(out_.data(), out_.size());  // its last batch
  out_.clear();  // a batch held for the connection goes with it; the next one starts afresh
  holding_ = false;
  if (own_file_ != nullptr) {
    const std::string& path = own_path_;
    if (tracefile::Status s = own_file_->Finish(); !s.ok()) {
      std::fprintf(stderr, "gnomon: the trace file %s is incomplete: %s\n", path.c_str(),
                   s.message().c_str());
    } else {
      std::fprintf(stderr, "gnomon: wrote the trace file %s (%s)\n", path.c_str(),
                   MiB(own_file_->file_bytes()).c_str());
    }
    own_file_.reset();
  }
  registry_.SetConnected(false);
  announcer_.SetConnected(false);
}

}  // namespace gnomon::client
