// Fuzzes the trace-file reader: any bytes as a .gnomon file. Loading either rejects the
// file with a message or loads what it can; every stream's model is then read back in full.
// Memory: a block may expand at most kExpansion times here (the decompression-bomb
// limit, 1,024 by default, is tested in trace_file_test); the buffers that hold
// decompressed blocks take at most a few times that per file byte, and the model, and
// the most the load and the report take besides, at most 64 bytes of heap (and zone
// blocks) per byte of the stream the file held, plus a fixed 256 KiB.
// Every other input (by its length) is loaded again without its zones, and its
// statistics read from the file (StreamZoneStatistics) must equal the held ones: the
// same counts, totals, extremes and faults; and the overview it keeps of them, in a
// small budget, must count every zone once, within that budget, as must the whole trace
// read as one window of zones (ReadZoneWindow), and its flame graph and Find zone read
// from the file must agree with the held ones. A quarter of those load from the blocks'
// summaries (format 8) where they have them: a summary speaks for its block unread, so
// then only what the summaries alone make is checked (the overview counts every zone
// they count once, within its budget), not that it equals the blocks.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "../support/heap_counter.h"
#include "gnomon/server/flame_graph.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "gnomon/server/streamed_statistics.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/zone_finder.h"
#include "gnomon/server/zone_window.h"

constexpr uint32_t kExpansion = 64;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/gnomon-fuzz-" + std::to_string(getpid()) + ".gnomon";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  const int64_t heap_before = gnomon::test::HeapBytes();
  gnomon::test::ResetHeapPeak();
  {
    gnomon::server::TraceSet set;
    gnomon::server::LoadOptions options;
    options.max_expansion = kExpansion;
    auto source = gnomon::server::TraceSource::OpenFile(path);
    std::remove(path.c_str());  // nothing left in /tmp once the fuzzer stops
    if (!source.ok()) __builtin_trap();
    const auto report = gnomon::server::LoadTraceSet(source.value(), set, options);
    if (!report.ok() && report.status().message().empty()) __builtin_trap();
    gnomon::server::TraceSet counted;
    std::vector<std::vector<gnomon::server::ZoneStatistics>> streamed;
    const bool count = report.ok() && size % 2 == 1;
    if (count) {
      options.zone_memory_limit = 1;  // the zones counted, not held
      options.overview_runs = 256;
      options.use_summaries = size % 8 == 3;
      if (!gnomon::server::LoadTraceSet(source.value(), counted, options).ok()) __builtin_trap();
      // Half of those with their medians exact: equal to the held ones too.
      const auto medians = size % 4 == 1 ? gnomon::server::StreamedMedians::kExact
                                         : gnomon::server::StreamedMedians::kWithinBucket;
      // (From summaries, a block's damage is found only now: read from its summary again,
      // and said.)
      auto stats = gnomon::server::StreamZoneStatistics(source.value(), counted, options, medians);
      if (!options.use_summaries && (!stats.ok() || stats->size() != set.processes.size())) __builtin_trap();
      if (stats.ok()) streamed = std::move(stats.value());
      if (!options.use_summaries && counted.processes.size() != set.processes.size()) __builtin_trap();
    }
    std::ostringstream out;
    int64_t mapped = 0;
    for (size_t p = 0; p < set.processes.size(); ++p) {
      const gnomon::server::TraceModel& model = set.processes[p].model;
      gnomon::server::PrintSummary(model, out);
      const auto stats = gnomon::server::ComputeZoneStatistics(model);
      if (count && p < counted.processes.size()) {
        const gnomon::server::TraceModel& other = counted.processes[p].model;
        const bool equal = !options.use_summaries;
        if (equal && (streamed[p].size() != stats.size() || other.zone_count != model.zone_count ||
                      other.diagnostics != model.diagnostics))
          __builtin_trap();
        // The overview: within its budget (and the zone that passed it, when it stopped),
        // every zone counted in it once when it did not stop.
        uint64_t cost = 0, in_runs = 0, zones = 0;
        for (const auto& thread : other.threads) {
          cost += thread.overview.cost();
          zones += thread.zones_not_held;
          for (const auto& row : thread.overview.rows())
            for (const auto& run : row) in_runs += run.count;
        }
        if (cost > 256 + 4097 || (!other.overview_truncated && in_runs != zones)) __builtin_trap();
        // The whole trace as a window read from the file again: every zone, once.
        if (equal && !other.zone_blocks.empty() && other.first_tick <= other.last_tick) {
          auto window = gnomon::server::ReadZoneWindow(source.value(), other, other.first_tick,
                                                       other.last_tick, 64 * size, options);
          uint64_t in_window = 0;
          if (window.ok()) {
            for (const auto& [thread, rows] : window->threads)
              for (const auto& row : rows) in_window += row.size();
          }
          if (window.ok() && in_window != zones) __builtin_trap();
        }
        for (size_t i = 0; equal && i < stats.size(); ++i) {
          const auto& a = stats[i];
          const auto& b = streamed[p][i];
          if (a.count != b.count || a.total_ns != b.total_ns || a.min_ns != b.min_ns ||
              a.max_ns != b.max_ns || (size % 4 == 1 && a.median_ns != b.median_ns))
            __builtin_trap();
        }
        // The flame graph read from the file: the held one's paths, unless nested past
        // the depth held zones keep; Find zone on the busiest location: its statistics'
        // count and total.
        const gnomon::server::StreamedProgram program{counted.processes[p].stream, &other};
        auto flame = gnomon::server::StreamFlameGraph(source.value(), program, {}, options);
        const auto held_flame = gnomon::server::BuildFlameGraph(model, {});
        if (equal && held_flame.max_depth < gnomon::server::ZoneArray::kMaxDepth &&
            (!flame.ok() || flame->nodes.size() != held_flame.nodes.size() ||
             flame->nodes[0].total_ns != held_flame.nodes[0].total_ns))
          __builtin_trap();
        if (!stats.empty() && !other.zone_blocks.empty()) {
          auto found = gnomon::server::FindZonesInFile(
              source.value(), program, {.location = stats.front().source_location, .keep = 64}, options);
          if (equal && (!found.ok() || found->count != stats.front().count ||
                        found->durations.total_ns != stats.front().total_ns))
            __builtin_trap();
        }
      }
      gnomon::server::PrintStatisticsTable(model, stats, out);
      for (const auto& thread : model.threads)
        thread.zones.ForEachBlock([&](const void*, size_t bytes) { mapped += int64_t(bytes); });
    }
    const int64_t stream = report.ok() ? int64_t(report.value().raw_bytes) : 0;
    // Decompressed blocks, reused, grown by doubling; and each stream's model (about 2 KiB;
    // a block of a stream takes at least 41 bytes of the file).
    // (Held and counted: twice; the second pass's workers each hold a block besides.)
    const int64_t buffers = (streamed.empty() ? 4 : 12) * int64_t(kExpansion) * int64_t(size);
    if (gnomon::test::HeapPeakBytes() - heap_before + mapped > 64 * stream + buffers + (256 << 10))
      __builtin_trap();
  }
  return 0;
}
