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

#include "gnomon/protocol/handshake.h"
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
    R"(Usage: gnomon-capture -o FILE [-a HOST[:PORT]]... [-p PORT | --pid PID] [-s SECONDS] [-f]
                      [-w SECONDS] [-l LEVEL] [-j THREADS] [--lanes N] [-q]
       gnomon-capture -o FILE --listen [ADDR:]PORT [-s SECONDS] [-f] [-l LEVEL] [-j THREADS] [-q]
       gnomon-capture --list [--lan]

Connects to one or more programs profiled with Gnomon and records their events to one
trace file, until every program exits, the time limit passes, or Ctrl-C (or SIGTERM,
SIGHUP). Each program is a process of the trace, its clock measured against the
capture's (docs/architecture.md, "Host clocks").

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

// What every worker received so far.
struct Totals {
  uint64_t zones = 0, messages = 0, bytes = 0, dropped = 0;
};
Totals Sum(const std::vector<std::unique_ptr<Worker>>& workers) {
  Totals t;
  for (const auto& worker : workers) {
    t.zones += worker->zones_received();
    t.messages += worker->messages_received();
    t.bytes += worker->bytes_received();
    t.dropped += worker->program_dropped();
  }
  return t;
}

// What the capture holds in memory now (its resident set), 0 when unknown.
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

// The most the capture held in memory so far (its peak resident set).
uint64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return uint64_t(usage.ru_maxrss) * 1024;
}

// The columns of the terminal stderr writes to (80 when it does not say).
size_t TerminalColumns() {
  winsize size{};
  return ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
}

void PrintProgress(const Totals& totals, size_t receiving, size_t programs, const TraceWriter& writer,
                   double elapsed_s, bool tty, bool final) {
  static uint64_t last_messages = 0;
  static double last_elapsed = 0;
  const uint64_t messages = totals.messages;
  const double rate =
      elapsed_s > last_elapsed ? double(messages - last_messages) / (elapsed_s - last_elapsed) : 0;
  last_messages = messages;
  last_elapsed = elapsed_s;
  // The fields by importance. On a terminal, as many as fit in its width: a line that
  // wraps cannot be redrawn in place. What the last line left beyond is erased.
  char fields[6][64] = {};
  std::snprintf(fields[0], sizeof(fields[0]), "%6.1f s", elapsed_s);
  std::snprintf(fields[1], sizeof(fields[1]), "%llu zones", static_cast<unsigned long long>(totals.zones));
  std::snprintf(fields[2], sizeof(fields[2]), "%.2f M events/s", rate / 1e6);
  std::snprintf(fields[3], sizeof(fields[3]), "%.2f MB written", double(writer.file_bytes()) / 1e6);
  std::snprintf(fields[4], sizeof(fields[4]), "%.0f MB in memory", double(ResidentBytes()) / 1e6);
  if (programs > 1) std::snprintf(fields[5], sizeof(fields[5]), "%zu of %zu programs", receiving, programs);
  const size_t width = tty ? std::max<size_t>(TerminalColumns(), 20) - 1 : SIZE_MAX;
  std::string line;
  for (const char* field : fields) {
    if (field[0] == '\0') continue;
    const std::string longer = line.empty() ? std::string(field) : line + "  " + field;
    if (longer.size() > width) break;
    line = longer;
  }
  std::fprintf(stderr, "%s%s%s%s", tty ? "\r" : "", line.c_str(), tty ? "\x1b[K" : "",
               tty && !final ? "" : "\n");
  std::fflush(stderr);
}

// How a program's capture ended, as the exit code says it.
int ExitCodeOf(const Worker& worker) {
  switch (worker.state()) {
    case Worker::State::kFailed:
      return kExitMalformed;
    case Worker::State::kDisconnected:
      return kExitConnectionLost;
    default:
      return kExitOk;
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

// Waits for every program's worker, finishes the file, sums up and returns the exit
// code: the worst ending among the programs (a malformed stream, a lost connection, one
// that never answered), then dropped events. `connected`: each worker's handshake.
int EndCapture(std::vector<std::unique_ptr<Worker>>& workers,
               const std::vector<gnomon::server::Status>& connected, const std::vector<std::string>& where,
               TraceWriter& writer, const std::string& output, std::chrono::steady_clock::time_point start,
               bool quiet, bool tty) {
  size_t answered = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!connected[i].ok()) continue;
    workers[i]->Join();
    ++answered;
  }
  const gnomon::server::Status written = writer.Finish();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Totals totals = Sum(workers);
  if (!quiet) PrintProgress(totals, 0, answered, writer, elapsed, tty, true);
  const uint64_t file_bytes = writer.file_bytes();
  std::fprintf(
      stderr,
      "gnomon-capture: %llu zones, %llu events, %.2f MB received in %.1f s -> %s (%.2f MB, %.2f "
      "bytes/zone); at most %.0f MB in memory\n",
      static_cast<unsigned long long>(totals.zones), static_cast<unsigned long long>(totals.messages),
      double(totals.bytes) / 1e6, elapsed, output.c_str(), double(file_bytes) / 1e6,
      totals.zones ? double(file_bytes) / double(totals.zones) : 0.0, double(PeakResidentBytes()) / 1e6);
  if (const uint64_t cheaper = writer.blocks_short_of_cores(); cheaper > 0) {
    std::fprintf(stderr,
                 "gnomon-capture: %llu of the %llu blocks were compressed at zstd level %d: the cores were "
                 "short (-l sets one level)\n",
                 static_cast<unsigned long long>(cheaper),
                 static_cast<unsigned long long>(writer.blocks_compressed()),
                 gnomon::server::kShortOfCoresLevel);
  }
  for (const std::unique_ptr<Worker>& worker : workers) {
    if (worker->lanes() == 0) continue;
    std::fprintf(
        stderr,
        "gnomon-capture: %s: its threads' events came over %u more connections (--lanes): %.2f MB of "
        "the %.2f MB\n",
        worker->program_name().c_str(), worker->lanes(), double(worker->lane_bytes_received()) / 1e6,
        double(worker->bytes_received()) / 1e6);
  }
  if (totals.dropped > 0) {
    std::fprintf(stderr,
                 "gnomon-capture: %s dropped %llu event(s): %s event buffer was full (its "
                 "GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB decide when; the program's stderr says which)\n",
                 workers.size() > 1 ? "the programs" : "the program",
                 static_cast<unsigned long long>(totals.dropped), workers.size() > 1 ? "an" : "its");
  }
  if (!written.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", written.message().c_str());
    return kExitFile;
  }
  int code = totals.dropped > 0 ? kExitDropped : kExitOk;
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string prefix = workers.size() > 1 ? where[i] + ": " : "";
    if (!connected[i].ok()) {
      code = std::max<int>(code == kExitDropped ? kExitOk : code, kExitConnect);
      continue;
    }
    const int ended = ExitCodeOf(*workers[i]);
    if (ended == kExitMalformed)
      std::fprintf(stderr, "gnomon-capture: %s%s\n", prefix.c_str(), workers[i]->error().c_str());
    if (ended == kExitConnectionLost) {
      std::fprintf(stderr, "gnomon-capture: %s%s; the file keeps everything received\n", prefix.c_str(),
                   workers[i]->error().c_str());
    }
    if (ended != kExitOk) code = std::max<int>(code == kExitDropped ? kExitOk : code, ended);
  }
  return code;
}

// The address --listen takes: PORT (on 127.0.0.1) or ADDR:PORT ([V6]:PORT); 0 picks a port.
std::optional<sockaddr_storage> ParseListenAddress(const std::string& text, socklen_t& length,
                                                   std::string& error) {
  std::string host = "127.0.0.1";
  std::string port_text = text;
  if (text.find(':') != text.rfind(':') && !text.starts_with('[')) {
    error = "'" + text + "': write an IPv6 address in brackets, [ADDR]:PORT";
    return std::nullopt;
  }
  if (text.find_first_not_of("0123456789") != std::string::npos) {
    const auto parsed = gnomon::protocol::ParseHostPort(text, 0, gnomon::protocol::PortZero::kAllowed);
    const size_t colon = text.rfind(':');
    if (!parsed || colon == std::string::npos || (text.front() == '[' && text[colon - 1] != ']')) {
      error = parsed ? "'" + text + "' has no port: --listen [ADDR:]PORT" : parsed.error;
      return std::nullopt;
    }
    host = parsed->host;
    port_text = text.substr(colon + 1);
  }
  const auto port = gnomon::protocol::ParsePort(port_text, gnomon::protocol::PortZero::kAllowed);
  if (!port) {
    error = port.error;
    return std::nullopt;
  }
  sockaddr_storage address{};
  if (host.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&address);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(*port);
    length = sizeof(*a);
    if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) == 1) return address;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&address);
    a->sin_family = AF_INET;
    a->sin_port = htons(*port);
    length = sizeof(*a);
    if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1) return address;
  }
  error = "'" + host + "' is not a numeric IP address of this machine (e.g. 0.0.0.0 for every interface)";
  return std::nullopt;
}

// "ADDR:PORT" of a socket address.
std::string AddressText(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
  return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
}

// gnomon-capture --listen: takes every program that connects (GNOMON_COLLECTOR), each a
// worker and a stream of the file, until Ctrl-C or the time limit. FILE appears once
// the first program has answered.
int ListenCapture(const std::string& listen, const std::string& output, gnomon::server::Overwrite overwrite,
                  TraceWriter& writer, Worker::Options options, std::chrono::nanoseconds limit, bool quiet) {
  socklen_t length = 0;
  std::string error;
  const auto address = ParseListenAddress(listen, length, error);
  if (!address) {
    std::fprintf(stderr, "gnomon-capture: --listen: %s\n", error.c_str());
    return kExitUsage;
  }
  const int listen_fd = socket(address->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (listen_fd >= 0) setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (listen_fd < 0 || bind(listen_fd, reinterpret_cast<const sockaddr*>(&*address), length) != 0 ||
      ::listen(listen_fd, 64) != 0) {
    std::fprintf(stderr, "gnomon-capture: cannot listen on %s: %s\n", AddressText(*address).c_str(),
                 std::strerror(errno));
    if (listen_fd >= 0) close(listen_fd);
    return kExitConnect;
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  std::fprintf(stderr,
               "gnomon-capture: listening on %s; start programs with GNOMON_COLLECTOR=%s (Ctrl-C ends the "
               "capture)\n",
               AddressText(bound).c_str(), AddressText(bound).c_str());
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGHUP, OnSignal);

  // Each program that connects: its worker, handshaken on a thread of its own so that a
  // silent peer holds up nobody, given a stream of the file once it answered. A peer
  // that does not answer is dropped; a program that ended keeps only its counters.
  struct Arrival {
    std::unique_ptr<Worker> worker;
    std::string where;
    std::thread handshake;
    std::atomic<int> state{0};  // 0: handshaking, 1: answered and receiving, 2: refused
    gnomon::server::Status status = gnomon::server::Status::Ok();
    bool announced = false;
  };
  constexpr size_t kMaxHandshakes = 64;  // at once; more peers wait in the kernel's backlog
  std::list<Arrival> arrivals;           // stable: each handshake thread holds its own
  std::atomic<bool> first_stream_taken{false};
  std::atomic<size_t> streams_taken{0};
  bool published = false, accept_failing = false, progress_shown = false;
  const auto start = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto next_progress = start + std::chrono::seconds(1);
  auto publish = [&] {
    if (published) return true;
    published = true;
    if (gnomon::server::Status s = writer.Publish(overwrite); !s.ok()) {
      std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
      return false;
    }
    return true;
  };
  int code = kExitOk;
  while (!g_interrupted && (limit.count() == 0 || std::chrono::steady_clock::now() - start < limit)) {
    size_t handshaking = 0, active = 0;
    for (const Arrival& a : arrivals) {
      handshaking += a.state.load() == 0;
      active += a.state.load() != 2 && !a.worker->is_finished();
    }
    pollfd pfd{listen_fd, POLLIN, 0};
    const bool room = handshaking < kMaxHandshakes;
    if (poll(&pfd, room ? 1 : 0, 50) > 0 && (pfd.revents & POLLIN) && room) {
      sockaddr_storage peer{};
      socklen_t peer_length = sizeof(peer);
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_CLOEXEC);
      if (fd < 0 && errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        if (!accept_failing) {
          std::fprintf(stderr, "gnomon-capture: cannot take a connection: %s%s\n", std::strerror(errno),
                       errno == EMFILE || errno == ENFILE ? " (raise the limit with ulimit -n)" : "");
        }
        accept_failing = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      } else if (fd >= 0 &&
                 (active >= kMaxPrograms || streams_taken.load() >= gnomon::server::kMaxTraceStreams)) {
        std::fprintf(stderr, "gnomon-capture: %s: refused, %s\n", AddressText(peer).c_str(),
                     active >= kMaxPrograms ? "1024 programs are being captured already"
                                            : "the file holds as many programs as a trace can");
        close(fd);
      } else if (fd >= 0) {
        accept_failing = false;
        Arrival& arrival = arrivals.emplace_back();
        arrival.worker = std::make_unique<Worker>(options);
        arrival.where = AddressText(peer);
        arrival.handshake = std::thread([&arrival, &writer, &first_stream_taken, &streams_taken, fd] {
          arrival.status = arrival.worker->Adopt(fd, arrival.where);
          if (arrival.status.ok()) {
            arrival.worker->SetWriter(first_stream_taken.exchange(true) ? &writer.AddStream()
                                                                        : &writer.first_stream());
            ++streams_taken;
            arrival.worker->Start();
          }
          arrival.state.store(arrival.status.ok() ? 1 : 2);
        });
      }
    }
    size_t receiving = 0, answered = 0;
    for (auto it = arrivals.begin(); it != arrivals.end();) {
      Arrival& a = *it;
      const int state = a.state.load();
      if (state == 2) {  // never answered: said (the message names the peer), and forgotten
        a.handshake.join();
        if (!quiet) std::fprintf(stderr, "gnomon-capture: %s\n", a.status.message().c_str());
        it = arrivals.erase(it);
        continue;
      }
      ++it;
      if (state != 1) continue;
      ++answered;
      if (a.worker->is_finished()) {
        a.worker->Join();  // its thread and its connection: done with
      } else {
        ++receiving;
      }
      if (!publish()) {
        code = kExitFile;
        g_interrupted = 1;
      }
      if (!a.announced && !quiet && !a.worker->program_name().empty()) {
        std::fprintf(stderr, "%sgnomon-capture: capturing '%s' from %s to %s\n", progress_shown ? "\n" : "",
                     gnomon::server::Printable(a.worker->program_name()).c_str(), a.where.c_str(),
                     output.c_str());
        a.announced = true;
      }
    }
    if (!quiet && std::chrono::steady_clock::now() >= next_progress) {
      Totals totals;
      for (const Arrival& a : arrivals) {
        if (a.state.load() != 1) continue;
        totals.zones += a.worker->zones_received();
        totals.messages += a.worker->messages_received();
      }
      progress_shown = tty;
      PrintProgress(totals, receiving, answered, writer,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), tty,
                    false);
      next_progress += tty ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    }
  }
  close(listen_fd);
  // The end: every program still connected is stopped (its stream ends there, cleanly).
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<gnomon::server::Status> connected;
  std::vector<std::string> where;
  for (Arrival& a : arrivals) {
    a.worker->RequestStop();
    a.handshake.join();
    if (a.state.load() != 1) continue;  // stopped before it answered
    workers.push_back(std::move(a.worker));
    connected.push_back(gnomon::server::Status::Ok());
    where.push_back(a.where);
  }
  if (workers.empty()) {
    std::fprintf(stderr, "gnomon-capture: no program connected; %s was not touched\n", output.c_str());
    return kExitConnect;  // the writer removes its file
  }
  if (!publish()) code = kExitFile;  // one answered just as the capture ended
  const int ended = EndCapture(workers, connected, where, writer, output, start, quiet, tty);
  return code == kExitFile ? kExitFile : ended;
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
  gnomon::server::TraceWriterOptions writer_options{.short_of_cores_level =
                                                        gnomon::server::kShortOfCoresLevel};
  bool quiet = false;
  bool list = false;
  bool lan = false;
  std::optional<uint32_t> pid;
  std::optional<uint32_t> lanes_asked;
  std::vector<std::string> addresses;
  std::string listen;
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
      addresses.push_back(value());
    } else if (arg == "--listen") {
      listen = value();
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
      const auto level = gnomon::server::ParseCompressionLevel(text);
      if (!level) {
        std::fprintf(stderr, "gnomon-capture: -l wants a zstd level from %d to %d, not '%s'\n",
                     gnomon::server::kMinCompressionLevel, gnomon::server::kMaxCompressionLevel, text);
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
  if (!listen.empty() && (pid || !addresses.empty())) {
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
  if (lanes_asked && !listen.empty() && *lanes_asked > 0) {
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
  if (!listen.empty())
    return ListenCapture(listen, output, overwrite_policy, *writer.value(), options, limit, quiet);
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
    return kExitFile;
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
      PrintProgress(Sum(workers), receiving, answered, *writer.value(), elapsed, tty, false);
      next_progress += tty ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    }
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < workers.size(); ++i) names.push_back(where(i));
  return EndCapture(workers, connected, names, *writer.value(), output, start, quiet, tty);
}
