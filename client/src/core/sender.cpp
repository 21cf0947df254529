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

namespace gnomon::client {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::StoreLe;

constexpr auto kCalibrationPeriod = std::chrono::seconds(1);
constexpr auto kModulesPeriod = std::chrono::seconds(1);
constexpr auto kFirstCalibrationGap = std::chrono::milliseconds(20);
constexpr size_t kFlushBytes = 1 << 20;
// A lane, or the connection, ships a batch once it holds this much, or once its first
// bytes are this old, looking for more every kBatchStep meanwhile.
constexpr size_t kBatchBytes = 64u << 10;
constexpr auto kBatchHold = std::chrono::microseconds(1000);
constexpr auto kBatchStep = std::chrono::microseconds(200);
constexpr auto kHandshakeTimeout = std::chrono::seconds(2);  // per connection, never blocking
constexpr auto kLanesWait = std::chrono::seconds(10);        // for all the lanes a server asked for
constexpr size_t kMaxPendingHandshakes = 16;                 // more: the oldest waiting one is dropped
constexpr auto kCollectorRetry = std::chrono::seconds(1);    // GNOMON_COLLECTOR: between attempts
constexpr int kListenBacklog = 64;
constexpr int kPortsToTry = 10;
constexpr uint32_t kOwnFileExitFlushMs = 60000;

// Whether a batch of `bytes` whose first were drained at `held_since` ships now: it is
// big enough or old enough, or `now_anyway` (the program finishes, a thread exited).
bool BatchIsDue(size_t bytes, Clock::time_point held_since, bool now_anyway) {
  return now_anyway || bytes >= kBatchBytes || Clock::now() - held_since >= kBatchHold;
}

// Set by the save signal's handler (all it may do), taken by the sender's loop.
constinit std::atomic<bool> g_save_signalled{false};
void OnSaveSignal(int) { g_save_signalled.store(true, std::memory_order_relaxed); }

void InstallSaveSignal(int number) {
  struct sigaction old {};
  sigaction(number, nullptr, &old);
  if ((old.sa_flags & SA_SIGINFO) != 0 || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
    std::fprintf(stderr,
                 "gnomon: ignoring GNOMON_SAVE_SIGNAL=%d: the program handles that signal itself; choose "
                 "another (USR1, USR2, or a real-time signal), or call gnomon_request_save() from its "
                 "handler\n",
                 number);
    return;
  }
  struct sigaction action {};
  action.sa_handler = OnSaveSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(number, &action, nullptr);
}

// A trace file the program writes at `path`, which it may replace only when it is a
// trace and `overwrite` says so: checked before anything is created, so a folder, a
// FIFO or a device is refused with nothing written beside it.
tracefile::Result<std::unique_ptr<tracefile::TraceWriter>> CreateTraceFile(const std::string& path,
                                                                           tracefile::Overwrite overwrite) {
  if (tracefile::Status s = tracefile::CheckOutputPath(path, overwrite); !s.ok()) return s;
  // Two compressing threads: the program's own file takes little of its cores, and one
  // block compresses while the next is compacted.
  return tracefile::TraceWriter::Create(path, {.compress_threads = 2, .on_thread_start = &MarkLibraryThread});
}

// A connection events go out on: sends wait, a quarter second at a time (SendFully),
// and leave at once.
void MakeShipping(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval send_timeout{0, 250 * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
}

// The names a trace the environment named (GNOMON_OUTPUT) may take, in the order tried:
// `path` itself, then with the pid before its extension ("run.4242.gnomon"), then with a
// count after the pid ("run.4242-2.gnomon"). Two programs given the same name, or one
// run after another, each keep their own file.
std::string OwnPathVariant(const std::string& path, int attempt) {
  if (attempt == 0) return path;
  const size_t base = path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1;
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot <= base) dot = path.size();  // no extension (or a hidden file's dot)
  std::string tag = "." + std::to_string(getpid());
  if (attempt > 1) tag += "-" + std::to_string(attempt);
  return path.substr(0, dot) + tag + path.substr(dot);
}
constexpr int kOwnPathVariants = 1000;  // a container's pid is the same each run: counts go on

// Whether a regular file (another run's trace, or anything else) is at `path`.
bool IsTaken(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string MiB(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}

}  // namespace

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

bool Sender::OpenOwnFile() {
  const std::string& path = registry_.config().output_path;
  tracefile::Status status = tracefile::Status::Ok();
  for (int attempt = 0; attempt < kOwnPathVariants; ++attempt) {
    const std::string candidate = OwnPathVariant(path, attempt);
    if (IsTaken(candidate)) continue;  // another run's trace is never replaced
    auto writer = CreateTraceFile(candidate, tracefile::Overwrite::kNo);
    // Published at once: a program that is killed leaves its file where it said. Never
    // over a file that appeared since the look (another program given the same name).
    status = writer.ok() ? writer.value()->Publish(tracefile::Overwrite::kNo) : writer.status();
    if (!status.ok() && IsTaken(candidate)) continue;
    if (!status.ok()) break;
    if (attempt > 0) {
      std::fprintf(stderr,
                   "gnomon: GNOMON_OUTPUT=%s holds another run's trace, which is kept; this run's trace is "
                   "%s\n",
                   path.c_str(), candidate.c_str());
    }
    own_file_ = std::move(writer.value());
    own_path_ = candidate;
    return true;
  }
  if (status.ok())
    status = tracefile::Status::Error("it and " + OwnPathVariant(path, 1) + " and its variants exist");
  std::fprintf(stderr,
               "gnomon: cannot write the trace file GNOMON_OUTPUT=%s: %s; listening for a capture instead\n",
               path.c_str(), status.message().c_str());
  return false;
}

bool Sender::Listen() {
  const Config& config = registry_.config();
  if (!config.output_path.empty() && config.buffer_policy != BufferPolicy::kRing && OpenOwnFile()) {
    writes_own_file_ = true;
    return true;
  }
  const bool is_v6 = config.address.find(':') != std::string::npos;
  // Non-blocking: AcceptPending() takes connections until there are none left.
  listen_fd_ = socket(is_v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) {
    std::fprintf(stderr, "gnomon: cannot create a socket: %s\n", std::strerror(errno));
    return false;
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto set_port = [&](uint16_t port) {
    if (is_v6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(port);
      length = sizeof(*a);
      return inet_pton(AF_INET6, config.address.c_str(), &a->sin6_addr) == 1;
    }
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    length = sizeof(*a);
    return inet_pton(AF_INET, config.address.c_str(), &a->sin_addr) == 1;
  };
  bool bound = false;
  for (int i = 0; i < (config.port == 0 ? 1 : kPortsToTry) && !bound; ++i) {
    const uint16_t port = config.port == 0 ? 0 : static_cast<uint16_t>(config.port + i);
    if (!set_port(port)) {
      std::fprintf(stderr,
                   "gnomon: '%s' is not a numeric IP address; set GNOMON_ADDRESS to one, "
                   "e.g. 127.0.0.1\n",
                   config.address.c_str());
      close(listen_fd_);  // not listening: nothing is ever accepted on it
      listen_fd_ = -1;
      return false;
    }
    bound = bind(listen_fd_, reinterpret_cast<sockaddr*>(&storage), length) == 0;
    if (!bound && errno != EADDRINUSE) break;
  }
  if (!bound || listen(listen_fd_, kListenBacklog) != 0) {
    const int error = errno;
    std::fprintf(stderr, "gnomon: cannot listen on %s port %u: %s; %s\n", config.address.c_str(), config.port,
                 std::strerror(error),
                 error == EADDRNOTAVAIL ? "set GNOMON_ADDRESS to an address of this machine, e.g. 127.0.0.1"
                                        : "set GNOMON_PORT to a free port");
    close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  length = sizeof(storage);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&storage), &length);
  port_ = ntohs(is_v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  if (config.port != 0 && port_ != config.port) {
    std::fprintf(stderr, "gnomon: port %u is in use; listening on port %u\n", config.port, unsigned{port_});
  }
  if (!config.port_file.empty() &&
      !WriteFileAtomically(config.port_file, std::to_string(port_) + "\n", 0644)) {
    std::fprintf(stderr, "gnomon: cannot write the port file %s: %s\n", config.port_file.c_str(),
                 std::strerror(errno));
  }
  if (config.announce == AnnounceMode::kLan && (config.address == "0.0.0.0" || config.address == "::")) {
    std::fprintf(stderr,
                 "gnomon: GNOMON_ANNOUNCE=lan: listening on all interfaces, port %u: anyone who can reach it "
                 "can connect and read this program's events (GNOMON_ADDRESS=<an address of this machine> "
                 "limits it to one network)\n",
                 unsigned{port_});
  } else if (config.announce == AnnounceMode::kLan &&
             (config.address.starts_with("127.") || config.address == "::1")) {
    std::fprintf(stderr,
                 "gnomon: GNOMON_ANNOUNCE=lan, but GNOMON_ADDRESS=%s is reachable from this machine only; "
                 "the LAN is told of a program it cannot connect to\n",
                 config.address.c_str());
  }
  return true;
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

void Sender::RequestSave() { g_save_signalled.store(true, std::memory_order_relaxed); }

bool Sender::SaveRecording(const std::string& path) {
  if (running_.load(std::memory_order_acquire) && std::this_thread::get_id() == thread_id_) {
    std::fprintf(stderr, "gnomon: cannot save the recording from the profiler's own thread\n");
    return false;  // it would wait for itself
  }
  InsideLibrary inside;  // what is allocated under save_mutex_ must not record (and wait for a chunk)
  std::unique_lock lock(save_mutex_);
  if (save_request_ != nullptr) {
    std::fprintf(stderr, "gnomon: a save of the recording is already running (to %s); this one is skipped\n",
                 save_request_->path.empty() ? "the default path" : save_request_->path.c_str());
    return false;
  }
  if (!running_.load(std::memory_order_acquire) || stop_.load()) {
    std::fprintf(stderr, "gnomon: cannot save the recording: the profiler is not running\n");
    return false;
  }
  SaveRequest request;
  request.path = path;
  save_request_ = &request;
  save_done_.wait(lock, [&] { return request.done; });
  save_request_ = nullptr;
  if (!request.error.empty()) {
    std::fprintf(stderr, "gnomon: cannot save the recording: %s\n", request.error.c_str());
    return false;
  }
  return true;
}

void Sender::ServeSaveRequests() {
  if (g_save_signalled.exchange(false, std::memory_order_relaxed)) {
    if (const std::string error = WriteRecording(""); !error.empty()) {
      std::fprintf(stderr, "gnomon: cannot save the recording (GNOMON_SAVE_SIGNAL): %s\n", error.c_str());
    }
  }
  SaveRequest* request = nullptr;
  {
    std::lock_guard lock(save_mutex_);
    if (save_request_ == nullptr || save_request_->done) return;
    request = save_request_;
  }
  std::string error = WriteRecording(request->path);
  {
    std::lock_guard lock(save_mutex_);
    request->error = std::move(error);
    request->done = true;
  }
  save_done_.notify_all();
}

std::string Sender::WriteRecording(const std::string& path) {
  const Config& config = registry_.config();
  const std::string named = !path.empty()                 ? path
                            : !config.output_path.empty() ? config.output_path
                                                          : "gnomon-" + std::to_string(getpid()) + ".gnomon";
  std::string target = named;
  if (conn_fd_ >= 0) return "a capture is connected and receives the events";
  if (own_file_ != nullptr) return "the program writes its own trace file already (" + own_path_ + ")";
  // A path the program was given replaces the trace there; a name from the environment
  // replaces only this run's own earlier save, never another run's trace.
  const bool named_here = !path.empty();
  for (int attempt = 1; !named_here && IsTaken(target) && !saved_paths_.contains(target); ++attempt) {
    if (attempt == kOwnPathVariants) return target + " and its variants hold other runs' traces";
    target = OwnPathVariant(named, attempt);
  }
  const auto overwrite =
      named_here || saved_paths_.contains(target) ? tracefile::Overwrite::kYes : tracefile::Overwrite::kNo;
  auto created = CreateTraceFile(target, overwrite);
  if (!created.ok()) return created.status().message();
  tracefile::TraceWriter& writer = *created.value();
  TakeCalibration();  // the newest events lie inside the calibrated span
  std::vector<uint8_t> out;
  AppendAppInfo(out);
  // Nothing is recycled while the chains are read: a thread that needs a chunk meanwhile
  // drops its events (and counts them).
  registry_.FreezeRing(true);
  std::vector<ThreadState*> threads;
  {
    std::lock_guard lock(registry_.mutex());
    registry_.definitions().AppendKept(out);
    threads = registry_.threads();
  }
  for (ThreadState* thread : threads) {
    // Where the sender would go on from: what it drained already is not in the buffer.
    Chunk* chunk =
        thread->read_chunk != nullptr ? thread->read_chunk : thread->head.load(std::memory_order_acquire);
    uint32_t pos = thread->read_chunk != nullptr ? thread->read_pos : 0;
    bool context_written = false;
    while (chunk != nullptr) {
      Chunk* next = chunk->next.load(std::memory_order_acquire);
      const uint32_t end = chunk->committed.load(std::memory_order_acquire);
      if (end > pos) {
        if (!context_written) protocol::AppendMessage(out, protocol::ThreadContext{.thread_id = thread->id});
        context_written = true;
        out.insert(out.end(), chunk->data + pos, chunk->data + end);
      }
      if (out.size() >= kFlushBytes) {
        writer.Append(out.data(), out.size());
        out.clear();
      }
      chunk = next;
      pos = 0;
    }
  }
  registry_.FreezeRing(false);
  protocol::AppendMessage(out, protocol::DroppedEvents{.total_events = registry_.dropped_events()});
  protocol::AppendMessage(out, protocol::EndOfStream{.tick = detail::Now()});
  writer.Append(out.data(), out.size());
  const uint64_t stream_bytes = writer.raw_bytes();
  if (tracefile::Status s = writer.Finish(); !s.ok()) return s.message();
  if (tracefile::Status s = writer.Publish(overwrite); !s.ok()) return s.message();
  saved_paths_.insert(target);
  std::fprintf(stderr, "gnomon: saved the recording to %s (%s of events, %s on disk)\n", target.c_str(),
               MiB(stream_bytes).c_str(), MiB(writer.file_bytes()).c_str());
  return "";
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

void Sender::ServiceConnections(std::chrono::microseconds timeout) {
  ConnectToCollector();
  if (listen_fd_ < 0 && conn_fd_ < 0 && collector_fd_ < 0 && pending_.empty()) {
    std::this_thread::sleep_for(timeout);
    return;
  }
  std::vector<pollfd> fds;
  fds.reserve(pending_.size() + lane_fds_.size() + 3);
  fds.push_back({listen_fd_, POLLIN, 0});  // a negative fd is ignored by poll
  fds.push_back({conn_fd_, POLLIN, 0});
  for (const PendingHandshake& pending : pending_) fds.push_back({pending.fd, POLLIN, 0});
  const size_t collector_index = fds.size();
  fds.push_back({collector_fd_, POLLOUT, 0});  // connected (or refused) once writable
  // Lanes taken while the others are awaited: the server sends nothing on them, so a
  // closed one means it gave up on them (it goes on over one connection).
  const size_t lanes_index = fds.size();
  for (const int fd : lane_fds_) fds.push_back({fd, POLLIN, 0});
  if (!pending_.empty()) {  // wake up for the nearest handshake deadline
    auto nearest = pending_.front().deadline;
    for (const PendingHandshake& pending : pending_) nearest = std::min(nearest, pending.deadline);
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(nearest - Clock::now());
    timeout = std::clamp(left + std::chrono::microseconds(1), std::chrono::microseconds(0), timeout);
  }
  const timespec wait{.tv_sec = time_t(timeout.count() / 1'000'000),
                      .tv_nsec = long(timeout.count() % 1'000'000) * 1000};
  if (ppoll(fds.data(), nfds_t(fds.size()), &wait, nullptr) < 0) return;
  if (conn_fd_ >= 0 && fds[1].revents != 0) PeerClosed();
  // Hellos first (the descriptors polled are pending_'s first entries), then new peers.
  const auto now = Clock::now();
  size_t i = 0;
  std::erase_if(pending_, [&](PendingHandshake& pending) {
    const short events = 2 + i < fds.size() ? fds[2 + i++].revents : 0;
    if (events != 0 && ContinueHandshake(pending)) return true;
    if (now < pending.deadline) return false;
    close(pending.fd);  // said nothing in time: not a Gnomon server, or a stalled one
    return true;
  });
  if (collector_fd_ >= 0 && fds[collector_index].revents != 0) FinishCollectorConnect();
  for (size_t lane = lanes_index; lane < fds.size(); ++lane) {
    if (fds[lane].revents == 0) continue;
    ForgetLanes();
    break;
  }
  if (fds[0].revents & POLLIN) AcceptPending();
}

void Sender::AcceptPending() {
  for (size_t accepted = 0; accepted < kMaxPendingHandshakes; ++accepted) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    AddPending(fd);
  }
}

void Sender::AddPending(int fd) {
  if (pending_.size() >= kMaxPendingHandshakes) {  // the one waiting longest gives way
    close(pending_.front().fd);
    pending_.erase(pending_.begin());
  }
  PendingHandshake& pending = pending_.emplace_back();
  pending.fd = fd;
  pending.deadline = Clock::now() + kHandshakeTimeout;
  if (ContinueHandshake(pending)) pending_.pop_back();  // a hello may already be there
}

bool Sender::ResolveCollector() {
  const Config& config = registry_.config();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(config.collector_port);
  // On the sender thread (a slow name server delays nobody else), and again at each
  // attempt until it resolves.
  if (const int error = getaddrinfo(config.collector_host.c_str(), port.c_str(), &hints, &found);
      error != 0) {
    if (!collector_unresolved_said_) {
      std::fprintf(stderr,
                   "gnomon: cannot resolve GNOMON_COLLECTOR host '%s': %s; trying again each second\n",
                   config.collector_host.c_str(), gai_strerror(error));
    }
    collector_unresolved_said_ = true;
    return false;
  }
  collector_addresses_.clear();
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage address{};
    std::memcpy(&address, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof(address)));
    collector_addresses_.emplace_back(address, a->ai_addrlen);
  }
  freeaddrinfo(found);
  return !collector_addresses_.empty();
}

void Sender::ConnectToCollector() {
  if (registry_.config().collector_host.empty() || conn_fd_ >= 0 || collector_fd_ >= 0) return;
  // A connection made and still in its handshake (a slow capture): not a second one.
  if (std::any_of(pending_.begin(), pending_.end(),
                  [&](const PendingHandshake& p) { return p.fd == collector_pending_fd_; })) {
    return;
  }
  const auto now = Clock::now();
  if (now < next_collector_attempt_) return;
  next_collector_attempt_ = now + kCollectorRetry;
  if (collector_addresses_.empty() && !ResolveCollector()) return;
  // Each of the name's addresses in turn (localhost may be ::1 first, the capture on
  // 127.0.0.1).
  const auto& [address, length] = collector_addresses_[collector_next_++ % collector_addresses_.size()];
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) {
    collector_pending_fd_ = fd;
    AddPending(fd);  // the collector speaks first, as a server that connected does
  } else if (errno == EINPROGRESS) {
    collector_fd_ = fd;
  } else {
    close(fd);  // refused: no capture listening yet; tried again in a second
  }
}

void Sender::FinishCollectorConnect() {
  int error = 0;
  socklen_t length = sizeof(error);
  const int fd = std::exchange(collector_fd_, -1);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
    close(fd);
    return;
  }
  collector_pending_fd_ = fd;
  AddPending(fd);
}

bool Sender::ContinueHandshake(PendingHandshake& pending) {
  const ssize_t n =
      recv(pending.fd, pending.hello + pending.received, sizeof(pending.hello) - pending.received, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) {
    close(pending.fd);
    return true;
  }
  pending.received += size_t(n);
  if (pending.received < sizeof(pending.hello)) return false;
  const std::optional<uint16_t> server_version =
      protocol::ParseServerHello(pending.hello, sizeof(pending.hello));
  if (!server_version) {
    close(pending.fd);  // not a Gnomon server
  } else if (*server_version != protocol::kProtocolVersion) {
    Answer(pending.fd, protocol::HandshakeStatus::kVersionMismatch);
    std::fprintf(stderr,
                 "gnomon: refused a server speaking protocol version %u (this program speaks "
                 "%u); use a matching Gnomon release\n",
                 unsigned{*server_version}, unsigned{protocol::kProtocolVersion});
    close(pending.fd);
  } else if ((protocol::ServerHelloFlags(pending.hello) & protocol::kServerLaneHello) != 0) {
    if (!TakeLane(pending.fd, protocol::ServerHelloReserved(pending.hello))) {
      Answer(pending.fd, protocol::HandshakeStatus::kBusy);
      close(pending.fd);
    }
  } else if (conn_fd_ >= 0) {
    Answer(pending.fd, protocol::HandshakeStatus::kBusy);
    close(pending.fd);
  } else {
    const uint16_t flags = protocol::ServerHelloFlags(pending.hello);
    const bool probes = (flags & protocol::kServerSendsClockProbes) != 0;
    // Lanes connect to the listening socket: none for a program that has none.
    lanes_wanted_ = (flags & protocol::kServerWantsLanes) != 0 && listen_fd_ >= 0
                        ? std::min(protocol::ServerHelloReserved(pending.hello), protocol::kMaxLanes)
                        : 0;
    lane_token_ = 0;
    while (lanes_wanted_ > 0 && lane_token_ == 0) {
      if (getrandom(&lane_token_, sizeof(lane_token_), GRND_NONBLOCK) != ssize_t(sizeof(lane_token_)))
        lane_token_ = uint32_t(Clock::now().time_since_epoch().count()) ^ uint32_t(getpid());
    }
    Answer(pending.fd, protocol::HandshakeStatus::kOk,
           (probes ? uint64_t{protocol::kCapClockReplies} : 0) |
               (lanes_wanted_ > 0 ? uint64_t{protocol::kCapLanes} : 0),
           lane_token_);
    lanes_deadline_ = Clock::now() + kLanesWait;
    lanes_pending_.store(lanes_wanted_ > 0);
    answers_probes_ = probes;  // before Promote: such a server also knows HostInfo
    probe_filled_ = 0;
    probes_this_second_ = 0;
    Promote(pending.fd);
  }
  return true;
}

void Sender::Answer(int fd, protocol::HandshakeStatus status, uint64_t capabilities, uint32_t reserved) {
  uint8_t reply[sizeof(protocol::ClientHello)] = {};
  std::memcpy(reply, protocol::kClientMagic, sizeof(protocol::kClientMagic));
  StoreLe<uint16_t>(reply + offsetof(protocol::ClientHello, version), protocol::kProtocolVersion);
  StoreLe<uint16_t>(reply + offsetof(protocol::ClientHello, status), static_cast<uint16_t>(status));
  if (status == protocol::HandshakeStatus::kOk) {
    StoreLe<uint64_t>(reply + offsetof(protocol::ClientHello, capabilities),
                      uint64_t{protocol::kCapCpuZones} | uint64_t{protocol::kCapGpu} | capabilities);
    StoreLe<uint32_t>(reply + offsetof(protocol::ClientHello, reserved), reserved);
  }
  send(fd, reply, sizeof(reply), MSG_NOSIGNAL);  // 24 bytes into an empty socket buffer
}

void Sender::BeginDefinitions() {
  std::lock_guard registry_lock(registry_.mutex());
  registry_.definitions().BeginServer(out_);
}

void Sender::Promote(int fd) {
  MakeShipping(fd);
  conn_fd_ = fd;
  main_sent_ = 0;
  current_context_ = 0;
  dropped_sent_ = 0;
  AppendAppInfo(out_, answers_probes_);
  BeginDefinitions();
  registry_.SetConnected(true);
  announcer_.SetConnected(true);
}

namespace {

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
  std::memcpy(header.magic, protocol::kLaneBatchMagic, sizeof(header.magic));
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

bool Sender::PeerClosed() {
  if (answers_probes_) return ReadClockProbes();
  uint8_t byte;
  const ssize_t n = recv(conn_fd_, &byte, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  // End of stream, an error, or bytes a server never sends after its hello.
  Disconnect(nullptr);
  return true;
}

bool Sender::ReadClockProbes() {
  // A few probes a call, the rest left in the socket for the next: shipping events
  // comes first. A server probing far faster than a capture does is cut off.
  constexpr int kProbesPerCall = 4;
  constexpr uint32_t kMaxProbesPerSecond = 100;
  for (int answered = 0;;) {
    const ssize_t n = recv(conn_fd_, probe_ + probe_filled_, sizeof(probe_) - probe_filled_, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (n <= 0) break;  // end of stream, or an error
    const int64_t received_ns = ReadClockNs(CLOCK_MONOTONIC_RAW);
    probe_filled_ += size_t(n);
    if (probe_filled_ < sizeof(probe_)) continue;
    probe_filled_ = 0;
    const std::optional<uint32_t> sequence = protocol::ParseClockProbe(probe_);
    if (!sequence) break;  // bytes a server never sends
    if (received_ns - probe_second_start_ns_ >= 1'000'000'000) {
      probe_second_start_ns_ = received_ns;
      probes_this_second_ = 0;
    }
    if (++probes_this_second_ > kMaxProbesPerSecond) {
      Disconnect("the server sent more than 100 clock probes in a second; disconnected it");
      return true;
    }
    AnswerClockProbe(*sequence, received_ns);
    ++answered;
    if (conn_fd_ < 0) return true;
    if (answered == kProbesPerCall) return false;  // the rest for the next call
  }
  Disconnect(nullptr);
  return true;
}

// The reply goes out at once, ahead of the batch held (whole messages, none of which it
// depends on; but after AppInfo, which opens the stream) and behind whatever the socket
// already holds: its send time is read just before, so the capture's bracket stays
// honest (only wider) whatever waits.
void Sender::AnswerClockProbe(uint32_t sequence, int64_t received_ns) {
  std::lock_guard lock(main_mutex_);
  const size_t held = out_.size();
  protocol::AppendMessage(out_, protocol::ClockReply{.sequence = sequence,
                                                     .receive_ns = uint64_t(received_ns),
                                                     .send_ns = uint64_t(ReadClockNs(CLOCK_MONOTONIC_RAW))});
  if (main_sent_ > 0) std::rotate(out_.begin(), out_.begin() + static_cast<ptrdiff_t>(held), out_.end());
  Flush();
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
