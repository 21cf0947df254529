#include "gnomon/viewer/annotations.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

// A reader of the one shape an annotations file has.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  bool Parse(std::vector<Annotation>& out) {
    if (!Expect('[')) return false;
    if (Peek() == ']') return Expect(']') && End();
    while (true) {
      if (out.size() >= kMaxAnnotations) return Fail("more than 100000 annotations");
      Annotation a;
      if (!Object(a)) return false;
      out.push_back(std::move(a));
      if (Peek() == ',') {
        Expect(',');
        continue;
      }
      return Expect(']') && End();
    }
  }
  const std::string& error() const { return error_; }

 private:
  bool Object(Annotation& a) {
    if (!Expect('{')) return false;
    bool has_begin = false, has_end = false;
    if (Peek() == '}') return Fail("an annotation without its times");
    while (true) {
      std::string key;
      if (!String(key) || !Expect(':')) return false;
      if (key == "begin_ns" || key == "end_ns" || key == "color") {
        int64_t value = 0;
        if (!Integer(value)) return false;
        if (key == "begin_ns") a.begin_ns = value, has_begin = true;
        if (key == "end_ns") a.end_ns = value, has_end = true;
        if (key == "color") {
          if (value < 0 || value > 0xFFFFFFFFll) return Fail("a colour is a number from 0 to 4294967295");
          a.color = uint32_t(value);
        }
      } else if (key == "text") {
        if (!String(a.text)) return false;
        if (a.text.size() > kMaxTextBytes) return Fail("a text longer than 4096 bytes");
      } else if (!Skip()) {
        return false;
      }
      if (Peek() == ',') {
        Expect(',');
        continue;
      }
      if (!Expect('}')) return false;
      break;
    }
    if (!has_begin || !has_end) return Fail("an annotation without begin_ns and end_ns");
    if (a.end_ns < a.begin_ns) return Fail("an annotation that ends before it begins");
    return true;
  }

  bool Integer(int64_t& value) {
    Space();
    const char* from = text_.data() + pos_;
    const char* to = text_.data() + text_.size();
    const auto [end, ec] = std::from_chars(from, to, value);
    if (ec != std::errc() || end == from) return Fail("a whole number was expected");
    pos_ += size_t(end - from);
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
      return Fail("a whole number was expected");
    return true;
  }

  // A value of a key this reader does not know: a number, a string, true, false or null.
  bool Skip() {
    const char c = Peek();
    if (c == '"') {
      std::string ignored;
      return String(ignored);
    }
    for (const char* word : {"true", "false", "null"}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += std::strlen(word);
        return true;
      }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      while (pos_ < text_.size() && std::strchr("+-.eE0123456789", text_[pos_]) != nullptr) ++pos_;
      return true;
    }
    return Fail("a number, a string, true, false or null was expected");
  }

  bool String(std::string& out) {
    if (!Expect('"')) return false;
    std::string raw;
    while (true) {
      if (pos_ >= text_.size()) return Fail("a string that does not end");
      const char c = text_[pos_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("a control character inside a string");
      if (c != '\\') {
        raw += c;
        continue;
      }
      if (pos_ >= text_.size()) return Fail("a string that does not end");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          raw += '"';
          break;
        case '\\':
          raw += '\\';
          break;
        case '/':
          raw += '/';
          break;
        case 'b':
          raw += '\b';
          break;
        case 'f':
          raw += '\f';
          break;
        case 'n':
          raw += '\n';
          break;
        case 'r':
          raw += '\r';
          break;
        case 't':
          raw += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > text_.size()) return Fail("a \\u escape cut short");
          unsigned code = 0;
          const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
          if (ec != std::errc() || end != text_.data() + pos_ + 4)
            return Fail("a \\u escape that is not hex");
          pos_ += 4;
          if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;  // surrogates: not kept
          if (code < 0x80) {
            raw += char(code);
          } else if (code < 0x800) {
            raw += char(0xC0 | (code >> 6));
            raw += char(0x80 | (code & 0x3F));
          } else {
            raw += char(0xE0 | (code >> 12));
            raw += char(0x80 | ((code >> 6) & 0x3F));
            raw += char(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          return Fail("an unknown escape in a string");
      }
    }
    server::AssignUtf8(out, raw);  // NULs and invalid bytes become U+FFFD
    return true;
  }

  void Space() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) != nullptr && text_[pos_] != '\0')
      ++pos_;
  }
  char Peek() {
    Space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool Expect(char c) {
    if (Peek() != c) return Fail(std::string("'") + c + "' was expected");
    ++pos_;
    return true;
  }
  bool End() {
    if (Peek() != '\0' || pos_ < text_.size()) return Fail("something after the list");
    return true;
  }
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(pos_);
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::string AnnotationsPathFor(const std::string& trace_path) { return trace_path + ".annotations.json"; }

std::string AnnotationsJson(const std::vector<Annotation>& annotations) {
  std::string json = "[";
  for (size_t i = 0; i < annotations.size(); ++i) {
    const Annotation& a = annotations[i];
    json += (i == 0 ? "\n" : ",\n") + std::string("{\"begin_ns\":") + std::to_string(a.begin_ns) +
            ",\"end_ns\":" + std::to_string(a.end_ns) + ",\"color\":" + std::to_string(a.color) +
            ",\"text\":" + server::JsonQuote(a.text) + "}";
  }
  return json + "\n]\n";
}

bool ParseAnnotations(std::string_view json, std::vector<Annotation>& out, std::string& error) {
  Reader reader(json);
  std::vector<Annotation> read;
  if (!reader.Parse(read)) {
    error = reader.error();
    return false;
  }
  out = std::move(read);
  return true;
}

std::string SaveAnnotations(const std::string& path, const std::vector<Annotation>& annotations) {
  const std::string temporary = path + ".partial-" + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << AnnotationsJson(annotations);
    if (!file.flush()) {
      const std::string why = std::strerror(errno);
      std::remove(temporary.c_str());
      return "cannot write " + path + ": " + why;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    return "cannot write " + path + ": " + why;
  }
  return "";
}

bool LoadAnnotations(const std::string& path, std::vector<Annotation>& out, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    out.clear();
    return true;
  }
  constexpr uintmax_t kMaxFileBytes = 64 << 20;
  const uintmax_t size =
      std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (ec || !std::filesystem::is_regular_file(path, ec)) {
    error = "cannot read " + path + ": not a file";
    return false;
  }
  if (size > kMaxFileBytes) {
    error = path + ": larger than 64 MiB, not an annotations file";
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  std::string text(size_t(size), '\0');
  if (!file.read(text.data(), std::streamsize(size))) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!ParseAnnotations(text, out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

}  // namespace gnomon::viewer
