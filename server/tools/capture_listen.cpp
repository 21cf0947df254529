#include "capture_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "capture_summary.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/text.h"

extern char** environ;

namespace gnomon::capture {
namespace {

using server::Worker;

constexpr size_t kMaxPrograms = 1024;  // captured at once
// Handshakes waiting at once, and of them from one address. A program on loopback
// answers within milliseconds, so when they are all taken the one waiting longest
// (from the address that holds the most) gives way: a flood of connections that say
// nothing can delay a real program, never lock it out.
constexpr size_t kMaxHandshakes = 256;
constexpr size_t kMaxHandshakesPerAddress = 64;
constexpr int kAcceptsPerLook = 64;
constexpr auto kSilentNoteEvery = std::chrono::seconds(5);

volatile std::sig_atomic_t g_signals = 0;  // SIGINT, SIGTERM or SIGHUP received
volatile pid_t g_started_pid = 0;          // the program this capture started, while it runs
void OnSignal(int number, siginfo_t* info, void*) {
  g_signals = g_signals + 1;
  // A program this capture started ends first: the signal is passed on, unless the
  // terminal sent it (Ctrl-C reaches the program from there too). kill() is safe here.
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  if (g_signals == 1 && g_started_pid > 0 && !from_terminal) kill(g_started_pid, number);
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
    const auto parsed = protocol::ParseHostPort(text, 0, protocol::PortZero::kAllowed);
    const size_t colon = text.rfind(':');
    if (!parsed || colon == std::string::npos || (text.front() == '[' && text[colon - 1] != ']')) {
      error = parsed ? "'" + text + "' has no port: --listen [ADDR:]PORT" : parsed.error;
      return std::nullopt;
    }
    host = parsed->host;
    port_text = text.substr(colon + 1);
  }
  const auto port = protocol::ParsePort(port_text, protocol::PortZero::kAllowed);
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

// The program a capture starts (gnomon-capture -- PROGRAM ARGS...), connected to the
// capture's port before its first event.
class StartedProgram {
 public:
  // Starts `command` with GNOMON_COLLECTOR=`collector` and GNOMON_START_WAIT_MS; the
  // error, or "".
  std::string Start(const std::vector<std::string>& command, const std::string& collector) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      // Its events come here, all of them: not to a file of its own, nor only once asked.
      bool ours = false;
      for (const char* name :
           {"GNOMON_COLLECTOR=", "GNOMON_START_WAIT_MS=", "GNOMON_OUTPUT=", "GNOMON_ON_DEMAND="})
        ours |= entry.starts_with(name);
      if (!ours) env.push_back(entry);
    }
    env.push_back("GNOMON_COLLECTOR=" + collector);
    env.push_back("GNOMON_START_WAIT_MS=10000");
    std::vector<char*> argv, envp;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    for (std::string& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (const int error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
        error != 0) {
      return "cannot start " + command[0] + ": " + std::strerror(error);
    }
    pid_ = pid;
    g_started_pid = pid;
    return "";
  }
  // Reaps it once it has ended; true from then on.
  bool HasEnded() {
    if (pid_ <= 0 || ended_) return ended_ || pid_ <= 0;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    ended_ = true;
    g_started_pid = 0;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  bool is_started() const { return pid_ > 0; }
  int exit_code() const { return exit_code_; }  // as a shell says it: 128 + N for signal N

 private:
  pid_t pid_ = 0;
  bool ended_ = false;
  int exit_code_ = 0;
};

// A program that connected: its worker, handshaken on a thread of its own so that a
// silent peer holds up nobody, given a stream of the file once it answered.
struct Arrival {
  std::unique_ptr<Worker> worker;
  std::string where;   // ADDR:PORT
  std::string source;  // ADDR: the handshakes of one source are limited together
  std::chrono::steady_clock::time_point since;
  std::thread handshake;
  std::atomic<int> state{0};  // 0: handshaking, 1: answered and receiving, 2: refused
  server::Status status = server::Status::Ok();
  bool announced = false;
  bool evicted = false;  // made to give way to newer handshakes
  // Taken once, by whichever comes first: the handshake that answered (it receives) or
  // the eviction (it does not), so a program never answers and is cut off.
  std::atomic<bool> settled{false};
};

// The handshaking arrival that gives way when `source` brings one more: the oldest of
// `source` when it holds its share, else (all slots taken) the oldest of the source
// that holds the most; nullptr when there is room.
Arrival* OneToEvict(std::list<Arrival>& arrivals, const std::string& source) {
  std::map<std::string, size_t> per_source;
  size_t waiting = 0;
  for (const Arrival& a : arrivals) {
    if (a.state.load() != 0 || a.settled.load()) continue;
    ++per_source[a.source];
    ++waiting;
  }
  std::string from;
  if (per_source[source] >= kMaxHandshakesPerAddress) {
    from = source;
  } else if (waiting >= kMaxHandshakes) {
    from = std::max_element(per_source.begin(), per_source.end(), [](const auto& a, const auto& b) {
             return a.second < b.second;
           })->first;
  } else {
    return nullptr;
  }
  Arrival* oldest = nullptr;
  for (Arrival& a : arrivals) {
    if (a.state.load() == 0 && !a.settled.load() && a.source == from &&
        (oldest == nullptr || a.since < oldest->since))
      oldest = &a;
  }
  return oldest;
}

}  // namespace

int ListenCapture(const ListenOptions& options, tracefile::TraceWriter& writer) {
  socklen_t length = 0;
  std::string error;
  const auto address = ParseListenAddress(options.listen, length, error);
  if (!address) {
    std::fprintf(stderr, "gnomon-capture: --listen: %s\n", error.c_str());
    return kExitUsage;
  }
  const int listen_fd = socket(address->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (listen_fd >= 0) setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (listen_fd < 0 || bind(listen_fd, reinterpret_cast<const sockaddr*>(&*address), length) != 0 ||
      ::listen(listen_fd, SOMAXCONN) != 0) {
    std::fprintf(stderr, "gnomon-capture: cannot listen on %s: %s\n", AddressText(*address).c_str(),
                 std::strerror(errno));
    if (listen_fd >= 0) close(listen_fd);
    return kExitConnect;
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const std::string& output = options.output;
  struct sigaction action {};
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int number : {SIGINT, SIGTERM, SIGHUP}) sigaction(number, &action, nullptr);
  StartedProgram started;
  if (!options.command.empty()) {
    if (const std::string failed = started.Start(options.command, AddressText(bound)); !failed.empty()) {
      std::fprintf(stderr, "gnomon-capture: %s; %s was not touched\n", failed.c_str(), output.c_str());
      close(listen_fd);
      return kExitCannotStart;
    }
  } else {
    std::fprintf(stderr,
                 "gnomon-capture: listening on %s; start programs with GNOMON_COLLECTOR=%s (Ctrl-C ends the "
                 "capture)\n",
                 AddressText(bound).c_str(), AddressText(bound).c_str());
  }

  std::list<Arrival> arrivals;       // stable: each handshake thread holds its own
  std::vector<ProgramResult> ended;  // programs whose capture is over: only what the summary needs
  Totals ended_totals;
  std::atomic<bool> first_stream_taken{false};
  std::atomic<size_t> streams_taken{0};
  bool published = false, accept_failing = false, progress_shown = false;
  uint64_t silent = 0, silent_said = 0;  // connections that never said a word
  const auto start = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto next_progress = start + std::chrono::seconds(1);
  auto next_silent_note = start + kSilentNoteEvery;
  auto publish = [&] {
    if (published) return true;
    published = true;
    if (server::Status s = writer.Publish(options.overwrite); !s.ok()) {
      std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
      return false;
    }
    return true;
  };
  // The capture ends on a signal (with a started program: a second one; the first is
  // its to answer), at the time limit, or once the started program has ended and every
  // connection it made is done with.
  auto interrupted = [&] { return g_signals > (started.is_started() ? 1 : 0); };
  auto take = [&](int fd, const sockaddr_storage& peer) {
    Arrival& arrival = arrivals.emplace_back();
    arrival.worker = std::make_unique<Worker>(options.worker);
    arrival.where = AddressText(peer);
    arrival.source = arrival.where.substr(0, arrival.where.rfind(':'));
    arrival.since = std::chrono::steady_clock::now();
    arrival.handshake = std::thread([&arrival, &writer, &first_stream_taken, &streams_taken, fd] {
      arrival.status = arrival.worker->Adopt(fd, arrival.where);
      if (arrival.status.ok() && arrival.settled.exchange(true)) {
        arrival.status =
            server::Status::Error(arrival.where + " answered after giving way to newer connections");
      }
      if (arrival.status.ok()) {
        arrival.worker->SetWriter(first_stream_taken.exchange(true) ? &writer.AddStream()
                                                                    : &writer.first_stream());
        ++streams_taken;
        arrival.worker->Start();
      }
      arrival.state.store(arrival.status.ok() ? 1 : 2);
    });
  };
  int code = kExitOk;
  while (!interrupted() &&
         (options.limit.count() == 0 || std::chrono::steady_clock::now() - start < options.limit)) {
    size_t active = 0;
    for (const Arrival& a : arrivals) active += a.state.load() != 2;
    if (started.HasEnded() && started.is_started() && active == 0) break;
    pollfd pfd{listen_fd, POLLIN, 0};
    poll(&pfd, 1, 50);
    for (int i = 0; i < kAcceptsPerLook; ++i) {  // what waits in the backlog, not one a look
      sockaddr_storage peer{};
      socklen_t peer_length = sizeof(peer);
      const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
          if (!accept_failing) {
            std::fprintf(stderr, "gnomon-capture: cannot take a connection: %s%s\n", std::strerror(errno),
                         errno == EMFILE || errno == ENFILE ? " (raise the limit with ulimit -n)" : "");
          }
          accept_failing = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        break;
      }
      accept_failing = false;
      if (active >= kMaxPrograms || streams_taken.load() >= tracefile::kMaxTraceStreams) {
        std::fprintf(stderr, "gnomon-capture: %s: refused, %s\n", AddressText(peer).c_str(),
                     active >= kMaxPrograms ? "1024 programs are being captured already"
                                            : "the file holds as many programs as a trace can");
        close(fd);
        continue;
      }
      const std::string where = AddressText(peer);
      if (Arrival* evict = OneToEvict(arrivals, where.substr(0, where.rfind(':')))) {
        if (!evict->settled.exchange(true)) {
          evict->evicted = true;
          evict->worker->RequestStop();  // its handshake ends within a tenth of a second
        }
      }
      take(fd, peer);
      ++active;
    }
    size_t receiving = 0, answered = ended.size();
    Totals totals = ended_totals;
    for (auto it = arrivals.begin(); it != arrivals.end();) {
      Arrival& a = *it;
      const int state = a.state.load();
      if (state == 2) {  // never answered: said (the message names the peer), and forgotten
        a.handshake.join();
        if (a.evicted || a.worker->peer_was_silent()) {
          ++silent;  // a flood is summed up, not a line each
        } else if (!options.quiet) {
          std::fprintf(stderr, "gnomon-capture: %s\n", a.status.message().c_str());
        }
        it = arrivals.erase(it);
        continue;
      }
      if (state != 1) {
        ++it;
        continue;
      }
      ++answered;
      if (!publish()) {
        code = OutputFailure(output, options.overwrite);
        g_signals = 2;
      }
      if (!a.announced && !options.quiet && !a.worker->program_name().empty()) {
        std::fprintf(stderr, "%sgnomon-capture: capturing '%s' from %s to %s\n", progress_shown ? "\n" : "",
                     server::Printable(a.worker->program_name()).c_str(), a.where.c_str(), output.c_str());
        a.announced = true;
      }
      if (a.worker->is_finished()) {
        // Its stream is closed in the file: the worker and its connection are let go,
        // and only what the summary needs is kept.
        a.handshake.join();
        a.worker->Join();
        ended.push_back(ProgramResult::Of(*a.worker, a.where, server::Status::Ok()));
        ended_totals.Add(*a.worker);
        totals.Add(*a.worker);
        it = arrivals.erase(it);
        continue;
      }
      ++receiving;
      totals.Add(*a.worker);
      ++it;
    }
    const auto now = std::chrono::steady_clock::now();
    if (silent > silent_said && now >= next_silent_note && !options.quiet) {
      std::fprintf(stderr,
                   "%sgnomon-capture: %llu connection(s) said nothing and were closed (a port scanner, or "
                   "not a Gnomon program)\n",
                   progress_shown ? "\n" : "", static_cast<unsigned long long>(silent - silent_said));
      silent_said = silent;
      next_silent_note = now + kSilentNoteEvery;
    }
    if (!options.quiet && now >= next_progress) {
      progress_shown = tty;
      PrintProgress(totals, receiving, answered, writer, std::chrono::duration<double>(now - start).count(),
                    tty, false);
      next_progress += tty ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    }
  }
  close(listen_fd);
  // The end: every program still connected is stopped (its stream ends there, cleanly).
  for (Arrival& a : arrivals) {
    a.worker->RequestStop();
    a.handshake.join();
    if (a.state.load() != 1) continue;  // stopped before it answered
    a.worker->Join();
    ended.push_back(ProgramResult::Of(*a.worker, a.where, server::Status::Ok()));
  }
  arrivals.clear();
  if (ended.empty()) {
    if (started.is_started()) {
      started.HasEnded();
      std::fprintf(
          stderr,
          "gnomon-capture: %s never connected (is it built with Gnomon, and does it record anything?); "
          "%s was not touched\n",
          options.command[0].c_str(), output.c_str());
    } else {
      std::fprintf(stderr, "gnomon-capture: no program connected; %s was not touched\n", output.c_str());
    }
    return kExitConnect;  // the writer removes its file
  }
  if (!publish()) code = OutputFailure(output, options.overwrite);  // one answered just as the capture ended
  const int summed = EndCapture(ended, writer, output, start, options.quiet, tty);
  if (code == kExitFile || code == kExitRefused) return code;
  if (!started.is_started()) return summed;
  // A started program's own exit code, unless the capture failed it: a lost connection
  // is the program's end (killed, say), which its own code tells.
  if (summed != kExitOk && summed != kExitConnectionLost) return summed;
  if (!started.HasEnded()) {
    std::fprintf(stderr, "gnomon-capture: the capture ended (-s, or a second Ctrl-C); %s runs on\n",
                 options.command[0].c_str());
    return summed;
  }
  return started.exit_code();
}

}  // namespace gnomon::capture
