// gnomon-merge's library on real trace files: blocks of several captures copied into
// one file, streams renumbered, every program loading as it was; bad inputs refused or
// cut short with what came before kept.
#include "gnomon/server/trace_merge.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "../../support/build_model.h"
#include "../../support/process.h"
#include "gnomon/server/trace_loader.h"
#include "gnomon/tracefile/trace_writer.h"

using namespace gnomon::server;
using namespace gnomon::tracefile;
using gnomon::test::ScratchDir;
using gnomon::test::StreamWriter;

namespace {

// A program of a capture: zones on two threads, and the capture's reference readings.
StreamWriter Program(const std::string& name, uint32_t pid, uint64_t capture_id, int zones) {
  StreamWriter w;
  w.AppInfo(name, pid).SourceLocation(1, name + " zone", "f", "x.cpp", 1);
  for (int i = 0; i < zones; ++i) {
    if (i % 2000 == 0) {
      gnomon::protocol::CaptureClock reading{};
      reading.capture_id = capture_id;
      reading.reference = 1;
      reading.before_ns = 1'000'000'000 + uint64_t(i) * 1000;
      reading.reference_ns = 1'700'000'000'000'000'000 + uint64_t(i) * 1000;
      reading.after_ns = reading.before_ns + 300;
      reading.reference_error_ns = 5'000'000;
      w.Add(reading, {.domain = "boot-1"});
    }
    w.ThreadContext(1 + uint32_t(i % 2)).ZoneBegin(1, uint64_t(i) * 10);
    if (i % 3 == 0) w.ZoneValue(uint64_t(i) * 7);  // in the column of today's blocks
    w.ZoneEnd(uint64_t(i) * 10 + 5);
  }
  w.End(uint64_t(zones) * 10);
  return w;
}

// A capture's file of `programs`, one stream each, in small blocks.
void WriteCapture(const std::string& path, const std::vector<const StreamWriter*>& programs) {
  TraceWriterOptions options;
  options.block_raw_bytes = 8 * 1024;
  auto writer = TraceWriter::Create(path, options);
  REQUIRE(writer.ok());
  for (size_t i = 0; i < programs.size(); ++i) {
    TraceWriter::Stream& stream = i == 0 ? writer.value()->first_stream() : writer.value()->AddStream();
    gnomon::test::AppendPieces(stream, *programs[i]);
  }
  REQUIRE(writer.value()->Publish(Overwrite::kYes).ok());
  REQUIRE(writer.value()->Finish().ok());
}

// The model `w` builds, as a merged file holds it: marked as of several captures.
// Each block of a trace file's bytes (the end marker too): its offset and size.
std::vector<std::pair<size_t, size_t>> BlockSpans(const std::string& file) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t at = sizeof(FileHeader); at + sizeof(BlockHeader) <= file.size();) {
    BlockHeader header{};
    std::memcpy(&header, file.data() + at, sizeof(header));
    const size_t size = sizeof(header) + (header.magic == kEndMagic ? 0 : header.compressed_bytes);
    spans.emplace_back(at, size);
    at += size;
  }
  return spans;
}

// Two captures in `dir`: a.gnomon (20,000 zones, in many blocks) and b.gnomon (1,000),
// and a.gnomon's bytes with the span of each of its blocks.
struct TwoCaptures {
  const StreamWriter a = Program("a", 10, 111, 20'000);
  const StreamWriter b = Program("b", 20, 222, 1'000);
  std::string whole_a;
  std::vector<std::pair<size_t, size_t>> spans_a;
  explicit TwoCaptures(const ScratchDir& dir) {
    WriteCapture(dir.File("a.gnomon"), {&a});
    WriteCapture(dir.File("b.gnomon"), {&b});
    whole_a = gnomon::test::ReadFile(dir.File("a.gnomon"));
    spans_a = BlockSpans(whole_a);
    REQUIRE(spans_a.size() > 6);
  }
};

TraceModel Built(const StreamWriter& w) {
  TraceModel model = gnomon::test::BuildWholeModel(w);
  model.capture.merged = true;
  return model;
}

}  // namespace

TEST_CASE("merge: two captures' files become one trace whose programs load as they were, in order") {
  ScratchDir dir;
  const StreamWriter a0 = Program("a0", 10, 111, 20'000), a1 = Program("a1", 11, 111, 5'000);
  const StreamWriter b0 = Program("b0", 20, 222, 12'000);
  WriteCapture(dir.File("a.gnomon"), {&a0, &a1});
  WriteCapture(dir.File("b.gnomon"), {&b0});
  std::ostringstream log;
  auto merged =
      MergeTraces({dir.File("a.gnomon"), dir.File("b.gnomon")}, dir.File("all.gnomon"), Overwrite::kNo, log);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  CHECK(merged->files == 2);
  CHECK(merged->streams == 3);
  CHECK(merged->incomplete_files == 0);
  CHECK(merged->blocks > 10);
  // Blocks are copied, not recompressed: the merge is the inputs' blocks and one header.
  const size_t a_bytes = gnomon::test::ReadFile(dir.File("a.gnomon")).size();
  const size_t b_bytes = gnomon::test::ReadFile(dir.File("b.gnomon")).size();
  CHECK(merged->bytes == gnomon::test::ReadFile(dir.File("all.gnomon")).size());
  CHECK(merged->bytes == a_bytes + b_bytes - sizeof(FileHeader) - sizeof(BlockHeader));
  CHECK(log.str().find("b.gnomon: 1 program(s)") != std::string::npos);
  CHECK(log.str().find("as programs 3 to 3") != std::string::npos);

  TraceSet set;
  auto loaded = LoadTraceSet(dir.File("all.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(loaded->warning.empty());
  CHECK(loaded->anomalies.missing_blocks == 0);
  REQUIRE(set.processes.size() == 3);
  const StreamWriter* expected[] = {&a0, &a1, &b0};
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(set.processes[i].stream == i);
    CHECK(DescribeFirstDifference(Built(*expected[i]), set.processes[i].model) == "");
  }
  CHECK(set.processes[0].model.capture.capture_id == 111);
  CHECK(set.processes[2].model.capture.capture_id == 222);
  CHECK(set.processes[2].model.capture.readings.size() == 6);
  CHECK(set.processes[2].model.capture.domain == "boot-1");

  // The merge of merges holds them all; the output is never one of the inputs.
  auto again = MergeTraces({dir.File("all.gnomon"), dir.File("b.gnomon")}, dir.File("more.gnomon"),
                           Overwrite::kNo, log);
  REQUIRE(again.ok());
  CHECK(again->streams == 4);
  const auto onto_input =
      MergeTraces({dir.File("a.gnomon"), dir.File("b.gnomon")}, dir.File("b.gnomon"), Overwrite::kYes, log);
  REQUIRE_FALSE(onto_input.ok());
  CHECK(onto_input.status().message().find("is also an input") != std::string::npos);
  const auto existing = MergeTraces({dir.File("a.gnomon")}, dir.File("all.gnomon"), Overwrite::kNo, log);
  REQUIRE_FALSE(existing.ok());
  CHECK(existing.status().message().find("exists") != std::string::npos);
}

TEST_CASE(
    "merge: a format-5 or format-6 capture and one of today merge into a file of today's format, both "
    "whole") {
  ScratchDir dir;
  const StreamWriter b0 = Program("b0", 20, 222, 12'000);
  WriteCapture(dir.File("b.gnomon"), {&b0});
  // Format 6's blocks keep each zone value among the records, under a mark of their own.
  for (const char* format : {"5", "6"}) {
    const std::string old_file =
        std::string(GNOMON_DATA_DIR) + "/golden/format" + format + "-two-programs.gnomon";
    CAPTURE(old_file);
    TraceSet old_set;
    REQUIRE(LoadTraceSet(old_file, old_set).ok());
    const std::string merged_file = dir.File(std::string("all") + format + ".gnomon");
    std::ostringstream log;
    auto merged = MergeTraces({old_file, dir.File("b.gnomon")}, merged_file, Overwrite::kNo, log);
    REQUIRE_MESSAGE(merged.ok(), merged.status().message());
    FileHeader header{};
    std::memcpy(&header, gnomon::test::ReadFile(merged_file).data(), sizeof(header));
    CHECK(header.format_version == kTraceFormatVersion);
    TraceSet set;
    auto loaded = LoadTraceSet(merged_file, set);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    CHECK(loaded->warning.empty());
    REQUIRE(set.processes.size() == 3);
    for (size_t i = 0; i < 2; ++i) {
      CAPTURE(i);
      TraceModel expected = std::move(old_set.processes[i].model);
      expected.capture.merged = true;
      CHECK(DescribeFirstDifference(expected, set.processes[i].model) == "");
    }
    CHECK(DescribeFirstDifference(Built(b0), set.processes[2].model) == "");
  }
}

TEST_CASE("merge: an input cut short or damaged gives its sound blocks, as a reader would, and says so") {
  ScratchDir dir;
  const StreamWriter a = Program("a", 10, 111, 30'000), b = Program("b", 20, 222, 3'000);
  WriteCapture(dir.File("a.gnomon"), {&a});
  WriteCapture(dir.File("b.gnomon"), {&b});
  const std::string whole = gnomon::test::ReadFile(dir.File("a.gnomon"));
  // Cut in the middle of the file, and damaged in a block header a third of the way in.
  std::ofstream(dir.File("cut.gnomon"), std::ios::binary)
      .write(whole.data(), std::streamsize(whole.size() / 2));
  std::string damaged = whole;
  const std::vector<std::pair<size_t, size_t>> spans = BlockSpans(whole);
  REQUIRE(spans.size() > 6);
  const size_t at = spans[5].first;
  damaged[at + 9] = char(damaged[at + 9] ^ 0x40);
  std::ofstream(dir.File("damaged.gnomon"), std::ios::binary) << damaged;

  for (const char* input : {"cut.gnomon", "damaged.gnomon"}) {
    CAPTURE(input);
    std::ostringstream log;
    auto merged = MergeTraces({dir.File(input), dir.File("b.gnomon")}, dir.File(std::string("m-") + input),
                              Overwrite::kNo, log);
    REQUIRE_MESSAGE(merged.ok(), merged.status().message());
    CHECK(merged->incomplete_files == 1);
    CHECK(merged->streams == 2);
    CHECK(log.str().find("(its sound blocks were merged)") != std::string::npos);
    TraceSet set;
    auto loaded = LoadTraceSet(dir.File(std::string("m-") + input), set);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    REQUIRE(set.processes.size() == 2);
    CHECK(set.processes[0].model.zone_count > 0);
    CHECK(set.processes[0].model.zone_count < 30'000);
    if (std::string(input) == "damaged.gnomon") {
      // The loader's index skips the damaged header to the next block: one block lost.
      CHECK(log.str().find("hold no readable block header; skipped to the next block") != std::string::npos);
      CHECK(set.processes[0].model.zone_count > 25'000);
    } else {
      CHECK(log.str().find("(cut short)") != std::string::npos);
    }
    CHECK(DescribeFirstDifference(Built(b), set.processes[1].model) == "");  // the next input whole
  }
}

TEST_CASE("merge: a repeated block is merged once and a missing one is said, as a reader sees them") {
  ScratchDir dir;
  const TwoCaptures two(dir);
  const std::string& whole = two.whole_a;
  const std::vector<std::pair<size_t, size_t>>& spans = two.spans_a;
  // The input's third block written twice over its fourth: one repeat, one missing.
  std::string repeated = whole.substr(0, spans[3].first) + whole.substr(spans[2].first, spans[2].second) +
                         whole.substr(spans[4].first);
  std::ofstream(dir.File("repeated.gnomon"), std::ios::binary) << repeated;
  std::ostringstream log;
  auto merged = MergeTraces({dir.File("repeated.gnomon"), dir.File("b.gnomon")}, dir.File("m.gnomon"),
                            Overwrite::kNo, log);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  CHECK(merged->incomplete_files == 1);
  CHECK(log.str().find("repeats block 2 (skipped)") != std::string::npos);
  CHECK(log.str().find("1 block(s) missing before block 4") != std::string::npos);
  TraceSet direct, set;
  REQUIRE(LoadTraceSet(dir.File("repeated.gnomon"), direct).ok());
  auto loaded = LoadTraceSet(dir.File("m.gnomon"), set);
  REQUIRE(loaded.ok());
  REQUIRE(set.processes.size() == 2);
  // The merged file holds what a reader of the input loads, no more: the same zones.
  CHECK(set.processes[0].model.zone_count == direct.processes[0].model.zone_count);
  CHECK(set.processes[0].model.zone_count < 20'000);
}

TEST_CASE("merge: files that are not traces of this format are refused and nothing is written") {
  ScratchDir dir;
  const StreamWriter a = Program("a", 10, 111, 100);
  WriteCapture(dir.File("a.gnomon"), {&a});
  std::ofstream(dir.File("text.gnomon")) << "not a trace at all, but long enough to hold a header .........";
  std::string old = gnomon::test::ReadFile(dir.File("a.gnomon"));
  FileHeader header{};
  std::memcpy(&header, old.data(), sizeof(header));
  header.format_version = 4;  // before the captures' common reference clock
  std::memcpy(old.data(), &header, sizeof(header));
  std::ofstream(dir.File("old.gnomon"), std::ios::binary) << old;
  header.format_version = kTraceFormatVersion + 1;
  std::memcpy(old.data(), &header, sizeof(header));
  std::ofstream(dir.File("newer.gnomon"), std::ios::binary) << old;

  REQUIRE(mkfifo(dir.File("fifo.gnomon").c_str(), 0600) == 0);  // a read would wait for a writer forever
  std::string huge_header = gnomon::test::ReadFile(dir.File("a.gnomon"));
  header.format_version = kTraceFormatVersion;
  header.header_bytes = 60'000;
  std::memcpy(huge_header.data(), &header, sizeof(header));
  std::ofstream(dir.File("huge-header.gnomon"), std::ios::binary) << huge_header.substr(0, 200);

  const std::pair<const char*, const char*> cases[] = {
      {"text.gnomon", "is not a Gnomon trace"},
      {"old.gnomon", "gnomon-merge takes formats 5 to"},
      {"newer.gnomon", "written by a newer Gnomon"},
      {"missing.gnomon", "cannot open"},
      {"fifo.gnomon", "is a FIFO"},
      {"huge-header.gnomon", "has a damaged header"},
      {"a.gnomon", "is named twice"},
  };
  for (const auto& [input_name, expected] : cases) {
    const auto& input = input_name;  // CAPTURE's lambda takes it
    CAPTURE(input);
    std::ostringstream log;
    auto merged =
        MergeTraces({dir.File("a.gnomon"), dir.File(input)}, dir.File("out.gnomon"), Overwrite::kNo, log);
    REQUIRE_FALSE(merged.ok());
    CHECK(merged.status().message().find(expected) != std::string::npos);
    CHECK(access(dir.File("out.gnomon").c_str(), F_OK) != 0);
  }
  std::ostringstream log;
  CHECK_FALSE(MergeTraces({}, dir.File("out.gnomon"), Overwrite::kNo, log).ok());
}

TEST_CASE("merge: a block whose compressed bytes are damaged is left out and said, never passed on") {
  ScratchDir dir;
  const TwoCaptures two(dir);
  const StreamWriter& b = two.b;
  const std::string& whole = two.whole_a;
  const std::vector<std::pair<size_t, size_t>>& spans = two.spans_a;
  // One byte flipped in the middle of the fourth block's zstd frame (its header intact).
  std::string flipped = whole;
  const size_t data = spans[3].first + sizeof(BlockHeader);
  const size_t frame =
      ZSTD_findFrameCompressedSize(whole.data() + data, spans[3].first + spans[3].second - data);
  REQUIRE_FALSE(ZSTD_isError(frame));
  const size_t at = data + frame / 2;
  flipped[at] = char(flipped[at] ^ 0x10);
  std::ofstream(dir.File("flipped.gnomon"), std::ios::binary) << flipped;
  // Every block's frame damaged: nothing of the file can be read.
  std::string ruined = whole;
  for (size_t i = 0; i + 1 < spans.size(); ++i) ruined[spans[i].first + sizeof(BlockHeader) + 6] ^= 0x55;
  std::ofstream(dir.File("ruined.gnomon"), std::ios::binary) << ruined;

  std::ostringstream log;
  auto merged = MergeTraces({dir.File("flipped.gnomon"), dir.File("b.gnomon")}, dir.File("m.gnomon"),
                            Overwrite::kNo, log);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  CHECK(merged->incomplete_files == 1);
  CHECK(log.str().find("block 3 at byte " + std::to_string(spans[3].first) + " does not decompress") !=
        std::string::npos);
  CHECK(log.str().find("(its sound blocks were merged)") != std::string::npos);
  TraceSet direct, set;
  REQUIRE(LoadTraceSet(dir.File("flipped.gnomon"), direct).ok());
  auto loaded = LoadTraceSet(dir.File("m.gnomon"), set);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  // The merged file holds no damaged block: its reader finds none, and the zones a
  // reader of the input gets.
  CHECK(loaded->anomalies.damaged_blocks == 0);
  REQUIRE(set.processes.size() == 2);
  CHECK(set.processes[0].model.zone_count == direct.processes[0].model.zone_count);
  CHECK(set.processes[0].model.zone_count < 20'000);
  CHECK(DescribeFirstDifference(Built(b), set.processes[1].model) == "");

  std::ostringstream ruined_log;
  auto none = MergeTraces({dir.File("ruined.gnomon"), dir.File("b.gnomon")}, dir.File("n.gnomon"),
                          Overwrite::kNo, ruined_log);
  REQUIRE_MESSAGE(none.ok(), none.status().message());
  CHECK(none->incomplete_files == 1);
  CHECK(none->streams == 1);  // the ruined file brings no program
  CHECK(ruined_log.str().find("0 program(s), 0 block(s)") != std::string::npos);
  TraceSet only_b;
  REQUIRE(LoadTraceSet(dir.File("n.gnomon"), only_b).ok());
  REQUIRE(only_b.processes.size() == 1);
  CHECK(DescribeFirstDifference(Built(b), only_b.processes[0].model) == "");
}

TEST_CASE("merge: -f replaces an existing trace, never another file") {
  ScratchDir dir;
  const StreamWriter a = Program("a", 10, 111, 100);
  WriteCapture(dir.File("a.gnomon"), {&a});
  WriteCapture(dir.File("old-trace.gnomon"), {&a});
  std::ofstream(dir.File("notes.txt")) << "a week of notes, not a trace\n";
  std::ofstream(dir.File("empty.gnomon")).flush();  // nothing in it to lose
  for (const char* output : {"old-trace.gnomon", "empty.gnomon"}) {
    CAPTURE(output);
    std::ostringstream log;
    auto merged = MergeTraces({dir.File("a.gnomon")}, dir.File(output), Overwrite::kYes, log);
    REQUIRE_MESSAGE(merged.ok(), merged.status().message());
    CHECK(gnomon::test::ReadFile(dir.File(output)).size() == merged->bytes);
  }
  std::ostringstream log;
  auto refused = MergeTraces({dir.File("a.gnomon")}, dir.File("notes.txt"), Overwrite::kYes, log);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("notes.txt is not a Gnomon trace") != std::string::npos);
  CHECK(gnomon::test::ReadFile(dir.File("notes.txt")) == "a week of notes, not a trace\n");
}

TEST_CASE("merge: a block whose summary is damaged is merged without it, and its readers decode it") {
  ScratchDir dir;
  const TwoCaptures two(dir);
  const std::vector<std::pair<size_t, size_t>>& spans = two.spans_a;
  // A byte of the fourth block's summary: just before its size and magic, the block's
  // last 8 bytes.
  std::string damaged = two.whole_a;
  const size_t end = spans[3].first + spans[3].second;
  REQUIRE(damaged.substr(end - 4, 4) == "GSUM");
  damaged[end - 8 - 3] ^= 0x21;
  std::ofstream(dir.File("damaged.gnomon"), std::ios::binary) << damaged;
  std::ostringstream log;
  auto merged = MergeTraces({dir.File("damaged.gnomon"), dir.File("b.gnomon")}, dir.File("m.gnomon"),
                            Overwrite::kNo, log);
  REQUIRE_MESSAGE(merged.ok(), merged.status().message());
  CHECK(merged->incomplete_files == 0);
  CHECK(log.str().find("block 3 at byte " + std::to_string(spans[3].first) + ": its summary") !=
        std::string::npos);
  CHECK(log.str().find("merged without it") != std::string::npos);
  // Every zone kept; a reader counting them from the summaries decodes that block, and
  // finds nothing to say.
  TraceSet set;
  REQUIRE(LoadTraceSet(dir.File("m.gnomon"), set).ok());
  CHECK(set.processes[0].model.zone_count == 20'000);
  TraceModel counted;
  LoadOptions options;
  options.zone_memory_limit = 1;
  options.overview_runs = 100'000;
  auto loaded = LoadTrace(dir.File("m.gnomon"), counted, options);
  REQUIRE(loaded.ok());
  CHECK(loaded->warning.find("summary") == std::string::npos);
  CHECK(counted.zone_count == 20'000);
}
