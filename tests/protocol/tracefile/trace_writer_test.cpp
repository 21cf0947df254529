// Writing a trace file while a capture runs (TraceWriter): blocks cut, compacted and
// compressed on several threads and written in the order cut, padded within the loader's
// limit, pieces copied or referred to where they lie, copies saved while others append,
// write errors, a cheaper level when the cores are short; each file then loaded whole.
#include "gnomon/tracefile/trace_writer.h"

#include <doctest/doctest.h>
#include <sched.h>
#include <sys/resource.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/build_model.h"
#include "../../support/process.h"
#include "../../support/trace_files.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/block_summary.h"
#include "gnomon/tracefile/format.h"
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

TEST_CASE("a block of perfectly regular zones is padded within half the loader's limit, and loads whole") {
  ScratchDir dir;
  const StreamWriter w = RegularZones(180'000);
  // Each block with its summary at the end of its skippable frame, zeros before it where
  // the block needs them.
  const std::string summarized = gnomon::test::ReadFile(WriteTrace(dir, w, 256 << 10));
  int zero_filled = 0;
  for (const std::string& block : Split(summarized).blocks) {
    BlockHeader h{};
    std::memcpy(&h, block.data(), sizeof(h));
    CHECK(uint64_t(h.raw_bytes) <= uint64_t(kWriterMaxExpansion) * h.compressed_bytes);
    const uint8_t* data = reinterpret_cast<const uint8_t*>(block.data()) + sizeof(h);
    const size_t frame = ZSTD_findFrameCompressedSize(data, h.compressed_bytes);
    REQUIRE(frame + kSkippableFrameHeader + kSummaryTrailer < h.compressed_bytes);
    uint32_t magic = 0, content = 0, summary = 0, trailer = 0;
    std::memcpy(&magic, data + frame, 4);
    std::memcpy(&content, data + frame + 4, 4);
    std::memcpy(&summary, data + h.compressed_bytes - 8, 4);
    std::memcpy(&trailer, data + h.compressed_bytes - 4, 4);
    CHECK(magic == kSummaryFrameMagic);
    CHECK(trailer == kSummaryMagic);
    CHECK(frame + kSkippableFrameHeader + content == h.compressed_bytes);
    REQUIRE(summary + kSummaryTrailer <= content);
    if (content > summary + kSummaryTrailer) ++zero_filled;
  }
  CHECK(zero_filled >= 2);
  CHECK(LoadBytes(dir, summarized).model == BuildDirect(w));
  // Without summaries: padding of its own.
  const std::string bytes = gnomon::test::ReadFile(WriteTrace(dir, w, 256 << 10, false));
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
