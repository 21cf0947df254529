// What gnomon-capture says while it records and when it ends, and the exit code it
// ends with: shared by its two ways of capturing (connecting to programs, capture_main;
// programs connecting to it, capture_listen).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gnomon/server/status.h"
#include "gnomon/server/worker.h"
#include "gnomon/tracefile/output_file.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::capture {

enum ExitCode {
  kExitOk = 0,
  kExitUsage = 1,
  kExitConnect = 2,
  kExitFile = 3,
  kExitConnectionLost = 4,
  kExitMalformed = 5,
  kExitDropped = 6,
  kExitRefused = 7,        // something already at the output path, not replaced (OutputFailure)
  kExitCannotStart = 127,  // the program to start (gnomon-capture -- PROGRAM) could not be
};

// The exit code for a trace that could not be put at `path`: kExitRefused when what
// is there is not replaced under `overwrite` (a file without -f, a file that is not a
// trace, a link, a folder, a special file), else kExitFile (it could not be written,
// or moved into place).
int OutputFailure(const std::string& path, tracefile::Overwrite overwrite);

// What one program's worker received so far.
struct Totals {
  uint64_t zones = 0, messages = 0, bytes = 0, dropped = 0;
  void Add(const server::Worker& worker);
};

// A program's capture once its worker is done: what the summary and the exit code need,
// without the worker (a capture of programs that come and go keeps only these).
struct ProgramResult {
  std::string where;                                // as messages name the program: its address
  server::Status connected = server::Status::Ok();  // its handshake
  server::Worker::State state = server::Worker::State::kIdle;
  std::string error;
  std::string name;
  Totals totals;
  uint32_t lanes = 0;
  uint64_t lane_bytes = 0;

  // `worker`'s, once it was joined (or never answered: `connected` says why).
  static ProgramResult Of(const server::Worker& worker, std::string where, server::Status connected);
};

// The progress line: on a terminal redrawn in place (fitted to its width), else a line
// every few seconds; `final` ends it.
void PrintProgress(const Totals& totals, size_t receiving, size_t programs,
                   const tracefile::TraceWriter& writer, double elapsed_s, bool tty, bool final);

// Finishes the file, sums up and returns the exit code: the worst ending among the
// programs (a malformed stream, a lost connection, one that never answered), then
// dropped events.
int EndCapture(const std::vector<ProgramResult>& programs, tracefile::TraceWriter& writer,
               const std::string& output, std::chrono::steady_clock::time_point start, bool quiet, bool tty);

}  // namespace gnomon::capture
