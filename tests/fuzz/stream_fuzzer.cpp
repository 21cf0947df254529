// Fuzzes a whole session's message stream, GPU messages included, the way a live
// connection delivers it: in pieces of varying sizes (chosen by the input's first
// bytes), decoded into a TraceModel, then read by everything that reads models
// (statistics, the report, the Chrome export, the GPU mapping). No input may make the
// model, or reading it, take more than 64 bytes of heap (and zone blocks) per input
// byte, plus a fixed 64 KiB (docs/protocol.md#limits).
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <vector>

#include "../support/heap_counter.h"
#include "gnomon/server/chrome_export.h"
#include "gnomon/server/report.h"
#include "gnomon/server/statistics.h"
#include "model/trace_builder.h"

namespace {

// Takes what it is written and keeps none of it. The Chrome export repeats a zone's name
// on every zone, so its text can be hundreds of times the input (a name of a few KiB on
// a thousand zones): that is the export's size, written as it goes, not memory the
// model or the export holds, and the fuzzer's limit on one allocation is not for it.
class Discard : public std::streambuf {
 protected:
  std::streamsize xsputn(const char*, std::streamsize count) override { return count; }
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int64_t heap_before = gnomon::test::HeapBytes();
  gnomon::test::ResetHeapPeak();
  const int64_t allowed = 64 * int64_t(size) + (64 << 10);
  const size_t piece = 1 + (size_t(data[0]) << 8 | data[1]);
  data += 2;
  size -= 2;
  gnomon::server::TraceModel model;
  gnomon::server::TraceBuilder builder(model);
  std::vector<uint8_t> buffer;
  for (size_t pos = 0; pos < size;) {
    const size_t n = std::min(piece, size - pos);
    buffer.insert(buffer.end(), data + pos, data + pos + n);
    pos += n;
    const auto result = gnomon::server::DecodeMessages(buffer.data(), buffer.size(), builder);
    if (result.consumed > buffer.size()) __builtin_trap();
    if (result.failed) break;  // the connection would close here
    buffer.erase(buffer.begin(), buffer.begin() + ptrdiff_t(result.consumed));
  }
  (void)gnomon::server::DescribeTruncation(buffer.data(), buffer.size());
  const auto stats = gnomon::server::ComputeZoneStatistics(model);
  const auto gpu_stats = gnomon::server::ComputeGpuZoneStatistics(model);
  std::ostringstream out;
  gnomon::server::PrintSummary(model, out);
  gnomon::server::PrintStatisticsTable(model, stats, out);
  gnomon::server::PrintStatisticsTable(model, gpu_stats, out);
  out.str("");
  int64_t mapped = 0;
  for (const auto& thread : model.threads)
    thread.zones.ForEachBlock([&](const void*, size_t bytes) { mapped += int64_t(bytes); });
  if (gnomon::test::HeapPeakBytes() - heap_before + mapped > allowed)
    __builtin_trap();  // memory out of proportion
  Discard discard;
  std::ostream exported(&discard);
  gnomon::server::WriteChromeTrace(model, exported);
  for (const auto& [id, context] : model.gpu_contexts) {
    for (size_t i = 0; i < context.zones.size(); ++i) {
      if (!context.zones[i].is_timed()) continue;
      const auto mapped = model.MapGpuZone(context, context.zones[i]);
      if (mapped.end_ns < mapped.begin_ns) __builtin_trap();  // never a negative length
    }
  }
  return 0;
}
