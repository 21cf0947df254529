// Trace files for the tests of the writer, the index and the loader: a stream of every
// kind of event, one of perfectly regular zones, a file written from a stream, a file
// taken apart into its blocks (to be put together again in another order, or damaged),
// and bytes loaded as a file.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "build_model.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/server/trace_model.h"
#include "gnomon/tracefile/format.h"
#include "gnomon/tracefile/trace_writer.h"
#include "process.h"
#include "stream_writer.h"

namespace gnomon::test {

// A stream of several threads with nested, attributed zones and every other kind of event.
inline StreamWriter SampleStream(int zones_per_thread) {
  std::mt19937_64 rng(5);
  StreamWriter w;
  w.AppInfo("sample", 99);
  w.Calibration(0, 1000, 2000, 10).Calibration(1000000, 1001000, 1002000, 12);
  for (uint32_t id = 1; id <= 5; ++id)
    w.SourceLocation(id, "zone" + std::to_string(id), "fn", "file.cpp", id * 10);
  w.String(1, protocol::StringKind::kPlotName, "load");
  w.ZoneBegin(1, 5).ZoneEnd(6);  // before any thread: counted, not kept
  uint64_t tick = 1000;
  for (int i = 0; i < zones_per_thread; ++i) {
    for (uint32_t thread = 1; thread <= 3; ++thread) {
      w.ThreadContext(thread);
      w.ZoneBegin(1 + uint32_t(rng() % 5), tick);
      if (i % 7 == 0) w.ZoneText("text " + std::to_string(i));
      w.ZoneBegin(1 + uint32_t(rng() % 5), tick + 3).ZoneEnd(tick + 5 + rng() % 20);
      w.ZoneEnd(tick + 40);
      if (i == 3) {
        w.ZoneBegin(2, tick + 45).ZoneEnd(tick + 44);                        // an end before its begin
        w.ZoneBegin(3, tick + 45).ZoneEnd(tick + 45 + (uint64_t{1} << 33));  // longer than 32 bits of ticks
      }
      if (i % 50 == 0) w.Message(tick, 2, "message " + std::to_string(i)).Plot(1, tick, double(i));
      tick += 50;
    }
    if (i % 10 == 0) w.Frame(protocol::MessageType::kFrameMark, 0, tick);
  }
  w.ThreadInfo(2, 222, "worker").End(tick);
  return w;
}

// Every zone the same length and distance apart: a clock that never jitters.
inline StreamWriter RegularZones(int zones) {
  StreamWriter w;
  w.AppInfo("regular").ThreadContext(1);
  for (int i = 0; i < zones; ++i) w.ZoneBegin(1, uint64_t(i) * 100).ZoneEnd(uint64_t(i) * 100 + 50);
  return w;
}

// A program whose timer runs at 2.7 ticks a nanosecond: three threads of randomly
// nested zones (one location on most of them, beyond what a median is exact for),
// zones left open at the end, an end before its begin, a zone before any thread, a
// location never defined, and a thread switched to 0 (no thread) in the middle.
inline StreamWriter NestedZones(uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  StreamWriter w;
  w.AppInfo("nested", 7);
  w.Calibration(1'000, 500, 500, 5).Calibration(270'001'000, 100'000'500, 100'000'500, 5);
  for (uint32_t id = 1; id <= 6; ++id) w.SourceLocation(id, "loc" + std::to_string(id), "f", "n.cpp", id);
  w.ZoneBegin(1, 10).ZoneEnd(20);  // no thread yet: counted as such, in neither
  uint64_t tick = 5'000;
  std::vector<int> depth(4, 0);
  for (int i = 0; i < rounds; ++i) {
    const uint32_t thread = 1 + uint32_t(rng() % 3);
    w.ThreadContext(i == rounds / 2 ? 0 : thread);  // once, events without a thread
    for (int k = 0; k < 8; ++k) {
      tick += 1 + rng() % 5'000;
      const uint64_t roll = rng() % 10;
      if (roll < 4 || depth[thread] == 0) {
        // Location 1 most of the time; 6 is never defined; 9999 is past every definition.
        const uint32_t location = roll == 0 ? 9999 : roll == 1 ? 6 : roll < 4 ? 1 + uint32_t(rng() % 5) : 1;
        w.ZoneBegin(location, tick);
        ++depth[thread];
      } else {
        w.ZoneEnd(rng() % 500 == 0 ? tick - 4'000 : tick);  // now and then, an end before its begin
        --depth[thread];
      }
    }
  }
  w.ThreadContext(2).End(tick + 10);  // zones still open stay open
  return w;
}

// f(path) for every trace file under `folder` (tests/data: formats 1 to 8, one and several
// programs); how many there were.
template <typename F>
size_t ForEachTraceIn(const std::string& folder, F&& f) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (entry.path().extension() != ".gnomon") continue;
    CAPTURE(entry.path().string());
    f(entry.path().string());
    ++files;
  }
  return files;
}

// `w` written to "t.gnomon" in `dir` in blocks of `block_bytes`, with or without their
// summaries; the file's path.
inline std::string WriteTrace(const ScratchDir& dir, const StreamWriter& w, size_t block_bytes,
                              bool summaries = true) {
  const std::string path = dir.File("t.gnomon");
  tracefile::TraceWriterOptions options;
  options.block_raw_bytes = block_bytes;
  options.block_summaries = summaries;
  auto writer = tracefile::TraceWriter::Create(path, options);
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(tracefile::Overwrite::kYes).ok());
  AppendPieces(writer.value()->first_stream(), w);
  REQUIRE(writer.value()->Finish().ok());
  return path;
}

// A file of the current format taken apart: its header, each block (header and data) and
// its end marker, as bytes, to be put together again in another order.
struct FileParts {
  std::string header;
  std::vector<std::string> blocks;
  std::string end;
  std::string Join(const std::vector<std::string>& blocks_in_order, const std::string& tail = "") const {
    std::string all = header;
    for (const std::string& b : blocks_in_order) all += b;
    return all + tail;
  }
};

inline FileParts Split(const std::string& bytes) {
  FileParts parts;
  parts.header = bytes.substr(0, sizeof(tracefile::FileHeader));
  size_t at = sizeof(tracefile::FileHeader);
  while (at + sizeof(tracefile::BlockHeader) <= bytes.size()) {
    tracefile::BlockHeader h{};
    std::memcpy(&h, bytes.data() + at, sizeof(h));
    if (h.magic == tracefile::kEndMagic) {
      parts.end = bytes.substr(at, sizeof(h));
      break;
    }
    parts.blocks.push_back(bytes.substr(at, sizeof(h) + h.compressed_bytes));
    at += sizeof(h) + h.compressed_bytes;
  }
  return parts;
}

// Damages block `b` of the file at `path` in place: a byte of its zstd frame, not of its
// summary (the block no longer decompresses; its summary still reads). How many blocks
// the file has (more than b + 3).
inline size_t DamageBlockFrame(const std::string& path, size_t b) {
  FileParts parts = Split(ReadFile(path));
  REQUIRE(parts.blocks.size() > b + 3);
  parts.blocks[b][sizeof(tracefile::BlockHeader) + 9] ^= 0x55;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << parts.Join(parts.blocks, parts.end);
  return parts.blocks.size();
}

struct Loaded {
  server::TraceModel model;
  server::LoadReport report;
};

// `bytes` written to a file in `dir` and loaded; the load must succeed.
inline Loaded LoadBytes(const ScratchDir& dir, const std::string& bytes,
                        const server::LoadOptions& options = {}) {
  const std::string path = dir.File("variant.gnomon");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Loaded loaded;
  auto report = server::LoadTrace(path, loaded.model, options);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  loaded.report = report.value();
  return loaded;
}

}  // namespace gnomon::test
