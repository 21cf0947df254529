// gnomon-capture's second way of capturing: programs connect to it (GNOMON_COLLECTOR),
// as many as come and go (--listen), or the one program it starts itself
// (gnomon-capture -o FILE -- PROGRAM ARGS...).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gnomon/server/worker.h"
#include "gnomon/tracefile/output_file.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::capture {

struct ListenOptions {
  std::string listen;  // [ADDR:]PORT; "127.0.0.1:0" for a started program
  std::string output;
  tracefile::Overwrite overwrite = tracefile::Overwrite::kNo;
  server::Worker::Options worker;
  std::chrono::nanoseconds limit{0};  // -s (0: none)
  bool quiet = false;
  // The program to start, connected to this capture before its first event; the capture
  // ends once it has exited and its stream has ended. Empty: --listen.
  std::vector<std::string> command;
};

// Takes every program that connects, each a worker and a stream of the file, until
// Ctrl-C (SIGINT, SIGTERM, SIGHUP) or the time limit, or the started program's end: a
// signal sent to the capture is passed on to a started program (the terminal's Ctrl-C
// reaches it directly), and the capture records until it ends; a second signal ends
// the capture.
// FILE appears once the first program has answered. Returns the capture's exit code
// (capture_summary.h); with a started program, the program's own exit code unless the
// capture failed (nothing connected, the file, a malformed stream, dropped events).
int ListenCapture(const ListenOptions& options, tracefile::TraceWriter& writer);

}  // namespace gnomon::capture
