// What the viewer is looking at: a trace file being loaded, or a live program.
//
// A file loads on a thread of its own, block by block, each under the model's write lock
// (SharedModel): the window stays responsive, shows progress, and draws what has loaded
// so far. A live session
// embeds the worker and tees every message it receives into a temporary trace file, so
// the capture can be saved at any moment.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gnomon/server/flame_graph.h"
#include "gnomon/server/shared_model.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/server/worker.h"
#include "gnomon/server/zone_finder.h"
#include "gnomon/server/zone_window.h"
#include "gnomon/tracefile/trace_writer.h"

namespace gnomon::viewer {

class Session {
 public:
  // Loads the file's `program`-th program (0: the first; a capture of several programs,
  // or a merged trace, holds more: programs() says how many once loaded). Zones that
  // would take more than `memory_limit` are counted, not held (zones_held() false): the
  // timeline draws them from their threads' overviews (ZoneOverview, in a quarter of the
  // limit) and statistics read them from the file again (StreamStatistics).
  static std::unique_ptr<Session> OpenFile(const std::string& path,
                                           uint32_t max_expansion = tracefile::kDefaultMaxExpansion,
                                           uint32_t program = 0, uint64_t memory_limit = UINT64_MAX);
  // A session over a model built elsewhere (benchmarks, tests).
  static std::unique_ptr<Session> FromModel(server::TraceModel model, std::string title);
  // Starts connecting on a thread of its own and returns at once; until the handshake is
  // done the state is "connecting"; on failure failed() turns true and error() says why.
  // Where nothing listens that is at once, unless `wait`: then it keeps trying (the
  // state says "waiting for a program") until one answers or the session ends.
  static std::unique_ptr<Session> Connect(const std::string& host, uint16_t port,
                                          std::chrono::milliseconds timeout = std::chrono::milliseconds(1500),
                                          bool wait = false);
  ~Session();

  bool is_live() const { return worker_ != nullptr; }
  // A live capture that still receives (not ended, stopped or cut off).
  bool is_receiving() const;
  // Ends a live capture: the program goes on, what arrived stays (and can be saved).
  void StopCapture();
  bool is_loading() const { return loading_.load(); }
  bool failed() const { return failed_.load(); }
  // One line: what went wrong (connection refused, not a trace, malformed stream...).
  std::string error() const;
  std::string warning() const;  // e.g. a truncated file
  std::string title() const { return title_; }
  // The file read (empty for a live session or a model built elsewhere).
  const std::string& path() const { return path_; }
  // The programs the file holds (known once loaded; 1 before) and which one is shown.
  uint32_t programs() const { return programs_.load(); }
  uint32_t program() const { return program_; }
  // The file's other programs, once it has loaded (nullptr before, and for a live
  // session); read-only from then on, so read without a lock.
  const server::TraceSet* others() const { return loading_.load() || failed_.load() ? nullptr : &others_; }
  // 0..1 while a file loads.
  float load_progress() const;
  // The CPU zones' statistics of a file loaded without holding them, read from the file
  // again on every core (StreamZoneStatistics): the whole trace, longest total first.
  // Fails at once (and one under way stops at its next block) once CancelReads was called.
  server::Result<std::vector<server::ZoneStatistics>> StreamStatistics(std::string* note = nullptr);
  // The flame graph of a file loaded without its zones, read from the file again in the
  // same way (StreamFlameGraph).
  server::Result<server::FlameGraph> StreamFlameGraph(const server::FlameQuery& query,
                                                      std::string* note = nullptr);
  // Find zone's CPU zones of a file loaded without them, read from the file again
  // (FindZonesInFile), the longest kept whole within a sixteenth of the memory limit.
  server::Result<server::FoundZones> FindZonesInFile(server::FindZoneQuery query);
  // The zones of a file loaded without them that overlap ticks [begin, end], read from
  // the file again (ReadZoneWindow) within a sixteenth of the memory limit of blocks.
  server::Result<server::ZoneWindow> ReadZoneWindow(uint64_t begin_tick, uint64_t end_tick);
  // Stops the file's reads for the windows: the session is about to go.
  void CancelReads() { cancel_reads_ = true; }
  // Reads may run again (once those cancelled have stopped).
  void ResumeReads() { cancel_reads_ = false; }
  // "loading", "receiving", "ended", "disconnected: ..." and the like.
  std::string StateText() const;
  uint64_t bytes_received() const;

  // Runs f(const TraceModel&) with the model held for reading (SharedModel): a file
  // that loads, or a capture that receives, goes on meanwhile.
  template <typename F>
  void WithModel(F&& f) {
    if (worker_) {
      worker_->WithModel(f);
    } else {
      model_.Read(f);
    }
  }

  // Saves a live capture so far (or copies the loaded file) to `path`; an existing
  // regular file there is replaced only with tracefile::Overwrite::kYes, anything else never.
  server::Status SaveAs(const std::string& path, tracefile::Overwrite overwrite);

 private:
  Session() = default;
  // read(source, model, options) on the file again, the model held for reading; reads
  // stop at CancelReads.
  template <typename R, typename Read>
  server::Result<R> ReadAgain(Read&& read);

  std::string title_;
  bool waiting_ = false;  // Connect(wait): nothing listened yet, and it keeps trying
  std::string path_;
  server::SharedModel model_;  // of a file session; a live one's is the worker's
  server::TraceSet others_;    // a file's other programs, filled by the loader
  std::thread loader_;         // loads a file
  std::thread connector_;      // connects a live session
  std::atomic<bool> loading_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> cancel_{false};
  std::atomic<bool> cancel_reads_{false};  // CancelReads
  std::atomic<uint64_t> bytes_done_{0};
  std::atomic<uint32_t> programs_{1};
  uint32_t program_ = 0;
  uint32_t max_expansion_ = tracefile::kDefaultMaxExpansion;
  uint64_t memory_limit_ = UINT64_MAX;
  std::atomic<uint32_t> shown_stream_{0};  // the file's stream the model holds, once loaded
  uint64_t bytes_total_ = 0;
  mutable std::mutex text_mutex_;
  std::string error_;
  std::string warning_;

  std::string temp_path_;
  std::unique_ptr<tracefile::TraceWriter> tee_;
  std::unique_ptr<server::Worker> worker_;
};

}  // namespace gnomon::viewer
