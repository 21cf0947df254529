#include "reference_decoder.h"

#include <cstdio>
#include <cstring>
#include <map>

namespace gnomon::test {
namespace {

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool Has(size_t n) const { return size_ - pos_ >= n; }
  uint64_t Unsigned(size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += bytes;
    return v;
  }
  std::string Text(size_t n) {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string Value(const std::string& type, uint64_t bits) {
  if (type == "i64") return std::to_string(int64_t(bits));
  if (type == "f64") {
    double d;
    std::memcpy(&d, &bits, 8);
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", d);
    return text;
  }
  return std::to_string(bits);
}

}  // namespace

std::string ProtocolDocPath() { return std::string(GNOMON_SOURCE_DIR) + "/docs/protocol.md"; }

ReferenceDecodeResult ReferenceDecode(const ProtocolDoc& doc, const uint8_t* data, size_t size) {
  ReferenceDecodeResult result;
  Cursor c(data, size);
  while (c.Has(1)) {
    Cursor m = c;  // parse a copy; commit only whole messages
    const DocMessage* layout = doc.Find(int(m.Unsigned(1)));
    if (layout == nullptr) {
      result.unknown_type = true;
      break;
    }
    std::string line = layout->name;
    std::map<std::string, uint64_t> sizes;  // length and count fields read so far
    bool complete = true;
    for (const DocField& field : layout->fields) {
      if (field.offset == 0) continue;  // the tag
      if (field.size_field.empty()) {
        if (!m.Has(size_t(field.size))) {
          complete = false;
          break;
        }
        const uint64_t value = m.Unsigned(size_t(field.size));
        sizes[field.name] = value;
        line += " " + field.name + "=" + Value(field.type, value);
        continue;
      }
      const uint64_t count = sizes[field.size_field];
      if (!m.Has(count * size_t(field.unit_bytes))) {
        complete = false;
        break;
      }
      if (field.unit_bytes == 1) {
        line += " " + field.name + "='" + m.Text(count) + "'";
      } else {
        line += " " + field.name + "=[";
        for (uint64_t i = 0; i < count; ++i) line += (i ? "," : "") + std::to_string(m.Unsigned(8));
        line += "]";
      }
    }
    if (!complete) break;
    result.messages.push_back(line);
    c = m;
  }
  result.consumed = c.pos();
  return result;
}

}  // namespace gnomon::test
