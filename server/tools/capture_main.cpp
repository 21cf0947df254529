// gnomon-capture: records a running program's profile to a .gnomon trace file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "capture_listen.h"
#include "capture_summary.h"
#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/running_programs.h"
#include "gnomon/server/text.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/trace_writer.h"

namespace {

using gnomon::server::Worker;
using gnomon::tracefile::TraceWriter;
using namespace gnomon::capture;  // exit codes, progress and summary

constexpr const char* kUsageFormat =
    R"(Usage: gnomon-capture -o FILE [-a HOST[:PORT]]... [-p PORT | --pid PID] [-s SECONDS] [-f]
                      [-w SECONDS] [-l LEVEL] [-j THREADS] [--lanes N] [-q]
       gnomon-capture -o FILE --listen [ADDR:]PORT [-s SECONDS] [-f] [-l LEVEL] [-j THREADS] [-q]
       gnomon-capture -o FILE [-f] [-l LEVEL] [-j THREADS] [-q] -- PROGRAM [ARGS...]
       gnomon-capture --list [--lan]

Connects to one or more programs profiled with Gnomon and records their events to one
trace file, until every program exits, the time limit passes, or Ctrl-C (or SIGTERM,
SIGHUP). Each program is a process of the trace, its clock measured against the
capture's (docs/internals.md, "Host clocks").

  -o FILE      trace file to write (.gnomon)
  -a HOST[:PORT]
               a program's address (default 127.0.0.1; [IPv6]:PORT); repeat -a to
               capture several programs at once
  -p PORT      the port of an -a without one (default %u, or $GNOMON_PORT)
  --listen [ADDR:]PORT
               the other way round: wait for programs to connect to this capture
               (started with GNOMON_COLLECTOR=HOST:PORT), as many as come and go,
               until Ctrl-C or -s; on 127.0.0.1 unless ADDR says otherwise (0.0.0.0:
               every interface); PORT 0 picks a free one, printed
  -- PROGRAM [ARGS...]
               start PROGRAM and record it from its first event: it connects to the
               capture before it records anything (GNOMON_COLLECTOR and
               GNOMON_START_WAIT_MS are set for it), so nothing of its start is
               lost; the capture ends when the program has, and exits with the
               program's exit code (128+N when signal N ended it) unless the capture
               failed (2, 3, 5, 6 below; 127: PROGRAM could not be started). A
               signal sent to the capture is passed on to it (the terminal's Ctrl-C
               reaches it directly), and a second one ends the capture. Its
               GNOMON_OUTPUT and GNOMON_ON_DEMAND are set aside: every event comes
               here
  --pid PID    the program with this process id, found among those --list shows
               (waiting for it to announce itself as long as -w says)
  --list       list the programs that can be connected to: those running on this
               machine, and with --lan also those announcing themselves on the LAN
               (started with GNOMON_ANNOUNCE=lan; listens 1.5 s on UDP port %u)
  -s SECONDS   stop after this many seconds of capture
  -f           replace FILE if it is an existing trace (never another file, a link, a
               device or a folder). FILE is written beside it and moved into place once
               the program answers: a failed connection leaves FILE as it was
  -w SECONDS   keep retrying the connection this long (default 10)
  -l LEVEL     zstd level of the file, -7 (fastest, largest) to 19 (smallest, slowest;
               default 3, and 1 while the machine is short of cores: the capture then
               takes less of them from the programs it records)
  -j THREADS   threads that compress the file, 1 to 64 (default: half the cores the
               capture may run on, at most 8); a busy program on a big machine needs
               several
  --lanes N    connections besides the first that carry each program's threads'
               events, 0 to 8 (default: 0 below 16 cores, else one for every 4, at
               most 4): one connection carries about 100 M zones a second. Not with
               --listen
  -q           no progress line
  -h, --help   this text

Exit codes:
  0  capture complete (program ended, time limit reached, or Ctrl-C)
  1  bad command line
  2  could not connect, or the handshake failed (with several programs: one of them;
     the others are captured, and FILE is written if any answered)
  3  the trace file could not be created or written
  4  the connection was lost before the program ended (the file keeps all received)
  5  the program sent a malformed stream (the file keeps all before the fault)
  6  capture complete, but the program dropped events: its buffer was full (see
     GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB); the summary and the file say how many
  7  FILE exists and was left as it is: -f was not given, or it is not a trace (-f
     replaces only a trace), or it is a link, a folder or a special file
)";

// The usage text, with the default port filled in.
const char* Usage() {
  static char text[8192];
  if (text[0] == 0) {
    std::snprintf(text, sizeof(text), kUsageFormat, unsigned{gnomon::protocol::kDefaultPort},
                  unsigned{gnomon::protocol::kAnnouncePort});
  }
  return text;
}

// The programs of one capture, at most kMaxPrograms of them.
constexpr size_t kMaxPrograms = 1024;
volatile std::sig_atomic_t g_interrupted = 0;
Worker* g_workers[kMaxPrograms] = {};
void OnSignal(int) {
  g_interrupted = 1;
  for (Worker* worker : g_workers) {
    if (worker != nullptr) worker->RequestStop();  // a lock-free atomic store: safe here
  }
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
  gnomon::tracefile::TraceWriterOptions writer_options{.short_of_cores_level =
                                                           gnomon::tracefile::kShortOfCoresLevel};
  bool quiet = false;
  bool list = false;
  bool lan = false;
  std::optional<uint32_t> pid;
  std::optional<uint32_t> lanes_asked;
  std::vector<std::string> addresses;
  std::optional<std::string> listen;
  std::vector<std::string> command;  // after --: the program to start
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      command.assign(argv + i + 1, argv + argc);
      if (command.empty()) {
        std::fprintf(stderr, "gnomon-capture: -- needs the program to start, and its arguments\n\n%s",
                     Usage());
        return kExitUsage;
      }
      break;
    }
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
      addresses.push_back(value());
    } else if (arg == "--listen") {
      listen = value();
      if (listen->empty()) {
        std::fprintf(stderr, "gnomon-capture: --listen needs [ADDR:]PORT (0 picks a free port)\n");
        return kExitUsage;
      }
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
      const auto level = gnomon::tracefile::ParseCompressionLevel(text);
      if (!level) {
        std::fprintf(stderr, "gnomon-capture: -l wants a zstd level from %d to %d, not '%s'\n",
                     gnomon::tracefile::kMinCompressionLevel, gnomon::tracefile::kMaxCompressionLevel, text);
        return kExitUsage;
      }
      writer_options.compression_level = *level;
      writer_options.short_of_cores_level.reset();  // the level asked for, however busy
    } else if (arg == "-j") {
      const auto threads = gnomon::protocol::ParseUnsigned(value(), 1, 64);
      if (!threads) {
        std::fprintf(stderr, "gnomon-capture: -j: %s\n", threads.error.c_str());
        return kExitUsage;
      }
      writer_options.compress_threads = unsigned(*threads);
    } else if (arg == "--lanes") {
      const auto lanes = gnomon::protocol::ParseUnsigned(value(), 0, gnomon::protocol::kMaxLanes);
      if (!lanes) {
        std::fprintf(stderr, "gnomon-capture: --lanes: %s\n", lanes.error.c_str());
        return kExitUsage;
      }
      lanes_asked = uint32_t(*lanes);
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
  if (!command.empty() && (listen || pid || !addresses.empty() || lanes_asked)) {
    std::fprintf(stderr,
                 "gnomon-capture: -- starts the program and records it; leave out -a, --pid, --listen and "
                 "--lanes\n");
    return kExitUsage;
  }
  if (listen && (pid || !addresses.empty())) {
    std::fprintf(stderr, "gnomon-capture: --listen waits for programs to connect; leave out -a and --pid\n");
    return kExitUsage;
  }
  if (pid && !addresses.empty()) {
    std::fprintf(stderr, "gnomon-capture: --pid finds the program's address; leave out -a\n");
    return kExitUsage;
  }
  if (addresses.size() > kMaxPrograms) {
    std::fprintf(stderr, "gnomon-capture: at most %zu programs in one capture (-a given %zu times)\n",
                 kMaxPrograms, addresses.size());
    return kExitUsage;
  }
  std::vector<gnomon::protocol::HostPort> targets;
  for (const std::string& address : addresses) {
    const auto parsed = gnomon::protocol::ParseHostPort(address, options.port);
    if (!parsed) {
      std::fprintf(stderr, "gnomon-capture: -a: %s\n", parsed.error.c_str());
      return kExitUsage;
    }
    targets.push_back(*parsed);
  }
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
  if (targets.empty()) targets.push_back({options.host, options.port});
  if (lanes_asked && listen && *lanes_asked > 0) {
    std::fprintf(stderr,
                 "gnomon-capture: --lanes needs the capture to connect to the program, not --listen\n");
    return kExitUsage;
  }
  options.lanes = lanes_asked ? *lanes_asked : gnomon::server::DefaultLanes(false);
  if (output.empty()) {
    std::fprintf(stderr, "gnomon-capture: say where to write the trace with -o FILE\n\n%s", Usage());
    return kExitUsage;
  }

  // Nothing at the output path is touched until a program has answered: the trace is
  // written beside it and moved into place then.
  const auto overwrite_policy =
      overwrite ? gnomon::tracefile::Overwrite::kYes : gnomon::tracefile::Overwrite::kNo;
  if (gnomon::server::Status s = gnomon::tracefile::CheckOutputPath(output, overwrite_policy); !s.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
    return OutputFailure(output, overwrite_policy);
  }
  auto writer = TraceWriter::Create(output, writer_options);
  if (!writer.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", writer.status().message().c_str());
    return kExitFile;
  }
  if (listen || !command.empty()) {
    return ListenCapture({.listen = listen.value_or("127.0.0.1:0"),
                          .output = output,
                          .overwrite = overwrite_policy,
                          .worker = options,
                          .limit = limit,
                          .quiet = quiet,
                          .command = command},
                         *writer.value());
  }
  // One worker and one stream of the file per program, in the order given.
  std::vector<std::unique_ptr<Worker>> workers;
  for (size_t i = 0; i < targets.size(); ++i) {
    Worker::Options program = options;
    program.host = targets[i].host;
    program.port = targets[i].port;
    program.writer = i == 0 ? &writer.value()->first_stream() : &writer.value()->AddStream();
    workers.push_back(std::make_unique<Worker>(program));
    g_workers[i] = workers.back().get();
  }
  auto where = [&](size_t i) {
    const std::string& host = targets[i].host;
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(targets[i].port);
  };
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGHUP, OnSignal);  // a closed terminal ends the capture as Ctrl-C does
  // A program not yet listening is retried: after a second, say for what and how long.
  std::mutex connect_mutex;
  std::condition_variable connect_done;
  size_t connecting = workers.size();
  std::thread waiting_note([&] {
    std::unique_lock lock(connect_mutex);
    if (quiet || connect_done.wait_for(lock, std::chrono::seconds(1), [&] { return connecting == 0; }))
      return;
    const std::string who = workers.size() > 1 ? std::to_string(connecting) + " of " +
                                                     std::to_string(workers.size()) + " programs to answer"
                                               : "a program to answer on " + where(0);
    std::fprintf(stderr,
                 "gnomon-capture: waiting for %s (retrying for up to %.0f s; is it running, profiled with "
                 "Gnomon, on this port? gnomon-capture --list shows those running here)\n",
                 who.c_str(), std::chrono::duration<double>(options.connect_timeout).count());
  });
  // All connect at once: a program still starting does not hold up the others.
  std::vector<gnomon::server::Status> connected(workers.size(), gnomon::server::Status::Ok());
  {
    std::vector<std::thread> connectors;
    for (size_t i = 0; i < workers.size(); ++i) {
      connectors.emplace_back([&, i] {
        connected[i] = workers[i]->Connect();
        std::lock_guard lock(connect_mutex);
        if (--connecting == 0) connect_done.notify_one();
      });
    }
    for (std::thread& t : connectors) t.join();
  }
  waiting_note.join();
  size_t answered = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (connected[i].ok()) {
      ++answered;
    } else if (workers.size() > 1) {
      std::fprintf(stderr, "gnomon-capture: %s: %s\n", where(i).c_str(), connected[i].message().c_str());
    }
  }
  if (answered == 0) {
    std::fprintf(stderr, "gnomon-capture: %s; %s was not touched\n",
                 workers.size() > 1 ? "no program answered" : connected[0].message().c_str(), output.c_str());
    return kExitConnect;  // the writer removes its file
  }
  if (gnomon::server::Status s = writer.value()->Publish(overwrite_policy); !s.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
    return OutputFailure(output, overwrite_policy);
  }
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < workers.size(); ++i) {
    if (connected[i].ok()) workers[i]->Start();
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto next_progress = start;
  std::vector<bool> announced(workers.size(), false);
  while (true) {
    size_t receiving = 0;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (connected[i].ok() && !workers[i]->is_finished()) ++receiving;
    }
    if (receiving == 0) break;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (connected[i].ok() && !workers[i]->is_finished()) {
        workers[i]->WaitFinished(std::chrono::milliseconds(50));  // at once when the stream ends
        break;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (g_interrupted || (limit.count() > 0 && now - start >= limit)) {
      for (auto& worker : workers) worker->RequestStop();
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      if (announced[i] || quiet || workers[i]->program_name().empty()) continue;
      std::fprintf(stderr, "gnomon-capture: capturing '%s' from %s to %s\n",
                   gnomon::server::Printable(workers[i]->program_name()).c_str(), where(i).c_str(),
                   output.c_str());
      announced[i] = true;
    }
    if (!quiet && std::chrono::steady_clock::now() >= next_progress) {
      Totals totals;
      for (const auto& worker : workers) totals.Add(*worker);
      PrintProgress(totals, receiving, answered, *writer.value(), elapsed, tty, false);
      next_progress += tty ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    }
  }
  std::vector<ProgramResult> results;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (connected[i].ok()) workers[i]->Join();
    results.push_back(ProgramResult::Of(*workers[i], where(i), connected[i]));
  }
  return EndCapture(results, *writer.value(), output, start, quiet, tty);
}
