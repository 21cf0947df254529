// gnomon-capture: records a running program's profile to a .gnomon trace file.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
};

constexpr const char* kUsage = R"(Usage: gnomon-capture -o FILE [-a ADDRESS] [-p PORT] [-s SECONDS] [-f] [-w SECONDS] [-l LEVEL] [-q]

Connects to a program profiled with Gnomon and records its events to a trace file,
until the program exits, the time limit passes, or Ctrl-C.

  -o FILE      trace file to write (.gnomon)
  -a ADDRESS   the program's address (default 127.0.0.1)
  -p PORT      the program's port (default 9421, or $GNOMON_PORT)
  -s SECONDS   stop after this many seconds of capture
  -f           overwrite FILE if it exists
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
)";

volatile std::sig_atomic_t g_interrupted = 0;
void OnSignal(int) { g_interrupted = 1; }

bool ParseSeconds(const char* text, double& out) {
  char* end = nullptr;
  out = std::strtod(text, &end);
  return end != text && *end == '\0' && out >= 0;
}

void PrintProgress(const Worker& worker, const TraceWriter& writer, double elapsed_s, bool tty, bool final) {
  static uint64_t last_messages = 0;
  static double last_elapsed = 0;
  const uint64_t messages = worker.messages_received();
  const double rate = elapsed_s > last_elapsed ? double(messages - last_messages) / (elapsed_s - last_elapsed) : 0;
  last_messages = messages;
  last_elapsed = elapsed_s;
  std::fprintf(stderr, "%s%8.1f s  %12llu zones  %12llu events  %9.2f M events/s  %9.2f MB written%s",
               tty ? "\r" : "", elapsed_s, static_cast<unsigned long long>(worker.zones_received()),
               static_cast<unsigned long long>(messages), rate / 1e6, double(writer.file_bytes()) / 1e6,
               tty && !final ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  Worker::Options options;
  options.build_model = false;
  options.connect_timeout = std::chrono::seconds(10);
  if (const char* port = std::getenv("GNOMON_PORT")) options.port = static_cast<uint16_t>(std::atoi(port));
  std::string output;
  double limit_s = 0;
  bool overwrite = false;
  gnomon::server::TraceWriterOptions writer_options;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gnomon-capture: %s needs a value\n\n%s", arg.c_str(), kUsage);
        std::exit(kExitUsage);
      }
      return argv[++i];
    };
    double seconds = 0;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (arg == "-o") {
      output = value();
    } else if (arg == "-a") {
      options.host = value();
    } else if (arg == "-p") {
      const char* text = value();
      char* end = nullptr;
      const long port = std::strtol(text, &end, 10);
      if (*end != '\0' || port <= 0 || port > 65535) {
        std::fprintf(stderr, "gnomon-capture: '%s' is not a port number (1-65535)\n", text);
        return kExitUsage;
      }
      options.port = static_cast<uint16_t>(port);
    } else if (arg == "-s") {
      if (!ParseSeconds(value(), limit_s)) {
        std::fprintf(stderr, "gnomon-capture: -s needs a number of seconds\n");
        return kExitUsage;
      }
    } else if (arg == "-w") {
      if (!ParseSeconds(value(), seconds)) {
        std::fprintf(stderr, "gnomon-capture: -w needs a number of seconds\n");
        return kExitUsage;
      }
      options.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    } else if (arg == "-l") {
      const char* text = value();
      char* end = nullptr;
      const long level = std::strtol(text, &end, 10);
      if (*end != '\0' || level < -7 || level > 19) {
        std::fprintf(stderr, "gnomon-capture: -l wants a zstd level from -7 to 19, not '%s'\n", text);
        return kExitUsage;
      }
      writer_options.compression_level = int(level);
    } else if (arg == "-f") {
      overwrite = true;
    } else if (arg == "-q") {
      quiet = true;
    } else {
      std::fprintf(stderr, "gnomon-capture: unknown argument '%s'\n\n%s", arg.c_str(), kUsage);
      return kExitUsage;
    }
  }
  if (output.empty()) {
    std::fprintf(stderr, "gnomon-capture: say where to write the trace with -o FILE\n\n%s", kUsage);
    return kExitUsage;
  }

  auto writer = TraceWriter::Create(output, overwrite, writer_options);
  if (!writer.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", writer.status().message().c_str());
    return kExitFile;
  }
  options.writer = writer.value().get();
  Worker worker(options);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  if (gnomon::server::Status s = worker.Connect(); !s.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", s.message().c_str());
    writer.value()->Finish();
    std::remove(output.c_str());
    return kExitConnect;
  }
  const auto start = std::chrono::steady_clock::now();
  worker.Start();
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto next_progress = start;
  bool announced = false;
  while (!worker.is_finished()) {
    worker.WaitFinished(std::chrono::milliseconds(50));  // returns at once when the stream ends
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (g_interrupted || (limit_s > 0 && elapsed >= limit_s)) worker.RequestStop();
    if (!announced && !quiet && !worker.program_name().empty()) {
      std::fprintf(stderr, "gnomon-capture: capturing '%s' from %s:%u to %s\n", worker.program_name().c_str(),
                   options.host.c_str(), unsigned{options.port}, output.c_str());
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
  std::fprintf(stderr, "gnomon-capture: %llu zones, %llu events, %.2f MB received in %.1f s -> %s (%.2f MB, %.2f bytes/zone)\n",
               static_cast<unsigned long long>(zones), static_cast<unsigned long long>(worker.messages_received()),
               double(worker.bytes_received()) / 1e6, elapsed, output.c_str(), double(file_bytes) / 1e6,
               zones ? double(file_bytes) / double(zones) : 0.0);
  if (!written.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", written.message().c_str());
    return kExitFile;
  }
  switch (worker.state()) {
    case Worker::State::kFailed:
      std::fprintf(stderr, "gnomon-capture: %s\n", worker.error().c_str());
      return kExitMalformed;
    case Worker::State::kDisconnected:
      std::fprintf(stderr, "gnomon-capture: %s; the file keeps everything received\n", worker.error().c_str());
      return kExitConnectionLost;
    default:
      return kExitOk;
  }
}
