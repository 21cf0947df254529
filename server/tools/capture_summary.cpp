#include "capture_summary.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>

namespace gnomon::capture {
namespace {

using server::Worker;

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

// How a program's capture ended, as the exit code says it.
int ExitCodeOf(Worker::State state) {
  switch (state) {
    case Worker::State::kFailed:
      return kExitMalformed;
    case Worker::State::kDisconnected:
      return kExitConnectionLost;
    default:
      return kExitOk;
  }
}

}  // namespace

void Totals::Add(const Worker& worker) {
  zones += worker.zones_received();
  messages += worker.messages_received();
  bytes += worker.bytes_received();
  dropped += worker.program_dropped();
}

ProgramResult ProgramResult::Of(const Worker& worker, std::string where, server::Status connected) {
  ProgramResult result;
  result.where = std::move(where);
  result.connected = std::move(connected);
  result.state = worker.state();
  result.error = worker.error();
  result.name = worker.program_name();
  result.totals.Add(worker);
  result.lanes = worker.lanes();
  result.lane_bytes = worker.lane_bytes_received();
  return result;
}

void PrintProgress(const Totals& totals, size_t receiving, size_t programs,
                   const tracefile::TraceWriter& writer, double elapsed_s, bool tty, bool final) {
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

int EndCapture(const std::vector<ProgramResult>& programs, tracefile::TraceWriter& writer,
               const std::string& output, std::chrono::steady_clock::time_point start, bool quiet, bool tty) {
  Totals totals;
  size_t answered = 0;
  for (const ProgramResult& program : programs) {
    if (!program.connected.ok()) continue;
    ++answered;
    totals.zones += program.totals.zones;
    totals.messages += program.totals.messages;
    totals.bytes += program.totals.bytes;
    totals.dropped += program.totals.dropped;
  }
  const server::Status written = writer.Finish();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
                 static_cast<unsigned long long>(writer.blocks_compressed()), tracefile::kShortOfCoresLevel);
  }
  for (const ProgramResult& program : programs) {
    if (program.lanes == 0) continue;
    std::fprintf(
        stderr,
        "gnomon-capture: %s: its threads' events came over %u more connections (--lanes): %.2f MB of "
        "the %.2f MB\n",
        program.name.c_str(), program.lanes, double(program.lane_bytes) / 1e6,
        double(program.totals.bytes) / 1e6);
  }
  if (totals.dropped > 0) {
    std::fprintf(stderr,
                 "gnomon-capture: %s dropped %llu event(s): %s event buffer was full (its "
                 "GNOMON_BUFFER_POLICY and GNOMON_BUFFER_MB decide when; the program's stderr says which)\n",
                 programs.size() > 1 ? "the programs" : "the program",
                 static_cast<unsigned long long>(totals.dropped), programs.size() > 1 ? "an" : "its");
  }
  if (!written.ok()) {
    std::fprintf(stderr, "gnomon-capture: %s\n", written.message().c_str());
    return kExitFile;
  }
  int code = totals.dropped > 0 ? kExitDropped : kExitOk;
  for (const ProgramResult& program : programs) {
    const std::string prefix = programs.size() > 1 ? program.where + ": " : "";
    if (!program.connected.ok()) {
      code = std::max<int>(code == kExitDropped ? kExitOk : code, kExitConnect);
      continue;
    }
    const int ended = ExitCodeOf(program.state);
    if (ended == kExitMalformed)
      std::fprintf(stderr, "gnomon-capture: %s%s\n", prefix.c_str(), program.error.c_str());
    if (ended == kExitConnectionLost) {
      std::fprintf(stderr, "gnomon-capture: %s%s; the file keeps everything received\n", prefix.c_str(),
                   program.error.c_str());
    }
    if (ended != kExitOk) code = std::max<int>(code == kExitDropped ? kExitOk : code, ended);
  }
  return code;
}

int OutputFailure(const std::string& path, tracefile::Overwrite overwrite) {
  return tracefile::CheckOutputPath(path, overwrite).ok() ? kExitFile : kExitRefused;
}

}  // namespace gnomon::capture
