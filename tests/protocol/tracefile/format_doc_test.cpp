// docs/trace-format.md against the code (gnomon/tracefile/format.h, block_codec.h,
// trace_writer.h): the format version, the file header's and block headers' tables field
// by field, the magics, the marks and the limits the page states.
#include <doctest/doctest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gnomon/tracefile/block_codec.h"
#include "gnomon/tracefile/block_summary.h"
#include "gnomon/tracefile/format.h"
#include "gnomon/tracefile/trace_writer.h"

namespace {

using namespace gnomon::tracefile;

std::string Page() {
  std::ifstream in(std::string(GNOMON_SOURCE_DIR) + "/docs/trace-format.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The "| offset | size | field ..." table under the first line starting with `heading`,
// each row as "offset size name", the name the field cell's first word.
std::vector<std::string> TableUnder(const std::string& page, const std::string& heading) {
  std::vector<std::string> rows;
  std::istringstream lines(page.substr(page.find("\n" + heading) + 1));
  std::string line;
  std::getline(lines, line);  // the heading
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("| offset |", 0) == 0 || line.rfind("|---", 0) == 0) {
      in_table = true;
      continue;
    }
    if (line.empty() || line[0] != '|') {
      if (in_table) break;
      continue;
    }
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) break;
    std::istringstream offset(cells[0]), size(cells[1]), field(cells[2]);
    std::string o, s, name;
    offset >> o;
    size >> s;
    field >> name;
    if (!name.empty() && name.back() == ':') name.pop_back();
    rows.push_back(o + " " + s + " " + name);
  }
  return rows;
}

#define GNOMON_FIELD(STRUCT, FIELD) \
  std::to_string(offsetof(STRUCT, FIELD)) + " " + std::to_string(sizeof(STRUCT::FIELD)) + " " #FIELD

bool Says(const std::string& page, const std::string& text) { return page.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("docs/trace-format.md states the format version the writer writes and the reader reads") {
  const std::string page = Page();
  REQUIRE(!page.empty());
  const std::string version = std::to_string(kTraceFormatVersion);
  CHECK(Says(page, "# The `.gnomon` trace file (format version " + version + ")"));
  CHECK(Says(page, "| format_version | " + version + " (1 to " + std::to_string(kTraceFormatVersion - 1) +
                       " are still read)"));
  CHECK(Says(page, "this build reads up to " + version + ":"));
}

TEST_CASE("docs/trace-format.md has the file header of the code, field by field") {
  const std::string page = Page();
  CHECK(Says(page, "## File header (" + std::to_string(sizeof(FileHeader)) + " bytes)"));
  const std::vector<std::string> expected = {
      GNOMON_FIELD(FileHeader, magic),        GNOMON_FIELD(FileHeader, format_version),
      GNOMON_FIELD(FileHeader, header_bytes), GNOMON_FIELD(FileHeader, protocol_version),
      GNOMON_FIELD(FileHeader, flags),        GNOMON_FIELD(FileHeader, created_unix_ns),
      GNOMON_FIELD(FileHeader, reserved)};
  CHECK(TableUnder(page, "## File header") == expected);
  CHECK(Says(page, "| magic | ASCII `" + std::string(kTraceMagic, sizeof(kTraceMagic)) + "` |"));
  CHECK(Says(page, "| header_bytes | " + std::to_string(sizeof(FileHeader)) + ";"));
}

TEST_CASE("docs/trace-format.md has the block headers of every format, field by field") {
  const std::string page = Page();
  CHECK(Says(page, "Each block is a " + std::to_string(sizeof(BlockHeader)) + "-byte header"));
  const std::vector<std::string> expected = {
      GNOMON_FIELD(BlockHeader, magic),       GNOMON_FIELD(BlockHeader, sequence),
      GNOMON_FIELD(BlockHeader, stream),      GNOMON_FIELD(BlockHeader, stream_sequence),
      GNOMON_FIELD(BlockHeader, raw_bytes),   GNOMON_FIELD(BlockHeader, compressed_bytes),
      GNOMON_FIELD(BlockHeader, header_check)};
  CHECK(TableUnder(page, "## Blocks") == expected);
  CHECK(Says(page, "header_check: 32-bit FNV-1a of the " +
                       std::to_string(offsetof(BlockHeader, header_check)) + " bytes before it"));
  CHECK(Says(page, "Format 4 has a " + std::to_string(sizeof(BlockHeaderV4)) + "-byte header"));
  CHECK(Says(page, "header_check over the " + std::to_string(offsetof(BlockHeaderV4, header_check)) +
                       " bytes before it"));
  CHECK(Says(page, "have a " + std::to_string(sizeof(BlockHeaderV1)) + "-byte header without the sequence"));
  CHECK(
      Says(page, "(header_check over " + std::to_string(offsetof(BlockHeaderV1, header_check)) + " bytes)"));
}

TEST_CASE("docs/trace-format.md gives the magics, marks and limits of the code") {
  const std::string page = Page();
  auto hex = [](uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof(text), "0x%08X", value);
    return std::string(text);
  };
  auto ascii = [](uint32_t value) { return std::string(reinterpret_cast<const char*>(&value), 4); };
  CHECK(Says(page, "magic `" + ascii(kBlockMagic) + "` (" + hex(kBlockMagic) + ")"));
  CHECK(Says(page, "magic `" + ascii(kEndMagic) + "` (" + hex(kEndMagic) + ")"));
  CHECK(Says(page, "magic\n" + hex(kSkippableFrameMagic) + ", its content's size as 32 bits"));
  CHECK(kMaxBlockRawBytes == 64u << 20);
  CHECK(Says(page, "at most 64 MiB"));
  CHECK(Says(page, "`raw_bytes` over 64 MiB, or over 1,024 times `compressed_bytes`"));
  CHECK(kDefaultMaxExpansion == 1024);
  CHECK(Says(page, "A reader skips a block that expands more than 1,024 times"));
  CHECK(kWriterMaxExpansion == 512);
  CHECK(Says(page, "the writer compresses further than 512 times"));
  CHECK(Says(page, "`compressed_bytes` up to `raw_bytes` / 512"));
  auto mark = [](uint8_t value) {
    char text[8];
    std::snprintf(text, sizeof(text), "0x%02X", value);
    return std::string(text);
  };
  CHECK(Says(page, "| 0 | 1 | " + mark(kColumnsMark) + ", which is no message type"));
  CHECK(Says(page,
             "| 1 | " + std::to_string(kColumnsHeader - 1) + " | the bytes of the records that follow |"));
  CHECK(Says(page, "A block that starts with " + mark(kValuesMark) + " (no message"));
  CHECK(Says(page, "whose magic is then " + hex(kSummaryFrameMagic)));
  CHECK(Says(page, "the magic `" + ascii(kSummaryMagic) + "` (" + hex(kSummaryMagic) + ")"));
  CHECK(kSummaryTrailer == 8);
  CHECK(Says(page, "| resolution | in ticks, at least " + std::to_string(kSummaryFirstResolution) + ":"));
  CHECK(Says(page, "at most " + std::to_string(kSummaryRuns) + " runs beyond one a row"));
  CHECK(kMaxSummaryBytes == 1u << 20);
  CHECK(Says(page, "leaves out a summary over 1 MiB"));
  CHECK(Says(page, "over\n1 MiB or over the expansion limit"));
  const TraceWriterOptions writer;
  CHECK(writer.block_summaries);
  CHECK(writer.block_raw_bytes == 4u << 20);
  CHECK(writer.max_block_age == std::chrono::seconds(1));
  CHECK(Says(page, "when it reaches\n  4 MiB of stream or is 1 s old"));
}
