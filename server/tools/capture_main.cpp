// gnomon-capture: records a running program's profile to a .gnomon trace file.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gnomon/protocol/settings.h"
#include "gnomon/server/discovery.h"
#include "gnomon/server/text.h"
#include "gnomon/server/trace_file.h"
#include "gnomon/server/worker.h"

namespace {

using gnomon::server::TraceWriter;
using gnomon::server::Worker;

enum ExitCode {
  kExitOk = 0,
  kExitUsage = 1,
  kExitConnect = 2,
  kExitFile = 3,
  kExitConnectionLost = 4,
  kExitMalformed = 5,
  kExitDropped = 6,
};

constexpr const char* kUsageFormat =
    R"(Usage: gnomon-capture -o FILE [-a ADDRESS] [-p PORT | --pid PID] [-s SECONDS] [-f] [-w SECONDS]
                      [-l LEVEL] [-q]
       gnomon-capture --list [--lan]

Connects to a program profiled with Gnomon and records its events to a trace file,
until the program exits, the time limit passes, or Ctrl-C (or SIGTERM, SIGHUP).

  -o FILE      trace file to write (.gnomon)
  -a ADDRESS   the program's address (default 127.0.0.1)
  -p PORT      the program's port (default %u, or $GNOMON_PORT)
  --pid PID    the program with this process id, found among those --list shows
               (waiting for it to announce itself as long as -w says)
  --list       list the programs that can be connected to: those running on this
               machine, and with --lan also those announcing themselves on the LAN
               (started with GNOMON_ANNOUNCE=lan; listens 1.5 s on UDP port %u)
  -s SECONDS   stop after this many seconds of capture
  -f           replace FILE if it is an existing trace (a regular file; never a link,
               device or folder). FILE is written beside it and moved into place once
               the program answers: a failed connection leaves FILE as it was
  -w SECONDS   keep retrying the connection this long (default 10)
  -l LEVEL     zstd level of the file, -7 (fastest, largest) to 19 (smallest, slowest;
               default 3)
  -q           no progress line
  -h, --help   this text

Exit codes:
  0  capture complete (program ended, time limit reached, or Ctrl-C)
  1  bad command line
  2  could not connect, or the handshake failed
  3  the trace file could not be created or written
  4  the connection was lost before the program ended (the file keeps all received)
  5  the program sent a malformed stream (the file keeps all before the fault)
  6  capture complete, but the program dropped events: its buffer was full (see
     GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB); the summary and the file say how many
)";

// The usage text, with the default port filled in.
const char* Usage() {
  static char text[4096];
  if (text[0] == 0) {
    std::snprintf(text, sizeof(text), kUsageFormat, unsigned{gnomon::protocol::kDefaultPort},
                  unsigned{gnomon::protocol::kAnnouncePort});
  }
  return text;
}

volatile std::sig_atomic_t g_interrupted = 0;
Worker* g_worker = nullptr;
void OnSignal(int) {
  g_interrupted = 1;
  if (g_worker != nullptr) g_worker->RequestStop();  // a lock-free atomic store: safe here
}

void PrintProgress(const Worker& worker, const TraceWriter& writer, double elapsed_s, bool tty, bool final) {
  static uint64_t last_messages = 0;
  static double last_elapsed = 0;
  const uint64_t messages = worker.messages_received();
  const double rate =
      elapsed_s > last_elapsed ? double(messages - last_messages) / (elapsed_s - last_elapsed) : 0;
  last_messages = messages;
  last_elapsed = elapsed_s;
  std::fprintf(stderr, "%s%8.1f s  %12llu zones  %12llu events  %9.2f M events/s  %9.2f MB written%s",
               tty ? "\r" : "", elapsed_s, static_cast<unsigned long long>(worker.zones_received()),
               static_cast<unsigned long long>(messages), rate / 1e6, double(writer.file_bytes()) / 1e6,
               tty && !final ? "" : "\n");
  std::fflush(stderr);
}

// The programs that can be connected to: this machine's, and with `lan` the LAN's.
std::vector<gnomon::server::RunningProgram> FindPrograms(bool lan, std::string* problem = nullptr) {
  std::vector<gnomon::server::RunningProgram> programs = gnomon::server::ListLocalPrograms(problem);
  if (!lan) return programs;
  gnomon::server::AnnouncementListener listener;
  if (!listener.error().empty()) {
    std::fprintf(stderr, "gnomon-capture: %s; listing this machine's programs only\n",
                 listener.error().c_str());
    return programs;
  }
  listener.Poll(std::chrono::milliseconds(1500));
  return gnomon::server::MergePrograms(std::move(programs), listener.programs());
}

int ListPrograms(bool lan) {
  std::string problem;
  const auto programs = FindPrograms(lan, &problem);
  if (!problem.empty()) std::fprintf(stderr, "gnomon-capture: %s\n", problem.c_str());
  for (const auto& program : programs) std::printf("%s\n", gnomon::server::DescribeProgram(program).c_str());
  if (programs.empty()) {
    std::fprintf(stderr,
                 "gnomon-capture: no profiled program is running%s (a program announces itself while "
                 "it runs, unless started with GNOMON_ANNOUNCE=off)\n",
                 lan ? " here or on the LAN" : " here; --lan also asks the LAN");
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Worker::Options options;
  options.build_model = false;
  options.connect_timeout = std::chrono::seconds(10);
  if (const char* port = std::getenv("GNOMON_PORT"); port != nullptr && *port != '\0') {
    const auto parsed = gnomon::protocol::ParsePort(port, gnomon::protocol::PortZero::kRefused);
    if (!parsed) {
      std::fprintf(stderr, "gnomon-capture: GNOMON_PORT: %s; unset it or pass -p PORT\n",
                   parsed.error.c_str());
      return kExitUsage;
    }
    options.port = *parsed;
  }
  std::string output;
  std::chrono::nanoseconds limit{0};
  bool overwrite = false;
  gnomon::server::TraceWriterOptions writer_options;
  bool quiet = false;
  bool list = false;
  bool lan = false;
  std::optional<uint32_t> pid;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gnomon-capture: %s needs a value\n\n%s", arg.c_str(), Usage());
        std::exit(kExitUsage);
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(Usage(), stdout);
      return kExitOk;
    } else if (arg == "-o") {
      output = value();
    } else if (arg == "-a") {
      options.host = value();
    } else if (arg == "-p") {
      const auto port = gnomon::protocol::ParsePort(value(), gnomon::protocol::PortZero::kRefused);
      if (!port) {
        std::fprintf(stderr, "gnomon-capture: -p: %s\n", port.error.c_str());
        return kExitUsage;
      }
      options.port = *port;
    } else if (arg == "-s" || arg == "-w") {
      const auto seconds = gnomon::protocol::ParseSeconds(value());
      if (!seconds) {
        std::fprintf(stderr, "gnomon-capture: %s: %s\n", arg.c_str(), seconds.error.c_str());
        return kExitUsage;
      }
      if (arg == "-s") {
        limit = *seconds;
      } else {
        options.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*seconds);
      }
    } else if (arg == "-l") {
      const char* text = value();
      char* end = nullptr;
      const long level = std::strtol(text, &end, 10);
      if (*end != '\0' || level < -7 || level > 19) {
        std::fprintf(stderr, "gnomon-capture: -l wants a zstd level from -7 to 19, not '%s'\n", text);
        return kExitUsage;
      }
      writer_options.compression_level = int(level);
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--lan") {
      lan = true;
    } else if (arg == "--pid") {
      const auto parsed = gnomon::protocol::ParseUnsigned(value(), 1, INT32_MAX);
      if (!parsed) {
        std::fprintf(stderr, "gnomon-capture: --pid: %s\n", parsed.error.c_str());
        return kExitUsage;
      }
      pid = uint32_t(*parsed);
    } else if (arg == "-f") {
      overwrite = true;
    } else if (arg == "-q") {
      quiet = true;
    } else {
      std::fprintf(stderr, "gnomon-capture: unknown argument '%s'\n\n%s", arg.c_str(), Usage());
      return kExitUsage;
    }
  }
  if (list) return ListPrograms(lan);
  if (pid) {
    // A program just started may not have announced itself yet: look again, as long as a
    // refused connection would be retried.
    const auto give_up = std::chrono::steady_clock::now() + options.connect_timeout;
    std::vector<gnomon::server::RunningProgram> programs;
    std::string problem;
    auto matches = [&](const auto& p) { return p.announcement.pid == *pid; };
    auto found = programs.end();
    while (true) {
      programs = FindPrograms(lan, &problem);
      found = std::find_if(programs.begin(), programs.end(), matches);
      // A pid that is no process here ends the wait at once (unless it may be the LAN's).
      const bool gone = !lan && kill(pid_t(*pid), 0) != 0 && errno == ESRCH;
      if (found != programs.end() || gone || std::chrono::steady_clock::now() >= give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (found == programs.end()) {
      if (!problem.empty()) std::fprintf(stderr, "gnomon-capture: %s\n", problem.c_str());
      if (!lan && kill(pid_t(*pid), 0) == 0) {
        std::fprintf(
            stderr,
            "gnomon-capture: pid %u is running but has not announced itself in %s (not profiled, "
            "started with GNOMON_ANNOUNCE=off, or with another XDG_RUNTIME_DIR); connect with -p PORT\n",
            unsigned{*pid}, gnomon::protocol::AnnounceDirectory().c_str());
      } else {
        std::fprintf(
            stderr,
            "gnomon-capture: no profiled program with pid %u is running%s; see gnomon-capture --list\n",
            unsigned{*pid}, lan ? " here or on the LAN" : " here");
      }
      return kExitConnect;
    }
    if (std::count_if(programs.begin(), programs.end(), matches) > 1) {  // pids are per machine
      std::fprintf(stderr, "gnomon-capture: more than one program has pid %u:\n", unsigned{*pid});
      for (const auto& p : programs) {
        if (matches(p)) std::fprintf(stderr, "  %s\n", gnomon::server::DescribeProgram(p).c_str());
      }
      std::fprintf(stderr, "gnomon-capture: choose one with -a ADDRESS -p PORT\n");
      return kExitUsage;
    }
    const std::string& address = found->connect_address;
    const size_t colon = address.rfind(':');
    options.host = address.substr(0, colon);
    if (options.host.starts_with('[')) options.host = options.host.substr(1, options.host.size() - 2);
    options.port = found->announcement.port;
  }
  if (output.empty()) {
    std::fprintf(stderr, "gnomon-capture: say where to write the trace with -o FILE\n\n%s", Usage());
    return kExitUsage;
  }

  // Nothing at the output path is touched until a program has answered: the trace is
  // written beside it and moved into place then.
  const auto overwrite_policy = overwrite ? gnomon::server::Overwrite::kYes : gnomon::server::Overwrite::kNo;
  if (gnomon::server::Status s = gnomon::server::CheckOutputPath(output, overwrite_policy); !s.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
    return kExitFile;
  }
  auto writer = TraceWriter::Create(output, writer_options);
  if (!writer.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", writer.status().message().c_str());
    return kExitFile;
  }
  options.writer = writer.value().get();
  Worker worker(options);
  g_worker = &worker;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGHUP, OnSignal);  // a closed terminal ends the capture as Ctrl-C does
  // A program not yet listening is retried: after a second, say for what and how long.
  std::mutex connect_mutex;
  std::condition_variable connect_done;
  bool connected = false;
  std::thread waiting_note([&] {
    std::unique_lock lock(connect_mutex);
    if (quiet || connect_done.wait_for(lock, std::chrono::seconds(1), [&] { return connected; })) return;
    std::fprintf(stderr,
                 "gnomon-capture: waiting for a program to answer on %s:%u (retrying for up to %.0f s; "
                 "is it running, profiled with Gnomon, on this port? gnomon-capture --list shows those "
                 "running here)\n",
                 options.host.c_str(), unsigned{options.port},
                 std::chrono::duration<double>(options.connect_timeout).count());
  });
  const gnomon::server::Status connect_status = worker.Connect();
  {
    std::lock_guard lock(connect_mutex);
    connected = true;
  }
  connect_done.notify_one();
  waiting_note.join();
  if (!connect_status.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s; %s was not touched\n", connect_status.message().c_str(),
                 output.c_str());
    return kExitConnect;  // the writer removes its file
  }
  if (gnomon::server::Status s = writer.value()->Publish(overwrite_policy); !s.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
    return kExitFile;
  }
  const auto start = std::chrono::steady_clock::now();
  worker.Start();
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto next_progress = start;
  bool announced = false;
  while (!worker.is_finished()) {
    worker.WaitFinished(std::chrono::milliseconds(50));  // returns at once when the stream ends
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (g_interrupted || (limit.count() > 0 && now - start >= limit)) worker.RequestStop();
    if (!announced && !quiet && !worker.program_name().empty()) {
      std::fprintf(stderr, "gnomon-capture: capturing '%s' from %s:%u to %s\n",
                   gnomon::server::Printable(worker.program_name()).c_str(), options.host.c_str(),
                   unsigned{options.port}, output.c_str());
      announced = true;
    }
    if (!quiet && std::chrono::steady_clock::now() >= next_progress) {
      PrintProgress(worker, *writer.value(), elapsed, tty, false);
      next_progress += tty ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    }
  }
  worker.Join();
  const gnomon::server::Status written = writer.value()->Finish();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!quiet) PrintProgress(worker, *writer.value(), elapsed, tty, true);
  const uint64_t zones = worker.zones_received();
  const uint64_t file_bytes = writer.value()->file_bytes();
  std::fprintf(stderr,
               "gnomon-capture: %llu zones, %llu events, %.2f MB received in %.1f s -> %s (%.2f MB, %.2f "
               "bytes/zone)\n",
               static_cast<unsigned long long>(zones),
               static_cast<unsigned long long>(worker.messages_received()),
               double(worker.bytes_received()) / 1e6, elapsed, output.c_str(), double(file_bytes) / 1e6,
               zones ? double(file_bytes) / double(zones) : 0.0);
  const uint64_t dropped = worker.program_dropped();
  if (dropped > 0) {
    std::fprintf(stderr,
                 "gnomon-capture: the program dropped %llu event(s): its event buffer was full (its "
                 "GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB decide when; the program's stderr says which)\n",
                 static_cast<unsigned long long>(dropped));
  }
  if (!written.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", written.message().c_str());
    return kExitFile;
  }
  switch (worker.state()) {
    case Worker::State::kFailed:
      std::fprintf(stderr, "gnomon-capture: %s\n", worker.error().c_str());
      return kExitMalformed;
    case Worker::State::kDisconnected:
      std::fprintf(stderr, "gnomon-capture: %s; the file keeps everything received\n",
                   worker.error().c_str());
      return kExitConnectionLost;
    default:
      return dropped > 0 ? kExitDropped : kExitOk;
  }
}
