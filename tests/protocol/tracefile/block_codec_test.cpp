#include "gnomon/tracefile/block_codec.h"

#include <doctest/doctest.h>

#include <random>
#include <span>

#include "../../support/stream_writer.h"

using gnomon::test::StreamWriter;

TEST_CASE("tick deltas round-trip every message, any tick, and leave a broken tail alone") {
  std::mt19937_64 rng(3);
  StreamWriter w;
  w.AppInfo("delta").ThreadContext(1);
  uint64_t tick = 1000;
  for (int i = 0; i < 2000; ++i) {
    tick += rng() % 100;
    switch (i % 9) {
      case 0:
        w.ZoneBegin(1, tick);
        break;
      case 1:
        w.ZoneEnd(tick);
        break;
      case 2:
        w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
        break;
      case 3:
        w.Message(tick, 2, "text");
        break;
      case 4:
        w.Plot(3, tick, 1.5);
        break;
      case 5:
        w.GpuZoneBegin(1, 2, 3, tick);
        break;
      case 6:
        w.GpuZoneEnd(1, 2, tick);
        break;
      case 7:
        w.ZoneBegin(1, rng());
        break;  // absurd and backward ticks too
      default:
        w.Calibration(tick, 5, 6, 7);
        break;
    }
  }
  w.End(~uint64_t{0});
  w.Raw({uint8_t(gnomon::protocol::MessageType::kZoneBegin), 1, 0, 0});  // an incomplete ZoneBegin at the end
  std::vector<uint8_t> bytes = w.bytes();
  gnomon::tracefile::EncodeTickDeltas(bytes.data(), bytes.size());
  CHECK(bytes != w.bytes());
  CHECK(std::equal(bytes.end() - 4, bytes.end(), w.bytes().end() - 4));  // the broken tail is untouched
  gnomon::tracefile::DecodeTickDeltas(bytes.data(), bytes.size());
  CHECK(bytes == w.bytes());
}

namespace {

// A whole block's compact form: format 3's records (as formats 3 to 5 write it), format
// 6's, with the ticks in a column, or format 7's, with the zone values there too.
enum class Form { kRecords, kColumns, kValues };
std::vector<uint8_t> Compact(const std::vector<uint8_t>& stream, Form form = Form::kRecords) {
  std::vector<uint8_t> out(gnomon::tracefile::CompactBound(stream.size()));
  if (form != Form::kRecords) {
    std::vector<uint8_t> scratch(out.size());
    out.resize(gnomon::tracefile::CompactBlock(stream.data(), stream.size(), out.data(), scratch.data(),
                                               form == Form::kColumns
                                                   ? gnomon::tracefile::ColumnForm::kTicks
                                                   : gnomon::tracefile::ColumnForm::kTicksAndValues));
    return out;
  }
  uint64_t previous = 0;  // a whole block
  out.resize(gnomon::tracefile::CompactMessages(stream.data(), stream.size(), out.data(), previous));
  return out;
}

// The stream a compact block stands for, rebuilt through the walk the loader decodes
// with (by value: the walk restores ticks in the block it reads), as a file of `format`
// reads it.
gnomon::tracefile::CompactWalk Expand(std::vector<uint8_t> compact, std::vector<uint8_t>& out,
                                      uint16_t format = 7) {
  using gnomon::protocol::StoreLe;
  out.clear();
  auto put = [&](auto value) {
    uint8_t bytes[sizeof(value)];
    StoreLe(bytes, value);
    out.insert(out.end(), bytes, bytes + sizeof(value));
  };
  auto begin = [&](uint32_t location, uint64_t tick) {
    put(uint8_t(gnomon::protocol::MessageType::kZoneBegin));
    put(location);
    put(tick);
    return true;
  };
  auto end = [&](uint64_t tick) {
    put(uint8_t(gnomon::protocol::MessageType::kZoneEnd));
    put(tick);
    return true;
  };
  return gnomon::tracefile::WalkCompactBlock(
      compact.data(), compact.size(), format, begin, end,
      [&](uint32_t location, uint64_t begin_tick, uint64_t end_tick) {
        return begin(location, begin_tick) && end(end_tick);
      },
      [&](const uint8_t* message, size_t size) {
        out.insert(out.end(), message, message + size);
        return true;
      });
}

}  // namespace

TEST_CASE("compact blocks (formats 3, 6 and 7) round-trip every message, any tick, location and value") {
  std::mt19937_64 rng(5);
  StreamWriter w;
  w.AppInfo("compact").ThreadContext(1);
  uint64_t tick = 1000;
  for (int i = 0; i < 3000; ++i) {
    tick += rng() % 100;
    switch (i % 10) {
      case 0:
        w.ZoneBegin(uint32_t(rng() % 300), tick);
        break;
      case 1:
        w.ZoneEnd(tick);
        break;
      case 2:
        w.Frame(gnomon::protocol::MessageType::kFrameMark, 0, tick);
        break;
      case 3:
        w.Message(tick, 2, "text");
        break;
      case 4:
        w.Plot(3, tick, 1.5);
        break;
      case 5:
        w.GpuZoneBegin(1, 2, 3, tick);
        break;
      case 6:
        w.ZoneBegin(0xFFFF'FFFFu, rng());
        break;  // the largest id, absurd and backward ticks
      case 7:
        w.ZoneEnd(0);
        break;
      case 8: {
        // Names, and values that count, jump both ways, and take the ends of 64 bits.
        static const uint64_t kValues[] = {0, 1, 2, ~uint64_t{0}, 0, uint64_t{1} << 63, 3};
        if (i % 20 == 8) {
          w.ZoneName("name");
        } else {
          w.ZoneValue(i % 60 == 18 ? rng() : kValues[(i / 20) % 7]);
        }
        break;
      }
      default:
        w.Calibration(tick, 5, 6, 7);
        break;
    }
  }
  w.End(~uint64_t{0});
  for (const Form form : {Form::kRecords, Form::kColumns, Form::kValues}) {
    CAPTURE(int(form));
    const std::vector<uint8_t> compact = Compact(w.bytes(), form);
    CHECK(compact.size() < w.size());  // absurd ticks take 10-byte varints; the tight case is below
    std::vector<uint8_t> back;
    const auto walk = Expand(compact, back);
    CHECK(walk.ok);
    CHECK(walk.stopped_at == compact.size());
    CHECK(back == w.bytes());
    // As a file of format 3 to 5 reads it, and of 6: the forms each reads.
    for (const uint16_t format : {uint16_t(5), uint16_t(6)}) {
      CAPTURE(format);
      const bool readable = form == Form::kRecords || (form == Form::kColumns && format == 6);
      CHECK(Expand(compact, back, format).ok == readable);
      CHECK((back == w.bytes()) == readable);
    }
  }
}

TEST_CASE(
    "a block compacted piece by piece, as the trace writer appends or refers, equals it compacted at once") {
  std::mt19937_64 rng(11);
  std::vector<StreamWriter> pieces(7);
  std::vector<uint8_t> whole;
  uint64_t tick = 5000, last = 0;
  for (StreamWriter& piece : pieces) {
    for (int i = 0; i < 200; ++i) {
      tick += rng() % 300;
      last = tick;
      switch (rng() % 5) {
        case 0:
          piece.ZoneBegin(uint32_t(rng() % 50), tick);
          break;
        case 1:
          piece.ZoneEnd(tick);
          break;
        case 2:
          piece.Plot(1, tick, 2.5);
          break;
        case 3:
          piece.ZoneValue(rng() % 3 == 0 ? rng() : tick);
          break;
        default:
          piece.ZoneEnd(last = tick - 7000);
          break;  // a tick before the one before
      }
    }
    whole.insert(whole.end(), piece.bytes().begin(), piece.bytes().end());
  }
  const std::vector<uint8_t> at_once = Compact(whole);
  std::vector<uint8_t> in_turn(gnomon::tracefile::CompactBound(whole.size()));
  size_t used = 0;
  uint64_t previous = 0;
  for (const StreamWriter& piece : pieces) {
    used += gnomon::tracefile::CompactMessages(piece.bytes().data(), piece.size(), in_turn.data() + used,
                                               previous);
  }
  in_turn.resize(used);
  CHECK(in_turn == at_once);
  CHECK(previous == last);  // the last message's tick, for the next piece

  // Format 7 from pieces that lie apart (bytes a capture's lanes received), and with a
  // piece that is not messages among them: from there on the bytes stay as they are.
  auto compact_pieces = [](const std::vector<std::span<const uint8_t>>& spans) {
    size_t size = 0;
    for (const auto& span : spans) size += span.size();
    std::vector<uint8_t> out(gnomon::tracefile::CompactBound(size)), scratch(out.size());
    out.resize(gnomon::tracefile::CompactBlock(spans, out.data(), scratch.data()));
    return out;
  };
  std::vector<std::span<const uint8_t>> spans;
  for (const StreamWriter& piece : pieces) spans.emplace_back(piece.bytes().data(), piece.size());
  CHECK(compact_pieces(spans) == Compact(whole, Form::kValues));
  const std::vector<uint8_t> junk(40, 0xFF);  // the columns mark, never a message type
  spans.insert(spans.begin() + 3, std::span<const uint8_t>(junk));
  std::vector<uint8_t> with_junk;
  for (const auto& span : spans) with_junk.insert(with_junk.end(), span.begin(), span.end());
  CHECK(compact_pieces(spans) == Compact(with_junk, Form::kValues));
  // Read back: the pieces before the junk, whole, then the junk's unknown type.
  std::vector<uint8_t> back, before;
  for (size_t i = 0; i < 3; ++i) before.insert(before.end(), spans[i].begin(), spans[i].end());
  const auto walk = Expand(compact_pieces(spans), back);
  CHECK_FALSE(walk.ok);
  CHECK(walk.error.find("unknown message type 255") != std::string::npos);
  CHECK(back == before);
}

TEST_CASE("a tight loop's zones take 5 bytes each in a compact block, in every form") {
  StreamWriter w;
  uint64_t tick = 0x0123'4567'89AB'CDEFull;
  for (int i = 0; i < 10000; ++i) {
    w.ZoneBegin(7, tick += 35);
    w.ZoneEnd(tick += 33);
  }
  for (const Form form : {Form::kRecords, Form::kColumns, Form::kValues}) {
    CAPTURE(int(form));
    const std::vector<uint8_t> compact = Compact(w.bytes(), form);
    CHECK(compact.size() <= 10000 * 5 + 16);  // the first delta is the whole tick
    std::vector<uint8_t> back;
    CHECK(Expand(compact, back).ok);
    CHECK(back == w.bytes());
  }
}

TEST_CASE("format 6 puts a tight loop's ticks after its records, which then repeat exactly") {
  StreamWriter w;
  uint64_t tick = 1000;
  for (int i = 0; i < 100; ++i) {
    w.ZoneBegin(7, tick += 35 + uint64_t(i % 3));
    w.ZoneEnd(tick += 33);
  }
  const std::vector<uint8_t> columns = Compact(w.bytes(), Form::kColumns);
  REQUIRE(columns.size() > gnomon::tracefile::kColumnsHeader + 300);
  CHECK(columns[0] == gnomon::tracefile::kColumnsMark);
  CHECK(gnomon::protocol::LoadLe<uint32_t>(columns.data() + 1) == 300);  // begin, location, end
  for (int i = 0; i < 100; ++i) {
    CHECK(columns[gnomon::tracefile::kColumnsHeader + 3 * size_t(i)] == 2);
    CHECK(columns[gnomon::tracefile::kColumnsHeader + 3 * size_t(i) + 1] == 7);
    CHECK(columns[gnomon::tracefile::kColumnsHeader + 3 * size_t(i) + 2] == 3);
  }
  // The ticks: the first begin's whole tick (2 bytes), then 199 one-byte deltas.
  CHECK(columns.size() == gnomon::tracefile::kColumnsHeader + 300 + 2 + 199);
  CHECK(columns.back() == 33 * 2);  // zigzag
}

TEST_CASE("format 7 puts a zone value's difference in the column: a counter's takes one byte") {
  using gnomon::tracefile::kColumnsHeader;
  StreamWriter w;
  uint64_t tick = 1000;
  for (int i = 0; i < 100; ++i) {
    w.ZoneBegin(7, tick += 35);
    w.ZoneValue(1'000'000 + uint64_t(i));
    w.ZoneEnd(tick += 33);
  }
  const std::vector<uint8_t> block = Compact(w.bytes(), Form::kValues);
  REQUIRE(block.size() > kColumnsHeader + 400);
  CHECK(block[0] == gnomon::tracefile::kValuesMark);
  CHECK(gnomon::protocol::LoadLe<uint32_t>(block.data() + 1) == 400);  // begin, location, value, end
  for (int i = 0; i < 100; ++i) {
    CHECK(block[kColumnsHeader + 4 * size_t(i) + 2] == uint8_t(gnomon::protocol::MessageType::kZoneValue));
  }
  // The column: the first begin's tick (2 bytes) and value (3 bytes, 2,000,000 zigzag),
  // then 2 one-byte ticks and a one-byte value a zone, in record order.
  CHECK(block.size() == kColumnsHeader + 400 + 2 + 3 + 1 + 99 * 3);
  const uint8_t* column = block.data() + kColumnsHeader + 400;
  CHECK(column[5] == 33 * 2);  // the first end's tick
  CHECK(column[6] == 35 * 2);  // the second begin's
  CHECK(column[7] == 1 * 2);   // its value, one more
  std::vector<uint8_t> back;
  CHECK(Expand(block, back).ok);
  CHECK(back == w.bytes());
  // Format 6's form of the same block keeps each value's nine bytes among the records.
  CHECK(Compact(w.bytes(), Form::kColumns).size() == block.size() + 100 * 8 - (3 + 99));
}

TEST_CASE("a damaged format-7 block gives its whole records before the damage") {
  StreamWriter w;
  w.ThreadContext(1).ZoneBegin(1, 100).ZoneValue(5).ZoneEnd(200).ZoneValue(~uint64_t{0});
  const std::vector<uint8_t> good = Compact(w.bytes(), Form::kValues);
  std::vector<uint8_t> back;
  REQUIRE(Expand(good, back).ok);
  REQUIRE(back == w.bytes());

  SUBCASE("the last value's difference missing") {
    std::vector<uint8_t> bad = good;
    bad.pop_back();  // 2^64 - 6 after 5: -6, one byte zigzag
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("zone value's difference is cut short") != std::string::npos);
    StreamWriter expected;
    expected.ThreadContext(1).ZoneBegin(1, 100).ZoneValue(5).ZoneEnd(200);
    CHECK(back == expected.bytes());
  }
  SUBCASE("a value's difference longer than ten bytes") {
    std::vector<uint8_t> bad(good.begin(), good.end() - 1);
    bad.insert(bad.end(), 11, 0xFF);
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("zone value's difference is cut short or too long") != std::string::npos);
  }
  SUBCASE("bytes of the column left over") {
    std::vector<uint8_t> bad = good;
    bad.insert(bad.end(), {2, 2, 2});
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("3 byte(s) of ticks and values that no record takes") != std::string::npos);
    CHECK(back == w.bytes());
  }
  SUBCASE("records claimed past the block's end") {  // a header cut short: with format 6's, below
    std::vector<uint8_t> bad = good;
    gnomon::protocol::StoreLe<uint32_t>(bad.data() + 1, uint32_t(bad.size()));
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("records claim") != std::string::npos);
    CHECK(back.empty());
  }
  SUBCASE("a walk stopped at a value is not damage, and says where") {
    std::vector<uint8_t> block = good;
    int values = 0;
    const auto r = gnomon::tracefile::WalkCompactBlock(
        block.data(), block.size(), 7, [](uint32_t, uint64_t) { return true; }, [](uint64_t) { return true; },
        [](uint32_t, uint64_t, uint64_t) { return true; },
        [&](const uint8_t* message, size_t size) {
          return message[0] != uint8_t(gnomon::protocol::MessageType::kZoneValue) || size != 9 ||
                 ++values < 2;
        });
    CHECK(r.ok);
    CHECK(values == 2);
    CHECK(r.stopped_at == gnomon::tracefile::kColumnsHeader + 5 + 2 + 1 + 1);  // context, begin, value, end
  }
  SUBCASE("in a file of format 6, the mark is an unknown message type") {
    const auto r = Expand(good, back, 6);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("unknown message type 254") != std::string::npos);
    CHECK(r.stopped_at == 0);
    CHECK(back.empty());
  }
}

TEST_CASE("a damaged compact block gives its whole messages before the damage, and where it stopped") {
  StreamWriter w;
  w.ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(200);
  const std::vector<uint8_t> good = Compact(w.bytes());
  std::vector<uint8_t> back;

  SUBCASE("a varint cut short") {
    std::vector<uint8_t> bad = good;
    bad.insert(bad.end(), {2, 0x81, 0x80});
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("cut short") != std::string::npos);
    CHECK(r.stopped_at == good.size());
    CHECK(back == w.bytes());
  }
  SUBCASE("a leaf whose end is cut short: its begin is handed on, the end stops the walk") {
    std::vector<uint8_t> bad = good;
    bad.insert(bad.end(), {2, 5, 14, 3, 0x81});  // begin (location 5, +7), then a cut end
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("cut short") != std::string::npos);
    CHECK(r.stopped_at == good.size() + 3);
    StreamWriter expected;
    expected.ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(200).ZoneBegin(5, 207);
    CHECK(back == expected.bytes());
  }
  SUBCASE("a varint longer than ten bytes") {
    std::vector<uint8_t> bad = good;
    bad.push_back(3);
    bad.insert(bad.end(), 11, 0xFF);
    bad.push_back(0);
    CHECK_FALSE(Expand(bad, back).ok);
    CHECK(back == w.bytes());
  }
  SUBCASE("a location past 32 bits") {
    std::vector<uint8_t> bad = good;
    bad.insert(bad.end(), {2, 0x80, 0x80, 0x80, 0x80, 0x10, 0});
    CHECK_FALSE(Expand(bad, back).ok);
  }
  SUBCASE("an unknown type") {
    std::vector<uint8_t> bad = good;
    bad.push_back(0xFE);
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("unknown message type 254") != std::string::npos);
    CHECK(back == w.bytes());
  }
  SUBCASE("random bytes") {
    std::mt19937_64 rng(9);
    for (int i = 0; i < 2000; ++i) {
      std::vector<uint8_t> noise(rng() % 64);
      for (uint8_t& b : noise) b = uint8_t(rng() % 5 == 0 ? rng() % 4 : rng());
      for (const uint8_t mark :
           {uint8_t(0), gnomon::tracefile::kColumnsMark, gnomon::tracefile::kValuesMark}) {
        std::vector<uint8_t> block = noise;
        if (mark != 0) block.insert(block.begin(), {mark, uint8_t(rng() % 64), 0, 0, 0});
        const auto r = Expand(block, back);  // ASan checks every read stays in the block
        CHECK(r.stopped_at <= block.size());
        CHECK(r.ok == (r.stopped_at == block.size()));
      }
    }
  }
}

TEST_CASE("a damaged format-6 block gives its whole records before the damage, and where it stopped") {
  using gnomon::tracefile::kColumnsHeader;
  StreamWriter w;
  w.ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(200).ZoneBegin(2, 300).Plot(3, 350, 1.5).ZoneEnd(400);
  const std::vector<uint8_t> good = Compact(w.bytes(), Form::kColumns);
  const uint32_t records = gnomon::protocol::LoadLe<uint32_t>(good.data() + 1);
  std::vector<uint8_t> back;
  REQUIRE(Expand(good, back).ok);
  REQUIRE(back == w.bytes());

  SUBCASE("ticks missing: the records up to the first without its tick") {
    std::vector<uint8_t> bad = good;
    bad.pop_back();  // the last end's tick
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("cut short") != std::string::npos);
    StreamWriter expected;
    expected.ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(200).ZoneBegin(2, 300).Plot(3, 350, 1.5);
    CHECK(back == expected.bytes());
  }
  SUBCASE("ticks left over") {
    std::vector<uint8_t> bad = good;
    bad.insert(bad.end(), {4, 4});
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("2 byte(s) of ticks that no record takes") != std::string::npos);
    CHECK(r.stopped_at == kColumnsHeader + records);
    CHECK(back == w.bytes());
  }
  SUBCASE("records claimed past the block's end") {
    std::vector<uint8_t> bad = good;
    gnomon::protocol::StoreLe<uint32_t>(bad.data() + 1, uint32_t(bad.size()));
    const auto r = Expand(bad, back);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("records claim") != std::string::npos);
    CHECK(r.stopped_at == 0);
    CHECK(back.empty());
  }
  SUBCASE("a header cut short, under either mark") {
    for (const uint8_t mark : {gnomon::tracefile::kColumnsMark, gnomon::tracefile::kValuesMark}) {
      CAPTURE(int(mark));
      const auto r = Expand({mark, 1, 0}, back);
      CHECK_FALSE(r.ok);
      CHECK(r.error.find("header is cut short (3 bytes)") != std::string::npos);
      CHECK(r.stopped_at == 0);
      CHECK(back.empty());
    }
  }
  SUBCASE("a walk stopped by its caller is not damage, and says where") {
    std::vector<uint8_t> block = good;
    int leaves = 0;
    const auto r = gnomon::tracefile::WalkCompactBlock(
        block.data(), block.size(), 6, [](uint32_t, uint64_t) { return true; }, [](uint64_t) { return true; },
        [&](uint32_t, uint64_t, uint64_t) { return ++leaves < 1; },
        [](const uint8_t*, size_t) { return true; });
    CHECK(r.ok);
    CHECK(leaves == 1);
    CHECK(r.stopped_at == kColumnsHeader + 5);  // at the leaf: after the 5-byte ThreadContext
    CHECK(r.stopped_at < block.size());
  }
  SUBCASE("in a file of format 3 to 5, the mark is an unknown message type") {
    const auto r = Expand(good, back, 5);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("unknown message type 255") != std::string::npos);
    CHECK(r.stopped_at == 0);
  }
}
