#include "gnomon/server/trace_loader.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include "../../support/build_model.h"
#include "../../support/heap_counter.h"
#include "../../support/mappings.h"
#include "../../support/process.h"
#include "../../support/trace_files.h"
#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/trace_writer.h"
#include "model/trace_builder.h"

using namespace gnomon::server;
using namespace gnomon::tracefile;
using gnomon::test::AppendPieces;
using gnomon::test::FileParts;
using gnomon::test::LoadBytes;
using gnomon::test::Loaded;
using gnomon::test::RegularZones;
using gnomon::test::SampleStream;
using gnomon::test::ScratchDir;
using gnomon::test::Split;
using gnomon::test::StreamWriter;
using gnomon::test::WriteTrace;

namespace {

TraceModel BuildDirect(const StreamWriter& w) { return gnomon::test::BuildModel(w); }

void WritePrefix(const std::string& from, const std::string& to, size_t bytes) {
  const std::string all = gnomon::test::ReadFile(from);
  std::ofstream(to, std::ios::binary).write(all.data(), std::streamsize(std::min(bytes, all.size())));
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

TEST_CASE("a decompression bomb is refused with a clear error, a trusted file loads with a higher limit") {
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
