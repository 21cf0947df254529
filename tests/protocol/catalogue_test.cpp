// docs/protocol.md against the catalogues (protocol/messages.def, handshake.def): every message, frame,
// field, offset, size and tail the code has, the page has, in the same order, and no other.
#include <doctest/doctest.h>

#include <string>

#include "gnomon/protocol/handshake.h"
#include "gnomon/protocol/messages.h"
#include "protocol_doc.h"
#include "reference_decoder.h"

namespace {

using gnomon::protocol::FieldInfo;
using gnomon::protocol::FieldKind;
using gnomon::protocol::MessageInfo;

std::string DocType(FieldKind kind) {
  switch (kind) {
    case FieldKind::kTag:
    case FieldKind::kU8:
      return "u8";
    case FieldKind::kU16:
      return "u16";
    case FieldKind::kU32:
      return "u32";
    case FieldKind::kU64:
      return "u64";
    case FieldKind::kI64:
      return "i64";
    case FieldKind::kF64:
      return "f64";
    case FieldKind::kTick:
      return "tick";
    case FieldKind::kStringLength:
      return "length";
    case FieldKind::kValueCount:
      return "count";
  }
  return "?";
}

// The rows the page should have for `info`, one line each, in the reader's terms.
std::vector<std::string> ExpectedRows(const MessageInfo& info) {
  std::vector<std::string> rows, tails;
  for (size_t i = 0; i < info.field_count; ++i) {
    const FieldInfo& f = info.fields[i];
    rows.push_back(std::to_string(f.offset) + " " + std::to_string(f.size) + " " + DocType(f.kind) + " " +
                   f.name);
    if (f.kind == FieldKind::kStringLength)
      tails.push_back(std::string("`") + f.name + "` bytes " + f.tail_name);
    if (f.kind == FieldKind::kValueCount)
      tails.push_back(std::string("8 × `") + f.name + "` u64 " + f.tail_name);
  }
  rows.insert(rows.end(), tails.begin(), tails.end());
  return rows;
}

std::vector<std::string> DocRows(const gnomon::test::DocMessage& m) {
  std::vector<std::string> rows;
  for (const gnomon::test::DocField& f : m.fields) {
    if (f.size_field.empty()) {
      rows.push_back(std::to_string(f.offset) + " " + std::to_string(f.size) + " " + f.type + " " + f.name);
    } else {
      rows.push_back((f.unit_bytes == 8 ? "8 × `" : "`") + f.size_field + "` " + f.type + " " + f.name);
    }
  }
  return rows;
}

std::string Join(const std::vector<std::string>& rows) {
  std::string text;
  for (const std::string& row : rows) text += "  " + row + "\n";
  return text;
}

}  // namespace

TEST_CASE("docs/protocol.md has every message of the catalogue, field by field, and no other") {
  const gnomon::test::ProtocolDoc doc = gnomon::test::ReadProtocolDoc(gnomon::test::ProtocolDocPath());
  REQUIRE_MESSAGE(doc.errors.empty(), doc.errors.front());
  size_t known = 0;
  for (int tag = 0; tag < 256; ++tag) {
    const MessageInfo* info = gnomon::protocol::FindMessage(uint8_t(tag));
    const gnomon::test::DocMessage* page = doc.Find(tag);
    CAPTURE(tag);
    if (info == nullptr) {
      CHECK_MESSAGE(page == nullptr, "the page describes a message the catalogue does not have");
      continue;
    }
    ++known;
    REQUIRE_MESSAGE(page != nullptr, "the page has no section '### ", tag, " ", info->name, "'");
    CHECK(page->name == info->name);
    const std::vector<std::string> expected = ExpectedRows(*info);
    CHECK_MESSAGE(DocRows(*page) == expected, "the section's table should read (offset size type field):\n",
                  Join(expected), "but reads:\n", Join(DocRows(*page)));
  }
  CHECK(doc.messages.size() == known);
}

TEST_CASE("the summary table of docs/protocol.md lists each message with its size and scope") {
  const gnomon::test::ProtocolDoc doc = gnomon::test::ReadProtocolDoc(gnomon::test::ProtocolDocPath());
  REQUIRE_MESSAGE(doc.errors.empty(), doc.errors.front());
  size_t row = 0;
  for (int tag = 0; tag < 256; ++tag) {
    const MessageInfo* info = gnomon::protocol::FindMessage(uint8_t(tag));
    if (info == nullptr) continue;
    CAPTURE(tag);
    REQUIRE_MESSAGE(row < doc.summary.size(), "the summary stops before ", info->name);
    const gnomon::test::DocSummaryRow& r = doc.summary[row++];
    CHECK(r.tag == tag);
    CHECK(r.name == info->name);
    CHECK(r.fixed_bytes == info->fixed_size);
    CHECK(r.is_thread_bound == info->is_thread_bound);
    std::string tails;
    for (size_t i = 0; i < info->field_count; ++i) {
      const FieldInfo& f = info->fields[i];
      if (f.tail_name == nullptr) continue;
      if (!tails.empty()) tails += ", ";
      tails +=
          std::string("`") + f.tail_name + "`" + (f.kind == FieldKind::kValueCount ? " (8 bytes each)" : "");
    }
    CHECK(r.followed_by == tails);
  }
  CHECK(row == doc.summary.size());
}

TEST_CASE("docs/protocol.md has every frame of the handshake catalogue, field by field, and no other") {
  const gnomon::test::ProtocolDoc doc = gnomon::test::ReadProtocolDoc(gnomon::test::ProtocolDocPath());
  REQUIRE_MESSAGE(doc.errors.empty(), doc.errors.front());
  const std::vector<gnomon::protocol::FrameInfo> frames = gnomon::protocol::HandshakeFrames();
  REQUIRE(doc.frames.size() == frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const gnomon::protocol::FrameInfo& code = frames[i];
    const gnomon::test::DocFrame& page = doc.frames[i];
    CAPTURE(code.name);
    CHECK(page.name == code.name);
    CHECK(size_t(page.size) == code.size);
    std::vector<std::string> expected, written;
    for (const gnomon::protocol::FrameField& f : code.fields)
      expected.push_back(std::to_string(f.offset) + " " + std::to_string(f.size) + " " + f.name);
    for (const gnomon::test::DocFrameField& f : page.fields)
      written.push_back(std::to_string(f.offset) + " " + std::to_string(f.size) + " " + f.name);
    CHECK_MESSAGE(written == expected, "the table should read (offset size field):\n", Join(expected),
                  "but reads:\n", Join(written));
    // The magic's row names it as it is sent.
    REQUIRE(!page.fields.empty());
    CHECK(page.fields[0].value == "ASCII `" + std::string(code.magic) + "`");
    // Fields are contiguous from the magic to the end.
    size_t end = 0;
    for (const gnomon::protocol::FrameField& f : code.fields) {
      CHECK(f.offset == end);
      end += f.size;
    }
    CHECK(end == code.size);
  }
}

TEST_CASE("the catalogue's derived facts hold") {
  for (int tag = 0; tag < 256; ++tag) {
    const MessageInfo* info = gnomon::protocol::FindMessage(uint8_t(tag));
    if (info == nullptr) continue;
    CAPTURE(info->name);
    // Fields are contiguous from the tag to the end of the fixed part.
    size_t end = 0;
    int ticks = 0;
    for (size_t i = 0; i < info->field_count; ++i) {
      CHECK(info->fields[i].offset == end);
      end += info->fields[i].size;
      ticks += info->fields[i].kind == FieldKind::kTick;
    }
    CHECK(end == info->fixed_size);
    CHECK(ticks <= 1);
    CHECK(info->max_size <= gnomon::protocol::kMaxMessageBytes);
  }
}
