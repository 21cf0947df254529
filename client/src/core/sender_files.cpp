// The sender (sender.h), its files: the program's own trace file (GNOMON_OUTPUT) and
// saves of the recording (SaveRecording, the save signal).
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
namespace {

// Set by the save signal's handler (all it may do), taken by the sender's loop.
constinit std::atomic<bool> g_save_signalled{false};
void OnSaveSignal(int) { g_save_signalled.store(true, std::memory_order_relaxed); }

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

}  // namespace

void Sender::InstallSaveSignal(int number) {
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

}  // namespace gnomon::client
