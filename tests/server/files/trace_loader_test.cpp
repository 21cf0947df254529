#include "gnomon/server/trace_loader.h"

#include <doctest/doctest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "../../support/build_model.h"
#include "../../support/heap_counter.h"
#include "../../support/mappings.h"
#include "../../support/process.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/trace_writer.h"
#include "model/trace_builder.h"

using namespace gnomon::server;
using namespace gnomon::tracefile;
using gnomon::test::AppendPieces;
using gnomon::test::ScratchDir;
using gnomon::test::StreamWriter;

namespace {

// A stream of several threads with nested, attributed zones and every other kind of event.
StreamWriter SampleStream(int zones_per_thread) {
  std::mt19937_64 rng(5);
  StreamWriter w;
  w.AppInfo("sample", 99);
  w.Calibration(0, 1000, 2000, 10).Calibration(1000000, 1001000, 1002000, 12);
  for (uint32_t id = 1; id <= 5; ++id)
    w.SourceLocation(id, "zone" + std::to_string(id), "fn", "file.cpp", id * 10);
  w.String(1, gnomon::protocol::StringKind::kPlotName, "load");
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
    if (i % 10 == 0) w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
  }
  w.ThreadInfo(2, 222, "worker").End(tick);
  return w;
}

// Every zone the same length and distance apart: a clock that never jitters.
StreamWriter RegularZones(int zones) {
  StreamWriter w;
  w.AppInfo("regular").ThreadContext(1);
  for (int i = 0; i < zones; ++i) w.ZoneBegin(1, uint64_t(i) * 100).ZoneEnd(uint64_t(i) * 100 + 50);
  return w;
}

TraceModel BuildDirect(const StreamWriter& w) { return gnomon::test::BuildModel(w); }

std::string WriteTrace(const ScratchDir& dir, const StreamWriter& w, size_t block_bytes) {
  const std::string path = dir.File("t.gnomon");
  TraceWriterOptions options;
  options.block_raw_bytes = block_bytes;
  auto writer = TraceWriter::Create(path, options);
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
  AppendPieces(writer.value()->first_stream(), w);
  REQUIRE(writer.value()->Finish().ok());
  return path;
}

void WritePrefix(const std::string& from, const std::string& to, size_t bytes) {
  const std::string all = gnomon::test::ReadFile(from);
  std::ofstream(to, std::ios::binary).write(all.data(), std::streamsize(std::min(bytes, all.size())));
}

// A writer of many small blocks, three compressing them: writing goes on while a test
// appends.
std::unique_ptr<TraceWriter> BusyWriter(const std::string& path) {
  TraceWriterOptions options;
  options.block_raw_bytes = 16 * 1024;
  options.compress_threads = 3;
  auto writer = TraceWriter::Create(path, options);
  REQUIRE(writer.ok());
  return std::move(writer.value());
}

// The stream cut into pieces of whole messages, each about want(pieces so far) bytes
// (a piece is smaller to end at a message, or bigger to hold one): offset, size.
template <typename Want>
std::vector<std::pair<size_t, size_t>> WholeMessagePieces(const StreamWriter& w, Want&& want) {
  std::vector<std::pair<size_t, size_t>> pieces;
  for (size_t pos = 0; pos < w.size();) {
    gnomon::server::NullHandler ignore;
    const size_t wanted = want(pieces.size());
    const auto decoded = DecodeMessages(w.data() + pos, std::min(wanted, w.size() - pos), ignore);
    const size_t take = decoded.consumed > 0 ? decoded.consumed : w.size() - pos;
    pieces.emplace_back(pos, take);
    pos += take;
  }
  return pieces;
}

}  // namespace

TEST_CASE("save then load gives back the identical model, zone by zone") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(3000);
  const TraceModel direct = BuildDirect(stream);
  const std::string path = WriteTrace(dir, stream, 16 * 1024);
  TraceModel loaded;
  auto report = LoadTrace(path, loaded);
  REQUIRE(report.ok());
  CHECK(report->warning.empty());
  CHECK(report->blocks > 5);
  CHECK(report->raw_bytes == stream.size());
  CHECK(loaded.zone_count == 18006);
  CHECK(DescribeFirstDifference(direct, loaded) == "");
}

TEST_CASE("several programs in one file: streams appended from their own threads load each into its model") {
  ScratchDir dir;
  StreamWriter first = SampleStream(2000);
  StreamWriter second;
  second.AppInfo("second", 7);
  second.Calibration(0, 1000, 2000, 10).SourceLocation(1, "other", "fn", "b.cpp", 3);
  for (uint64_t i = 0; i < 50'000; ++i) {
    if (i % 1000 == 0) second.ThreadContext(9);  // as a program names its thread at each batch
    second.ZoneBegin(1, 10 * i).ZoneEnd(10 * i + 5);
  }
  second.End(500'000);
  TraceWriterOptions options;
  options.block_raw_bytes = 8 * 1024;  // many blocks of each stream, interleaved
  const std::string path = dir.File("two.gnomon");
  {
    auto writer = TraceWriter::Create(path, options);
    REQUIRE(writer.ok());
    TraceWriter::Stream& a = writer.value()->first_stream();
    TraceWriter::Stream& b = writer.value()->AddStream();
    CHECK(b.id() == 1);
    std::thread other([&] { AppendPieces(b, second); });
    AppendPieces(a, first);
    other.join();
    CHECK(writer.value()->stream_count() == 2);
    CHECK(writer.value()->raw_bytes() == first.size() + second.size());
    REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
    REQUIRE(writer.value()->Finish().ok());
  }
  TraceSet set;
  auto report = LoadTraceSet(path, set);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  CHECK(report->warning.empty());
  CHECK(report->raw_bytes == first.size() + second.size());
  REQUIRE(set.processes.size() == 2);
  CHECK(set.processes[0].stream == 0);
  CHECK(set.processes[1].stream == 1);
  CHECK(DescribeFirstDifference(BuildDirect(first), set.processes[0].model) == "");
  CHECK(DescribeFirstDifference(BuildDirect(second), set.processes[1].model) == "");
  CHECK(set.processes[1].model.zone_count == 50'000);

  // One model: the first program, and a warning that there are more.
  TraceModel one;
  auto single = LoadTrace(path, one);
  REQUIRE(single.ok());
  CHECK(single->warning.find("it holds 2 programs; only the first is loaded here") != std::string::npos);
  CHECK(single->programs == 2);
  CHECK(DescribeFirstDifference(BuildDirect(first), one) == "");
  // Any one of them, by its place.
  LoadOptions pick;
  pick.program = 1;
  TraceModel other;
  auto picked = LoadTrace(path, other, pick);
  REQUIRE(picked.ok());
  CHECK(picked->warning.find("it holds 2 programs; program 2 is loaded here") != std::string::npos);
  CHECK(DescribeFirstDifference(BuildDirect(second), other) == "");
  pick.program = 2;
  TraceModel none;
  auto beyond = LoadTrace(path, none, pick);
  REQUIRE(beyond.ok());
  CHECK(beyond->warning.find("there is no program 3, so nothing was loaded") != std::string::npos);
  CHECK(none.zone_count == 0);

  // A block of the second stream lost: the first loads whole, the second around the gap.
  const std::string bytes = gnomon::test::ReadFile(path);
  std::string damaged = bytes.substr(0, sizeof(FileHeader));
  size_t at = sizeof(FileHeader);
  int dropped = 0;
  while (at + sizeof(BlockHeader) <= bytes.size()) {
    BlockHeader h{};
    std::memcpy(&h, bytes.data() + at, sizeof(h));
    const size_t size = sizeof(h) + (h.magic == kEndMagic ? 0 : h.compressed_bytes);
    if (h.magic == kBlockMagic && h.stream == 1 && dropped == 0 && h.sequence > 5) {
      ++dropped;
    } else {
      damaged += bytes.substr(at, size);
    }
    at += size;
  }
  REQUIRE(dropped == 1);
  const std::string damaged_path = dir.File("damaged.gnomon");
  std::ofstream(damaged_path, std::ios::binary) << damaged;
  TraceSet partial;
  auto damaged_report = LoadTraceSet(damaged_path, partial);
  REQUIRE(damaged_report.ok());
  CHECK(damaged_report->anomalies.missing_blocks == 1);
  REQUIRE(partial.processes.size() == 2);
  CHECK(DescribeFirstDifference(BuildDirect(first), partial.processes[0].model) == "");
  CHECK(partial.processes[1].model.zone_count < 50'000);
  CHECK(partial.processes[1].model.zone_count > 40'000);
}

TEST_CASE("a trace loads from bytes in memory as from its file, whole or cut, and into a model others read") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(3000);
  const std::string path = WriteTrace(dir, stream, 16 * 1024);
  const std::string bytes = gnomon::test::ReadFile(path);
  TraceModel from_file;
  REQUIRE(LoadTrace(path, from_file).ok());
  TraceModel from_memory;
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  auto report = LoadTrace(TraceSource::FromBytes(data, bytes.size(), "the test's bytes"), from_memory);
  REQUIRE(report.ok());
  CHECK(report->warning.empty());
  CHECK(DescribeFirstDifference(from_file, from_memory) == "");

  TraceModel cut;
  auto cut_report = LoadTrace(TraceSource::FromBytes(data, bytes.size() - 100, "the test's bytes"), cut);
  REQUIRE(cut_report.ok());
  CHECK(cut_report->warning.find("the test's bytes: ") == 0);
  CHECK(cut.zone_count < from_file.zone_count);
  CHECK_FALSE(LoadTrace(TraceSource::FromBytes(data, 10), cut).ok());

  // Readers see the model grow block by block while it loads.
  SharedModel shared;
  std::atomic<bool> done{false};
  std::vector<uint64_t> seen;
  std::thread reader([&] {
    while (!done) seen.push_back(shared.Read([](const TraceModel& m) { return m.zone_count; }));
  });
  auto source = TraceSource::OpenFile(path);
  REQUIRE(source.ok());
  REQUIRE(LoadTrace(source.value(), shared).ok());
  done = true;
  reader.join();
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(DescribeFirstDifference(from_file, shared.unshared()) == "");
}

TEST_CASE("a leaf zone built in one step equals its begin and end built one at a time") {
  // Whole-stream decoding builds a begin followed at once by its end in one step
  // (OnLeafZone); fed one message per call, the builder sees the two calls.
  const StreamWriter stream = SampleStream(300);
  const TraceModel at_once = BuildDirect(stream);
  TraceModel one_by_one;
  TraceBuilder builder(one_by_one);
  size_t pos = 0;
  while (pos < stream.size()) {
    const uint8_t* p = stream.data() + pos;
    const size_t size = gnomon::protocol::MeasureMessage(p, stream.size() - pos).size;
    REQUIRE(DecodeMessages(p, size, builder).consumed == size);
    pos += size;
  }
  CHECK(one_by_one.diagnostics.clamped_zone_ends == 3);
  CHECK(one_by_one.diagnostics.events_without_thread == 2);
  CHECK(DescribeFirstDifference(at_once, one_by_one) == "");
}

TEST_CASE("a file cut at any byte loads up to its last whole block, with a warning") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(400);
  const std::string path = WriteTrace(dir, stream, 4 * 1024);
  const size_t full = gnomon::test::ReadFile(path).size();
  uint64_t previous_zones = 0;
  for (size_t cut = 0; cut < full; cut += 97) {
    const std::string cut_path = dir.File("cut.gnomon");
    WritePrefix(path, cut_path, cut);
    TraceModel model;
    auto report = LoadTrace(cut_path, model);
    if (cut < sizeof(FileHeader)) {
      CHECK_FALSE(report.ok());
      continue;
    }
    REQUIRE_MESSAGE(report.ok(), "cut at ", cut);
    CHECK_MESSAGE(!report->warning.empty(), "cut at ", cut);
    CHECK(model.zone_count >= previous_zones);
    CHECK(model.zone_count <= 2406);
    previous_zones = model.zone_count;
  }
  CHECK(previous_zones > 2000);
}

TEST_CASE("damaged and foreign files are rejected or cut short with a clear message") {
  ScratchDir dir;
  const std::string path = WriteTrace(dir, SampleStream(400), 4 * 1024);
  std::string bytes = gnomon::test::ReadFile(path);

  SUBCASE("not a trace") {
    std::ofstream(dir.File("x"), std::ios::binary) << "hello, this is not a trace file at all";
    TraceModel model;
    auto report = LoadTrace(dir.File("x"), model);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("not a Gnomon trace") != std::string::npos);
  }
  SUBCASE("missing file") {
    TraceModel model;
    auto report = LoadTrace(dir.File("absent"), model);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("cannot open") != std::string::npos);
  }
  SUBCASE("a newer format") {
    bytes[8] = 9;
    std::ofstream(dir.File("new"), std::ios::binary) << bytes;
    TraceModel model;
    auto report = LoadTrace(dir.File("new"), model);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().message().find("newer Gnomon") != std::string::npos);
  }
  SUBCASE("a flipped byte inside a compressed block") {
    bytes[bytes.size() / 2] ^= 0x5A;
    std::ofstream(dir.File("bad"), std::ios::binary) << bytes;
    TraceModel model;
    auto report = LoadTrace(dir.File("bad"), model);
    REQUIRE(report.ok());
    // That block is skipped; the blocks after it still load.
    CHECK(report->warning.find("does not decompress") != std::string::npos);
    CHECK(report->anomalies.damaged_blocks == 1);
    CHECK(model.zone_count > 2000);
    CHECK(model.zone_count < 2406);
  }
  SUBCASE("a format-3 record that cannot be read, inside a sound block") {
    // A block whose zstd frame is fine but whose compact records end in a varint that
    // is cut short: the zones before it load, and the warning says what and where.
    StreamWriter w;
    w.ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(150).ZoneBegin(1, 200).ZoneEnd(260);
    std::vector<uint8_t> compact(CompactBound(w.size()));
    uint64_t previous = 0;
    compact.resize(CompactMessages(w.data(), w.size(), compact.data(), previous));
    compact.insert(compact.end(), {uint8_t(gnomon::protocol::MessageType::kZoneBegin), 0x81});
    std::vector<uint8_t> frame(ZSTD_compressBound(compact.size()));
    frame.resize(ZSTD_compress(frame.data(), frame.size(), compact.data(), compact.size(), 1));
    FileHeader header{};
    std::memcpy(header.magic, kTraceMagic, sizeof(kTraceMagic));
    header.format_version = 3;
    header.header_bytes = sizeof(FileHeader);
    BlockHeaderV1 block{kBlockMagic, uint32_t(compact.size()), uint32_t(frame.size()), 0};
    block.header_check = BlockHeaderCheck(block);
    BlockHeaderV1 end{kEndMagic, 0, 0, 0};
    end.header_check = BlockHeaderCheck(end);
    std::ofstream out(dir.File("record"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(&header), sizeof(header));
    out.write(reinterpret_cast<const char*>(&block), sizeof(block));
    out.write(reinterpret_cast<const char*>(frame.data()), std::streamsize(frame.size()));
    out.write(reinterpret_cast<const char*>(&end), sizeof(end));
    out.close();
    TraceModel model;
    auto report = LoadTrace(dir.File("record"), model);
    REQUIRE(report.ok());
    CHECK(report->warning.find("cut short") != std::string::npos);
    CHECK(model.zone_count == 2);
    CHECK(model.threads.at(0).zones[1].end_tick == 260);
  }
  SUBCASE("refusing to overwrite") {
    const std::string before = gnomon::test::ReadFile(path);
    auto writer = TraceWriter::Create(path);
    REQUIRE(writer.ok());
    const Status published = writer.value()->Publish(Overwrite::kNo);
    REQUIRE_FALSE(published.ok());
    CHECK(published.message().find("already exists") != std::string::npos);
    CHECK(gnomon::test::ReadFile(path) == before);
  }
}

TEST_CASE("the H200 capture kept in tests/data still loads, GPU zones and all") {
  TraceModel model;
  auto report = LoadTrace(std::string(GNOMON_DATA_DIR) + "/h200_vulkan_demo.gnomon", model);
  REQUIRE(report.ok());
  CHECK(report->warning.empty());
  CHECK(model.program.name == "gnomon-vulkan-demo");
  CHECK(model.zone_count == 4000);
  REQUIRE(model.gpu_contexts.size() == 1);
  const auto& gpu = model.gpu_contexts.begin()->second;
  CHECK(gpu.label() == "compute queue");
  CHECK(gpu.device_name == "NVIDIA H200");
  CHECK(gpu.zones.size() == 3100);
  for (size_t i = 0; i < gpu.zones.size(); ++i) REQUIRE(gpu.zones[i].is_timed());
  CHECK(model.diagnostics.ended_cleanly);
}

TEST_CASE("freeing a loaded trace frees exactly what it holds, whatever the kernel put in the holes") {
  // Each thread's last 2 MiB block is trimmed after the load; the kernel may hand the
  // trimmed range to anyone. Threads of more than 8,192 zones have such blocks.
  ScratchDir dir;
  std::mt19937_64 rng(9);  // a real clock's jitter: a stream of equal steps would be absurdly compressible
  StreamWriter w;
  w.AppInfo("holes");
  for (uint32_t thread = 1; thread <= 2; ++thread) {
    w.ThreadContext(thread);
    for (uint64_t i = 0; i < 8192 + 5000; ++i)
      w.ZoneBegin(1, i * 100 + rng() % 8).ZoneEnd(i * 100 + 60 + rng() % 8);
  }
  w.End(2'000'000);
  const std::string path = WriteTrace(dir, w, 1 << 20);
  std::vector<std::unique_ptr<gnomon::test::PlantedMapping>> planted;
  {
    TraceModel model;
    auto report = LoadTrace(path, model);
    REQUIRE(report.ok());
    REQUIRE(model.zone_count == 2 * (8192 + 5000));
    for (const ThreadTimeline& thread : model.threads) {
      thread.zones.ForEachBlock([&](const void* base, size_t mapped) {
        REQUIRE(mapped < chunk_memory::kBlockBytes);
        auto* hole = const_cast<char*>(static_cast<const char*>(base)) + mapped;
        planted.push_back(
            std::make_unique<gnomon::test::PlantedMapping>(hole, chunk_memory::kBlockBytes - mapped));
        REQUIRE(planted.back()->ok());
      });
    }
    CHECK(planted.size() == 2);
  }
  for (const auto& mapping : planted) CHECK(mapping->is_intact());
}

namespace {

// A format-4 file taken apart: its header, each block (header and data) and its end
// marker, as bytes, to be put together again in another order.
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

FileParts Split(const std::string& bytes) {
  FileParts parts;
  parts.header = bytes.substr(0, sizeof(FileHeader));
  size_t at = sizeof(FileHeader);
  while (at + sizeof(BlockHeader) <= bytes.size()) {
    BlockHeader h{};
    std::memcpy(&h, bytes.data() + at, sizeof(h));
    if (h.magic == kEndMagic) {
      parts.end = bytes.substr(at, sizeof(h));
      break;
    }
    parts.blocks.push_back(bytes.substr(at, sizeof(h) + h.compressed_bytes));
    at += sizeof(h) + h.compressed_bytes;
  }
  return parts;
}

struct Loaded {
  TraceModel model;
  LoadReport report;
};

Loaded LoadBytes(const ScratchDir& dir, const std::string& bytes, const LoadOptions& options = {}) {
  const std::string path = dir.File("variant.gnomon");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  Loaded loaded;
  auto report = LoadTrace(path, loaded.model, options);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  loaded.report = report.value();
  return loaded;
}

}  // namespace

TEST_CASE(
    "blocks repeated, swapped, lost, or followed by an end marker or junk: each found, counted and said") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(400);
  const TraceModel direct = BuildDirect(stream);
  const FileParts parts = Split(gnomon::test::ReadFile(WriteTrace(dir, stream, 2 * 1024)));
  REQUIRE(parts.blocks.size() > 8);
  REQUIRE(parts.end.size() == sizeof(BlockHeader));
  std::vector<std::string> blocks = parts.blocks;

  SUBCASE("sound") {
    const Loaded sound = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(sound.report.warning.empty());
    CHECK_FALSE(sound.report.anomalies.any());
    CHECK(DescribeFirstDifference(direct, sound.model) == "");
  }
  SUBCASE("a block repeated: loaded once") {
    blocks.insert(blocks.begin() + 4, blocks[3]);
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(loaded.report.anomalies.duplicate_blocks == 1);
    CHECK(loaded.report.warning.find("repeats block 3") != std::string::npos);
    CHECK(DescribeFirstDifference(direct, loaded.model) == "");  // no zone that never happened
  }
  SUBCASE("two blocks swapped: loaded in their order") {
    std::swap(blocks[2], blocks[5]);
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(loaded.report.anomalies.reordered_blocks >= 1);
    CHECK(loaded.report.anomalies.missing_blocks == 0);
    CHECK(loaded.report.warning.find("comes before blocks it follows") != std::string::npos);
    CHECK(DescribeFirstDifference(direct, loaded.model) == "");
  }
  SUBCASE("an end marker in the middle, blocks after it: all loaded, the marker reported") {
    std::vector<std::string> with_marker = blocks;
    with_marker.insert(with_marker.begin() + 3, parts.end);
    const Loaded loaded = LoadBytes(dir, parts.Join(with_marker, parts.end));
    CHECK(loaded.report.anomalies.misplaced_end_markers >= 1);
    CHECK(loaded.report.warning.find("has blocks after it") != std::string::npos);
    CHECK(DescribeFirstDifference(direct, loaded.model) == "");
  }
  SUBCASE("bytes after the end marker") {
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end + "trailing junk, 31 bytes of it!!"));
    CHECK(loaded.report.anomalies.trailing_bytes == 31);
    CHECK(loaded.report.warning.find("31 byte(s) after the end marker") != std::string::npos);
    CHECK(DescribeFirstDifference(direct, loaded.model) == "");
  }
  SUBCASE("a block lost: the rest loads, the gap is counted, no event lands on the wrong thread") {
    blocks.erase(blocks.begin() + 4);
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(loaded.report.anomalies.missing_blocks == 1);
    CHECK(loaded.report.warning.find("1 block(s) missing before block 5") != std::string::npos);
    CHECK(loaded.model.zone_count < direct.zone_count);
    CHECK(loaded.model.zone_count > direct.zone_count * 3 / 4);
    CHECK(loaded.model.threads.size() == direct.threads.size());
  }
  SUBCASE("the last blocks lost: the end marker's count says so") {
    blocks.resize(blocks.size() - 2);
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(loaded.report.anomalies.missing_blocks == 2);
    CHECK(loaded.report.warning.find("the last 2 are missing") != std::string::npos);
  }
  SUBCASE("a damaged block header: skipped, and loading goes on at the next block") {
    blocks[3][5] ^= 0x40;  // its sequence: the header check no longer matches
    const Loaded loaded = LoadBytes(dir, parts.Join(blocks, parts.end));
    CHECK(loaded.report.anomalies.damaged_bytes == blocks[3].size());
    CHECK(loaded.report.anomalies.missing_blocks == 1);
    CHECK(loaded.report.warning.find("hold no readable block header; skipped to the next block") !=
          std::string::npos);
    CHECK(loaded.model.zone_count > direct.zone_count * 3 / 4);
  }
}

TEST_CASE("a block of perfectly regular zones is padded within half the loader's limit, and loads whole") {
  ScratchDir dir;
  const StreamWriter w = RegularZones(180'000);
  const std::string bytes = gnomon::test::ReadFile(WriteTrace(dir, w, 256 << 10));
  const FileParts parts = Split(bytes);
  REQUIRE(parts.blocks.size() >= 12);  // the first few decompressed in steps, the others in one call
  int padded = 0;
  for (const std::string& block : parts.blocks) {
    BlockHeader h{};
    std::memcpy(&h, block.data(), sizeof(h));
    CHECK(uint64_t(h.raw_bytes) <= uint64_t(kWriterMaxExpansion) * h.compressed_bytes);
    const uint8_t* data = reinterpret_cast<const uint8_t*>(block.data()) + sizeof(h);
    const size_t frame = ZSTD_findFrameCompressedSize(data, h.compressed_bytes);
    REQUIRE(!ZSTD_isError(frame));
    if (frame == h.compressed_bytes) continue;
    ++padded;
    uint32_t magic = 0, content = 0;  // a skippable frame, the rest of the block
    std::memcpy(&magic, data + frame, 4);
    std::memcpy(&content, data + frame + 4, 4);
    CHECK(magic == kSkippableFrameMagic);
    CHECK(frame + kSkippableFrameHeader + content == h.compressed_bytes);
    CHECK(uint64_t(h.raw_bytes) >
          uint64_t(kWriterMaxExpansion - 16) * h.compressed_bytes);  // no more than needed
  }
  CHECK(padded >= 2);
  const Loaded loaded = LoadBytes(dir, bytes);
  CHECK(loaded.report.warning.empty());
  CHECK(loaded.report.anomalies.rejected_blocks == 0);
  CHECK(loaded.model == BuildDirect(w));
  CHECK(loaded.model.zone_count == 180'000);

  // More after a frame than one padding frame is damage, however the block is
  // decompressed: two more empty skippable frames after each block of the second half
  // (whose buffers, reused, take them in one call).
  std::vector<std::string> extended;
  for (size_t i = 0; i < parts.blocks.size(); ++i) {
    const std::string& block = parts.blocks[i];
    if (i < parts.blocks.size() / 2) {
      extended.push_back(block);
      continue;
    }
    BlockHeader h{};
    std::memcpy(&h, block.data(), sizeof(h));
    const BlockHeader longer = MakeBlockHeader(kBlockMagic, h.sequence, h.raw_bytes, h.compressed_bytes + 16,
                                               h.stream, h.stream_sequence);
    std::string empty_frames(16, '\0');
    for (size_t at : {size_t(0), size_t(8)}) std::memcpy(empty_frames.data() + at, &kSkippableFrameMagic, 4);
    extended.push_back(std::string(reinterpret_cast<const char*>(&longer), sizeof(longer)) +
                       block.substr(sizeof(h)) + empty_frames);
  }
  const Loaded damaged = LoadBytes(dir, parts.Join(extended, parts.end));
  CHECK(damaged.report.anomalies.damaged_blocks == parts.blocks.size() - parts.blocks.size() / 2);
  CHECK(damaged.report.warning.find("bytes follow its frame") != std::string::npos);
}

TEST_CASE("a decompression bomb is refused with a clear error; a trusted file loads with a higher limit") {
  // Every zone the same: zstd packs millions into a few hundred bytes, which no capture
  // from a real clock ever does. The writer pads such a block; without its padding it is
  // a bomb.
  ScratchDir dir;
  const std::string padded = gnomon::test::ReadFile(WriteTrace(dir, RegularZones(180'000), 4 << 20));
  const FileParts parts = Split(padded);
  REQUIRE(parts.blocks.size() == 1);
  BlockHeader h{};
  std::memcpy(&h, parts.blocks[0].data(), sizeof(h));
  const size_t frame = ZSTD_findFrameCompressedSize(parts.blocks[0].data() + sizeof(h), h.compressed_bytes);
  REQUIRE(!ZSTD_isError(frame));
  REQUIRE(h.raw_bytes > 1024 * frame);
  const BlockHeader unpadded = MakeBlockHeader(kBlockMagic, 0, h.raw_bytes, uint32_t(frame));
  std::string bytes = parts.header;
  bytes.append(reinterpret_cast<const char*>(&unpadded), sizeof(unpadded))
      .append(parts.blocks[0].substr(sizeof(h), frame))
      .append(parts.end);
  h = unpadded;
  const int64_t heap_before = gnomon::test::HeapBytes();
  gnomon::test::ResetHeapPeak();
  const Loaded refused = LoadBytes(dir, bytes);
  CHECK(gnomon::test::HeapPeakBytes() - heap_before < int64_t(64 * bytes.size() + (256 << 10)));
  CHECK(refused.model.zone_count == 0);
  CHECK(refused.report.anomalies.rejected_blocks == 1);
  CHECK(refused.report.warning.find("never expands more than 1024 times") != std::string::npos);
  CHECK(refused.report.warning.find("--max-expansion") != std::string::npos);
  LoadOptions trusting;
  trusting.max_expansion = 1'000'000;
  CHECK(LoadBytes(dir, bytes, trusting).model.zone_count == 180'000);

  // A header that claims 64 MiB from a few bytes of data is refused before anything is
  // allocated for it; one whose frame says otherwise than its header is damaged.
  std::string lying = parts.header;
  const std::string junk(200, 'x');
  const BlockHeader claim = MakeBlockHeader(kBlockMagic, 0, 64u << 20, uint32_t(junk.size()));
  lying.append(reinterpret_cast<const char*>(&claim), sizeof(claim)).append(junk);
  const Loaded lied = LoadBytes(dir, lying);
  CHECK(lied.report.anomalies.rejected_blocks == 1);
  std::string short_claim = parts.header;
  const BlockHeader smaller = MakeBlockHeader(kBlockMagic, 0, h.raw_bytes / 2, h.compressed_bytes);
  short_claim.append(reinterpret_cast<const char*>(&smaller), sizeof(smaller))
      .append(parts.blocks[0].substr(sizeof(h), frame));
  const Loaded mismatched = LoadBytes(dir, short_claim, trusting);
  CHECK(mismatched.report.anomalies.damaged_blocks == 1);
  CHECK(mismatched.report.warning.find("its frame holds") != std::string::npos);
}

TEST_CASE("a frame that asks for a window larger than its block is refused before zstd allocates it") {
  // The same block, compressed again as a stream of unknown size with a 128 MiB window:
  // zstd would allocate the window before decoding a byte.
  ScratchDir dir;
  const std::string bytes = gnomon::test::ReadFile(WriteTrace(dir, SampleStream(200), 4 << 20));
  const FileParts parts = Split(bytes);
  REQUIRE(parts.blocks.size() == 1);
  BlockHeader h{};
  std::memcpy(&h, parts.blocks[0].data(), sizeof(h));
  std::string raw(h.raw_bytes, '\0');
  REQUIRE(ZSTD_decompress(raw.data(), raw.size(), parts.blocks[0].data() + sizeof(h), h.compressed_bytes) ==
          raw.size());
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, 27);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::string frame(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_inBuffer in{raw.data(), raw.size(), 0};
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  REQUIRE(!ZSTD_isError(ZSTD_compressStream2(cctx.get(), &out, &in, ZSTD_e_continue)));
  REQUIRE(ZSTD_compressStream2(cctx.get(), &out, &in, ZSTD_e_end) == 0);
  frame.resize(out.pos);
  REQUIRE(ZSTD_getFrameContentSize(frame.data(), frame.size()) == ZSTD_CONTENTSIZE_UNKNOWN);
  REQUIRE(ZSTD_decompress(raw.data(), raw.size(), frame.data(), frame.size()) ==
          raw.size());  // a sound frame

  std::string wide = parts.header;
  const BlockHeader header = MakeBlockHeader(kBlockMagic, 0, h.raw_bytes, uint32_t(frame.size()));
  wide.append(reinterpret_cast<const char*>(&header), sizeof(header)).append(frame).append(parts.end);
  const Loaded loaded = LoadBytes(dir, wide);
  CHECK(loaded.model.zone_count == 0);
  CHECK(loaded.report.anomalies.damaged_blocks == 1);
  CHECK(loaded.report.warning.find("too much memory") != std::string::npos);
}

TEST_CASE("only regular files are read: a FIFO, a folder or a device is refused at once") {
  ScratchDir dir;
  REQUIRE(mkfifo(dir.File("fifo").c_str(), 0600) == 0);
  TraceModel model;
  auto fifo = LoadTrace(dir.File("fifo"), model);  // would block forever waiting for a writer
  REQUIRE_FALSE(fifo.ok());
  CHECK(fifo.status().message().find("is a FIFO, not a trace file") != std::string::npos);
  auto folder = LoadTrace(dir.path(), model);
  REQUIRE_FALSE(folder.ok());
  CHECK(folder.status().message().find("is a folder") != std::string::npos);
  auto device = LoadTrace("/dev/zero", model);
  REQUIRE_FALSE(device.ok());
  CHECK(device.status().message().find("is a device") != std::string::npos);
}

TEST_CASE("several compressing threads: every stream loads whole, its blocks in the file in the order cut") {
  ScratchDir dir;
  std::vector<StreamWriter> streams;
  for (uint32_t s = 0; s < 3; ++s) {
    StreamWriter w;
    w.AppInfo("program " + std::to_string(s), 100 + s);
    w.Calibration(0, 1000, 2000, 10).SourceLocation(1, "zone", "fn", "a.cpp", 3);
    for (uint64_t i = 0; i < 40'000; ++i) {
      if (i % 500 == 0) w.ThreadContext(1 + s);
      w.ZoneBegin(1, 10 * i + s).ZoneEnd(10 * i + 5 + s);
    }
    w.End(400'000);
    streams.push_back(std::move(w));
  }
  TraceWriterOptions options;
  options.block_raw_bytes = 4 * 1024;  // hundreds of blocks, compressed four at a time
  options.compress_threads = 4;
  const std::string path = dir.File("parallel.gnomon");
  {
    auto writer = TraceWriter::Create(path, options);
    REQUIRE(writer.ok());
    std::vector<TraceWriter::Stream*> targets{&writer.value()->first_stream()};
    targets.push_back(&writer.value()->AddStream());
    targets.push_back(&writer.value()->AddStream());
    std::vector<std::thread> appenders;
    for (size_t s = 0; s < 3; ++s) appenders.emplace_back([&, s] { AppendPieces(*targets[s], streams[s]); });
    for (std::thread& t : appenders) t.join();
    REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
    REQUIRE(writer.value()->Finish().ok());
  }
  TraceSet set;
  auto report = LoadTraceSet(path, set);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  CHECK(report->warning.empty());  // no block reordered, missing or repeated
  CHECK(!report->anomalies.any());
  CHECK(report->blocks > 300);
  REQUIRE(set.processes.size() == 3);
  for (size_t s = 0; s < 3; ++s) {
    CHECK(DescribeFirstDifference(BuildDirect(streams[s]), set.processes[s].model) == "");
  }
  // The blocks' sequence numbers, read in file order, count up from 0 without a gap.
  const std::string bytes = gnomon::test::ReadFile(path);
  size_t at = sizeof(FileHeader);
  uint32_t expected = 0;
  while (at + sizeof(BlockHeader) <= bytes.size()) {
    BlockHeader header;
    std::memcpy(&header, bytes.data() + at, sizeof(header));
    CHECK(header.sequence == expected);
    if (header.magic == kEndMagic) break;
    ++expected;
    at += sizeof(header) + header.compressed_bytes;
  }
  CHECK(expected == report->blocks);
}

TEST_CASE("a piece bigger than a block may be is split between messages") {
  ScratchDir dir;
  StreamWriter w;
  w.AppInfo("big", 5).Calibration(0, 1000, 2000, 10);
  for (uint32_t id = 1; id <= 4; ++id) w.SourceLocation(id, "zone", "fn", "a.cpp", id);
  w.ThreadContext(1);
  std::mt19937_64 rng(7);
  uint64_t tick = 0;
  while (w.size() < (50u << 20)) {  // ticks as a real loop's: compressed past 1024 times a block is refused
    const uint64_t begin = tick + 30 + rng() % 64;
    tick = begin + 30 + rng() % 64;
    w.ZoneBegin(1 + uint32_t(rng() % 4), begin).ZoneEnd(tick);
  }
  w.End(tick);
  const std::string path = dir.File("big.gnomon");
  {
    auto writer = TraceWriter::Create(path);
    REQUIRE(writer.ok());
    writer.value()->Append(w.data(), w.size());  // one piece, over 48 MiB
    REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
    REQUIRE(writer.value()->Finish().ok());
  }
  TraceModel loaded;
  auto report = LoadTrace(path, loaded);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  CHECK_MESSAGE(report->warning.empty(), report->warning);
  CHECK(report->blocks == 2);
  CHECK(report->raw_bytes == w.size());
  CHECK(DescribeFirstDifference(BuildDirect(w), loaded) == "");
}

TEST_CASE("bytes referred to are compacted where they lie, between appended ones, and let go once read") {
  ScratchDir dir;
  const StreamWriter w = SampleStream(10000);
  // Whole-message pieces of 4 - 12 KiB, every tenth of 40 KiB, and every fourth under
  // 4 KiB, which the writer copies.
  std::mt19937_64 rng(11);
  const auto pieces = WholeMessagePieces(w, [&](size_t index) -> size_t {
    return index % 10 == 9 ? 40 * 1024 : index % 4 == 0 ? 1024 + rng() % 2048 : 4096 + rng() % 8192;
  });
  REQUIRE(pieces.size() > 100);
  TraceWriterOptions options;
  options.block_raw_bytes = 32 * 1024;
  options.compress_threads = 2;
  const std::string path = dir.File("referred.gnomon");
  auto writer = TraceWriter::Create(path, options);
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
  TraceWriter::Stream& stream = writer.value()->first_stream();
  // As a lane's receive buffers: a few pieces each, given to the writer one by one. A
  // buffer let go is written over, so bytes read after that would corrupt the file.
  std::vector<std::weak_ptr<const void>> owners;
  auto give = [&](size_t first, size_t count) {
    const size_t from = pieces[first].first;
    const size_t to = pieces[first + count - 1].first + pieces[first + count - 1].second;
    auto* bytes = new std::vector<uint8_t>(w.data() + from, w.data() + to);
    const std::shared_ptr<const std::vector<uint8_t>> owner(bytes, [](const std::vector<uint8_t>* v) {
      std::fill(const_cast<std::vector<uint8_t>*>(v)->begin(), const_cast<std::vector<uint8_t>*>(v)->end(),
                uint8_t{0xEE});
      delete v;
    });
    owners.push_back(owner);
    for (size_t i = first; i < first + count; ++i) {
      const uint8_t* at = owner->data() + (pieces[i].first - from);
      size_t size = pieces[i].second;
      // Every fifth with its first message copied ahead, as a restated thread is.
      std::span<const uint8_t> before;
      if (i % 5 == 0) {
        const gnomon::protocol::MessageSpan first_message = gnomon::protocol::MeasureMessage(at, size);
        REQUIRE(first_message.status == gnomon::protocol::MessageSpan::kWhole);
        before = {at, first_message.size};
        at += first_message.size;
        size -= first_message.size;
      }
      stream.Refer(before, at, size, owner);
    }
  };
  give(0, 1);  // under 4 KiB: copied, nothing kept
  CHECK(owners.back().expired());
  size_t next = 1;
  auto add = [&](size_t until) {
    while (next < until) {
      if (next % 7 == 3) {  // now and then appended, as the main connection's bytes are
        stream.Append(w.data() + pieces[next].first, pieces[next].second);
        ++next;
        continue;
      }
      const size_t count = std::min<size_t>(1 + rng() % 6, until - next);
      give(next, count);
      next += count;
    }
  };
  add(pieces.size() / 2);
  // Every block cut so far is written: what they referred to was let go.
  REQUIRE(writer.value()->SaveCopy(dir.File("copy.gnomon"), Overwrite::kNo).ok());
  CHECK(std::none_of(owners.begin(), owners.end(), [](const auto& owner) { return !owner.expired(); }));
  add(pieces.size());
  REQUIRE(writer.value()->Finish().ok());
  CHECK(std::all_of(owners.begin(), owners.end(), [](const auto& owner) { return owner.expired(); }));
  for (const std::string& file : {path, dir.File("copy.gnomon")}) {
    TraceModel loaded;
    auto report = LoadTrace(file, loaded);
    REQUIRE_MESSAGE(report.ok(), report.status().message());
    CHECK_MESSAGE(report->warning.empty(), report->warning);
    CHECK(report->blocks > 10);
    if (file == path) {
      CHECK(report->raw_bytes == w.size());
      CHECK(DescribeFirstDifference(BuildDirect(w), loaded) == "");
    } else {
      CHECK(report->raw_bytes > w.size() / 3);
    }
  }
}

TEST_CASE("blocks filled in turns are handed over after them, by any thread, in the order they were cut") {
  ScratchDir dir;
  const StreamWriter w = SampleStream(20000);
  // Whole-message pieces of about 6 KiB, referred to in turns by three threads, as a
  // capture's lanes do; each hands over after its turn, now and then, and one never.
  const auto pieces = WholeMessagePieces(w, [](size_t) -> size_t { return 6 * 1024; });
  REQUIRE(pieces.size() > 100);
  const std::string path = dir.File("turns.gnomon");
  const auto writer = BusyWriter(path);
  REQUIRE(writer->Publish(Overwrite::kYes).ok());
  TraceWriter::Stream& stream = writer->first_stream();
  std::mutex turn;
  size_t next = 0;
  std::vector<std::weak_ptr<const void>> owners(pieces.size());
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < 3; ++lane) {
    lanes.emplace_back([&, lane] {
      for (int turns = 0;; ++turns) {
        {
          std::lock_guard lock(turn);
          if (next == pieces.size()) return;
          const auto [offset, size] = pieces[next];
          const auto owner =
              std::make_shared<const std::vector<uint8_t>>(w.data() + offset, w.data() + offset + size);
          owners[next++] = owner;
          stream.Refer({}, owner->data(), owner->size(), owner);
        }
        if (lane != 2 && turns % (lane + 1) == 0) stream.HandOver();
      }
    });
  }
  for (std::thread& lane : lanes) lane.join();
  REQUIRE(writer->Finish().ok());
  CHECK(std::all_of(owners.begin(), owners.end(), [](const auto& owner) { return owner.expired(); }));
  TraceModel loaded;
  auto report = LoadTrace(path, loaded);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  CHECK_MESSAGE(report->warning.empty(), report->warning);
  CHECK(report->blocks > 20);
  CHECK(report->raw_bytes == w.size());
  CHECK(DescribeFirstDifference(BuildDirect(w), loaded) == "");
}

TEST_CASE("a copy holds every piece referred to before it, though a hand-over waits for room meanwhile") {
  ScratchDir dir;
  const StreamWriter w = SampleStream(20000);
  TraceWriterOptions options;
  options.block_raw_bytes = 8 * 1024;
  options.compress_threads = 1;
  options.compression_level = 19;  // slow: the queue fills, and hand-overs wait for room
  auto writer = TraceWriter::Create(dir.File("live.gnomon"), options);
  REQUIRE(writer.ok());
  REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
  TraceWriter::Stream& stream = writer.value()->first_stream();
  std::atomic<uint64_t> referred{0};  // bytes whose Refer returned
  std::atomic<bool> done{false};
  std::thread lane([&] {
    for (const auto& [offset, size] : WholeMessagePieces(w, [](size_t) -> size_t { return 5000; })) {
      const auto owner =
          std::make_shared<const std::vector<uint8_t>>(w.data() + offset, w.data() + offset + size);
      stream.Refer({}, owner->data(), owner->size(), owner);
      referred += size;
      stream.HandOver();
    }
    done = true;
  });
  int copies = 0;
  while (!done.load() || copies == 0) {
    const uint64_t before = referred.load();
    const std::string copy = dir.File("copy" + std::to_string(copies++) + ".gnomon");
    REQUIRE(writer.value()->SaveCopy(copy, Overwrite::kNo).ok());
    TraceModel loaded;
    auto report = LoadTrace(copy, loaded);
    REQUIRE_MESSAGE(report.ok(), report.status().message());
    CHECK_MESSAGE(report->warning.empty(), report->warning);
    CHECK(report->raw_bytes >= before);
  }
  lane.join();
  REQUIRE(writer.value()->Finish().ok());
  CHECK(copies > 1);
}

TEST_CASE(
    "a file that stops growing: the error is reported, copies refused, and the file ends at the error") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(20000);
  const std::string path = dir.File("full.gnomon");
  const auto writer = BusyWriter(path);
  REQUIRE(writer->Publish(Overwrite::kNo).ok());
  // The file may grow 24 KiB more, as on a disk that fills: writes past that fail (EFBIG).
  void (*const handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  rlimit limited = before;
  limited.rlim_cur = writer->file_bytes() + 24 * 1024;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);
  AppendPieces(writer->first_stream(), stream);
  const Status copied = writer->SaveCopy(dir.File("copy.gnomon"), Overwrite::kNo);  // every block cut written
  const uint64_t at_error = std::filesystem::file_size(path);
  // Room again: nothing more is written after the error all the same.
  REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
  std::signal(SIGXFSZ, handler);
  CHECK_FALSE(copied.ok());
  CHECK_MESSAGE(copied.message().find("cannot write to " + path) != std::string::npos, copied.message());
  CHECK_FALSE(std::filesystem::exists(dir.File("copy.gnomon")));
  AppendPieces(writer->first_stream(), SampleStream(2000));
  const Status finished = writer->Finish();
  REQUIRE_FALSE(finished.ok());
  CHECK_MESSAGE(finished.message().find(std::strerror(EFBIG)) != std::string::npos, finished.message());
  CHECK(std::filesystem::file_size(path) == at_error);
  // What was counted as written is in the file, whole.
  CHECK(writer->file_bytes() > sizeof(FileHeader));
  CHECK(writer->file_bytes() <= at_error);
  TraceModel loaded;
  auto report = LoadTrace(path, loaded);
  REQUIRE(report.ok());
  CHECK_FALSE(report->anomalies.has_end_marker);
  CHECK(report->blocks > 0);
  CHECK(report->anomalies.damaged_blocks == 0);
  CHECK(loaded.zone_count > 0);
  CHECK(loaded.zone_count < BuildDirect(stream).zone_count);
}

TEST_CASE("copies saved while another thread appends are whole traces, and the file stays whole") {
  ScratchDir dir;
  const StreamWriter stream = SampleStream(20000);
  const std::string path = dir.File("live.gnomon");
  const auto writer = BusyWriter(path);
  std::atomic<bool> appended{false};
  std::thread appender([&] {
    AppendPieces(writer->first_stream(), stream);  // as a viewer's receiving thread does
    appended = true;
  });
  int copies = 0;
  uint64_t last_zones = 0;
  while (!appended || copies < 3) {  // as a viewer's "Save trace as" does, from its own thread
    const std::string copy = dir.File("copy" + std::to_string(copies) + ".gnomon");
    REQUIRE(writer->SaveCopy(copy, Overwrite::kNo).ok());
    TraceModel loaded;
    auto report = LoadTrace(copy, loaded);
    REQUIRE(report.ok());
    CHECK_MESSAGE(report->warning.empty(), report->warning);
    CHECK(report->anomalies.has_end_marker);
    CHECK(loaded.zone_count >= last_zones);  // each copy holds at least what the one before did
    last_zones = loaded.zone_count;
    ++copies;
  }
  appender.join();
  REQUIRE(writer->Publish(Overwrite::kYes).ok());
  REQUIRE(writer->Finish().ok());
  TraceModel loaded;
  auto report = LoadTrace(path, loaded);
  REQUIRE(report.ok());
  CHECK(report->warning.empty());
  CHECK(DescribeFirstDifference(BuildDirect(stream), loaded) == "");
  MESSAGE(copies, " copies saved while appending");
}

TEST_CASE(
    "a writer short of cores compresses at its cheaper level, at the level asked for when told no other") {
  // A kernel without schedstat, or with one that counts nothing, leaves a writer at its
  // level however short the cores are.
  auto ran_ns = [] {
    unsigned long long ran = 0;
    std::ifstream("/proc/thread-self/schedstat") >> ran;
    return ran;
  };
  const unsigned long long ran_before = ran_ns();
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
       std::chrono::steady_clock::now() < until;) {
  }
  if (ran_ns() == ran_before) {
    MESSAGE("this kernel counts no time run in schedstat: a writer never finds the cores short here");
    return;
  }
  std::mt19937_64 rng(11);
  StreamWriter w;
  w.AppInfo("busy", 7).Calibration(0, 1000, 2000, 10).SourceLocation(1, "zone", "fn", "a.cpp", 3);
  w.ThreadContext(1);
  uint64_t tick = 0;
  for (int i = 0; i < 400'000; ++i) {
    w.ZoneBegin(1, tick + rng() % 16).ZoneEnd(tick + 20 + rng() % 64);
    tick += 100;
  }
  w.End(tick);
  // This thread, the writer's compressing thread and two that spin share one core: the
  // compressing thread waits for it about three times as long as it runs.
  struct OneBusyCore {
    cpu_set_t before;
    std::atomic<bool> spin{true};
    std::vector<std::thread> spinners;
    OneBusyCore() {
      REQUIRE(sched_getaffinity(0, sizeof(before), &before) == 0);
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(sched_getcpu(), &one);
      REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
      for (int i = 0; i < 2; ++i)
        spinners.emplace_back([this] {
          while (spin.load(std::memory_order_relaxed)) {
          }
        });
    }
    ~OneBusyCore() {
      spin.store(false);
      for (std::thread& t : spinners) t.join();
      sched_setaffinity(0, sizeof(before), &before);
    }
  };
  auto busy = std::make_unique<OneBusyCore>();
  ScratchDir dir;
  auto write = [&](const std::string& name, std::optional<int> short_level) {
    TraceWriterOptions options{.block_raw_bytes = 256 * 1024, .short_of_cores_level = short_level};
    auto writer = TraceWriter::Create(dir.File(name), options);
    REQUIRE(writer.ok());
    AppendPieces(writer.value()->first_stream(), w);
    REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
    REQUIRE(writer.value()->Finish().ok());
    return std::pair{writer.value()->blocks_short_of_cores(), writer.value()->blocks_compressed()};
  };
  const auto [cheaper, blocks] = write("short.gnomon", 1);
  const auto [asked_cheaper, asked_blocks] = write("asked.gnomon", std::nullopt);
  busy.reset();
  MESSAGE(cheaper, " of ", blocks, " blocks at level 1");
  CHECK(blocks > 20);
  CHECK(cheaper > 0);
  CHECK(asked_blocks == blocks);
  CHECK(asked_cheaper == 0);
  // The same blocks at other levels: zstd wrote other bytes (at one level, the same).
  CHECK(std::filesystem::file_size(dir.File("short.gnomon")) !=
        std::filesystem::file_size(dir.File("asked.gnomon")));
  const TraceModel direct = BuildDirect(w);
  for (const std::string name : {"short.gnomon", "asked.gnomon"}) {
    CAPTURE(name);
    TraceModel loaded;
    auto report = LoadTrace(dir.File(name), loaded);
    REQUIRE_MESSAGE(report.ok(), report.status().message());
    CHECK(report->warning.empty());
    CHECK(DescribeFirstDifference(direct, loaded) == "");
  }
}

TEST_CASE("a zstd level is a whole number from -7 to 19, nothing else") {
  CHECK(ParseCompressionLevel("-7") == -7);
  CHECK(ParseCompressionLevel("1") == 1);
  CHECK(ParseCompressionLevel("19") == 19);
  for (const char* refused : {"", "-8", "20", "3x", "x", " ", "99999999999999999999"}) {
    CAPTURE(refused);
    CHECK_FALSE(ParseCompressionLevel(refused).has_value());
  }
}
