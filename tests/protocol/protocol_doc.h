// Reads the message tables of docs/protocol.md: the summary table and, for each
// message, its "### TAG Name" section's table of fields. What the page says, as it says
// it: the catalogue test compares it with the code's catalogue, and the reference
// decoder decodes streams with it.
#pragma once

#include <string>
#include <vector>

namespace gnomon::test {

struct DocField {
  std::string name;        // without backticks
  std::string type;        // u8 u16 u32 u64 i64 f64 tick length count bytes
  int offset = -1;         // bytes from the tag; -1 for what follows the fixed part
  int size = 0;            // bytes, for a field of the fixed part
  std::string size_field;  // for what follows: the length or count field giving its size
  int unit_bytes = 1;      // bytes per unit of size_field (8 for values)
};

struct DocMessage {
  int tag = 0;
  std::string name;
  std::vector<DocField> fields;  // in order, the tag first
};

struct DocSummaryRow {
  int tag = 0;
  std::string name;
  int fixed_bytes = 0;
  std::string followed_by;  // as written
  bool is_thread_bound = false;
};

// A frame of the handshake section: "`Name`, a → b, N bytes" and its table.
struct DocFrameField {
  int offset = 0;
  int size = 0;
  std::string name;
  std::string value;  // as written
};
struct DocFrame {
  std::string name;
  int size = 0;
  std::vector<DocFrameField> fields;
};

struct ProtocolDoc {
  std::vector<DocSummaryRow> summary;
  std::vector<DocMessage> messages;
  std::vector<DocFrame> frames;
  std::vector<std::string> errors;  // lines the reader could not make sense of
  const DocMessage* Find(int tag) const;
};

// Reads `path` (docs/protocol.md); errors name what could not be read.
ProtocolDoc ReadProtocolDoc(const std::string& path);

}  // namespace gnomon::test
