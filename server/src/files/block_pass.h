// A pass over a trace file's zones for models loaded without them (TraceModel::zones_held
// false): every block the load decoded read again, walked apart on up to one thread a
// core, and what each leaves for the blocks after it settled in file order. What
// StreamZoneStatistics and StreamFlameGraph read a file by.
//
//   Pass pass(source, options);
//   if (Status s = OpenPass(pass, programs); !s.ok()) return s;
//   WalkInOrder<Part>(pass, Workers(pass, 0),
//                     [&](size_t worker, const Wanted& block, auto&& feed) { MyWalk w; feed(w); return
//                     w.part(); },
//                     [&](size_t index, Part& part) { /* in file order, under a lock */ });
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "files/block_walk.h"
#include "files/trace_index.h"
#include "gnomon/server/status.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/trace_loader.h"

namespace gnomon::server {

// One program's zones (its model loaded without them), and how its locations are numbered.
struct Program {
  explicit Program(const TraceModel& m);
  // As the builder numbered it; an id it never saw (0, or past the limit) is "unknown".
  uint32_t Location(uint32_t id) const { return id < location_of_id.size() ? location_of_id[id] : 0; }
  // A zone begun at `begin_tick` (`begin_ns`) and ended at `tick`, in ns, as the held zone
  // reads (ZoneArray): an end before its begin makes a zone of 0; -1 for what it reads as
  // no duration (an end at kOpenZone, which it takes for open; a tick past the clock's range).
  [[gnu::always_inline]] int64_t Duration(uint64_t begin_tick, int64_t begin_ns, uint64_t tick) const {
    const uint64_t end = std::max(tick, begin_tick);
    if (end == kOpenZone) return -1;
    const int64_t duration = model.clock.TickToNs(end) - begin_ns;
    return duration < 0 ? -1 : duration;
  }
  const TraceModel& model;
  std::vector<uint32_t> location_of_id;  // the program's id -> index in source_locations
};

// A block the load decoded, with its program and the thread it began on.
struct Wanted {
  const IndexedBlock* block;
  size_t program;
  uint32_t thread;
};

struct Pass {
  Pass(const TraceSource& s, const LoadOptions& o) : source(s), options(o) {}
  const TraceSource& source;
  const LoadOptions& options;
  tracefile::FileHeader header{};
  std::vector<IndexedBlock> blocks;
  std::vector<Wanted> wanted;
  std::deque<Program> programs;
  size_t largest_block = 1;  // raw and compressed bytes
};

// Indexes the file again and picks the blocks each program's load decoded.
Status OpenPass(Pass& pass, const std::vector<StreamedProgram>& programs);

// Threads for a pass whose workers each hold a block and `each_bytes` besides: as many
// as the cores this process may run on, within 16 and 512 MiB together.
size_t Workers(const Pass& pass, size_t each_bytes);

// A block that no longer decompresses, walked from its summary when it carries one that
// reads (a load from summaries never decompressed it) into `walk` (a walker whose
// on_thread() says whether it is on a thread): the ends of the zones begun before it and
// the zones it leaves open, as walking it gives them; the zones begun and ended inside it
// are only runs there, and are left out (`left_out` counts them). False without such a
// summary.
template <typename Walker>
bool WalkSummary(const Pass& pass, const std::vector<uint8_t>& compressed, FrameDecompressor& decompressor,
                 Walker& walk, uint64_t& left_out) {
  if (compressed.size() < tracefile::kSummaryTrailer) return false;
  const uint8_t* const trailer = compressed.data() + compressed.size() - tracefile::kSummaryTrailer;
  const FrameDecompressor::SummaryPlace place =
      FrameDecompressor::LocateSummary(trailer, uint32_t(compressed.size()));
  tracefile::BlockSummary summary;
  std::string error;
  if (place.frame_bytes == 0 ||
      !decompressor.ReadSummary(trailer - place.frame_bytes, place.frame_bytes,
                                std::max<uint32_t>(1, pass.options.max_expansion), summary, error))
    return false;
  size_t segment = 0;
  auto apply = [&](const tracefile::SummarySegment& s) {
    if (!walk.on_thread()) return;  // zones on no thread count nowhere
    for (const uint64_t tick : s.closed) walk.End(tick);
    for (const auto& [location, tick] : s.left_open) walk.Begin(location, tick);
    left_out += s.begins - std::min<uint64_t>(s.begins, s.left_open.size());
  };
  auto zone = [](auto&&...) { return false; };  // a summary's other messages hold none
  const tracefile::CompactWalk others = tracefile::WalkCompactBlock(
      summary.others.data(), summary.others.size(), 7, zone, zone, zone, [&](const uint8_t* m, size_t size) {
        if (m[0] != uint8_t(protocol::MessageType::kThreadContext)) return true;
        if (segment + 1 >= summary.segments.size()) return false;
        apply(summary.segments[segment++]);  // the segment before the switch
        walk.Message(m, size);
        return true;
      });
  // As the load applied it: the last segment only when every other message read.
  if (others.ok && others.stopped_at == summary.others.size()) apply(summary.segments[segment]);
  return true;
}

// Walks every wanted block apart on up to `workers` threads: walk(worker, wanted, feed)
// makes a walker (WalkBlock's, with on_thread() besides), hands it to feed(walker), which
// walks the block into it, and returns what the block leaves (a Part). Each Part goes to
// settle(index, part) in file order, under a lock, as soon as the blocks before it have;
// a worker runs at most 4 blocks a worker ahead of that, so what waits stays bounded. A
// block that no longer decompresses is walked from its summary when the load read it
// from there (said in `damaged` when given); otherwise the pass fails.
template <typename Part, typename Walk, typename Settle>
Status WalkInOrder(const Pass& pass, size_t workers, Walk&& walk, Settle&& settle, Notes* damaged = nullptr) {
  const std::vector<Wanted>& wanted = pass.wanted;
  const size_t window = 4 * workers;
  std::vector<Part> parts(window);  // block i in parts[i % window]
  std::vector<char> ready(window, 0);
  size_t settled = 0;  // blocks settled
  std::mutex mutex;
  std::condition_variable advanced;
  std::atomic<uint64_t> bytes_done{0};
  bool stop = false;
  std::string failure;
  auto fail = [&](std::string why) {
    const std::lock_guard lock(mutex);
    if (!stop) failure = std::move(why);
    stop = true;
    advanced.notify_all();
  };
  // Under the lock: settles the blocks that are ready, in order.
  auto settle_ready = [&] {
    for (; settled < wanted.size() && ready[settled % window]; ++settled) {
      settle(settled, parts[settled % window]);
      parts[settled % window] = Part{};
      ready[settled % window] = 0;
    }
    advanced.notify_all();
  };
  std::atomic<size_t> next{0};
  auto work = [&](size_t worker) {
    try {
      FrameDecompressor decompressor;
      std::vector<uint8_t> compressed, raw;
      for (size_t i = next++; i < wanted.size(); i = next++) {
        {
          std::unique_lock lock(mutex);
          advanced.wait(lock, [&] { return stop || i < settled + window; });
          if (stop) return;
        }
        if (pass.options.cancel != nullptr && pass.options.cancel->load()) return fail("cancelled");
        const IndexedBlock& block = *wanted[i].block;
        compressed.resize(block.compressed_bytes);  // inside the file: the index checked
        errno = 0;
        if (!pass.source.ReadAt(compressed.data(), compressed.size(), block.data_offset())) {
          return fail("cannot read " + pass.source.name() + " again (" +
                      (errno != 0 ? std::strerror(errno) : "it is shorter") +
                      "): has it changed since it was loaded?");
        }
        const std::string error = decompressor.Decompress(
            compressed.data(), compressed.size(), block.raw_bytes, pass.header.format_version >= 4, raw);
        const bool summarized =
            pass.programs[wanted[i].program].model.summarized_blocks.contains(block.sequence);
        bool from_summary = false, unreadable = false;
        uint64_t left_out = 0;
        Part part = walk(worker, wanted[i], [&](auto& walker) {
          if (error.empty()) {
            // Walked as far as the load read it (a malformed record ends both there).
            std::string malformed;
            WalkBlock(raw.data(), block.raw_bytes, pass.header.format_version, walker, malformed);
          } else if (summarized && WalkSummary(pass, compressed, decompressor, walker, left_out)) {
            from_summary = true;
          } else {
            unreadable = true;
          }
        });
        if (unreadable) {
          return fail("block " + std::to_string(block.sequence) + " of " + pass.source.name() +
                      " no longer decompresses (" + error + "): has the file changed since it was loaded?");
        }
        const uint64_t done = bytes_done += block.compressed_bytes + block.header_bytes;
        if (pass.options.bytes_done != nullptr) pass.options.bytes_done->store(done);
        const std::lock_guard lock(mutex);
        if (from_summary && damaged != nullptr) {
          damaged->Add("block " + std::to_string(block.sequence) + " " + At(block.offset) +
                       " does not decompress (" + error + "), read from its summary: its " +
                       std::to_string(left_out) +
                       " zone(s) begun and ended inside it are left out, their time counted as the self "
                       "time of the zones around them");
        }
        parts[i % window] = std::move(part);
        ready[i % window] = 1;
        settle_ready();
      }
    } catch (const std::exception& e) {  // out of memory: said, never thrown past the thread
      try {
        fail(std::string("reading the zones again failed: ") + e.what());
      } catch (...) {
        const std::lock_guard lock(mutex);
        stop = true;  // failure stays "", said as such
        advanced.notify_all();
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  try {
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  } catch (const std::system_error&) {
    // Fewer threads than asked for: the ones started (and this one) take every block.
  }
  work(0);
  for (std::thread& thread : threads) thread.join();
  return stop ? Status::Error(failure.empty() ? "reading the zones again failed" : failure) : Status::Ok();
}

}  // namespace gnomon::server
