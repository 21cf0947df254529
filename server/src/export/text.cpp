#include "gnomon/server/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <vector>

namespace gnomon::server {
namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 when it is not one (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF).
size_t SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return uint8_t(text[i + k]); };
  const uint8_t b0 = byte(0);
  const size_t left = text.size() - i;
  auto continuation = [&](size_t k) { return k < left && (byte(k) & 0xC0) == 0x80; };
  if (b0 < 0x80) return b0 == 0 ? 0 : 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (b0 == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
    if (b0 == 0xED && byte(1) >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (b0 == 0xF0 && byte(1) < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && byte(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

bool IsPlainAscii(std::string_view text) {
  for (char c : text) {
    if (uint8_t(c) >= 0x80 || c == 0) return false;
  }
  return true;
}

}  // namespace

void AssignUtf8(std::string& out, std::string_view text) {
  if (IsPlainAscii(text)) {
    out.assign(text);
    return;
  }
  out.clear();
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text, i);
    if (n == 0) {
      out.append(kReplacementCharacter);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
}

bool PathEndsWith(std::string_view path, std::string_view end) {
  if (end.empty() || !path.ends_with(end)) return false;
  return path.size() == end.size() || end.front() == '/' || path[path.size() - end.size() - 1] == '/';
}

std::string CsvField(std::string_view text) {
  const std::string printable = Printable(text);
  std::string out = "\"";
  if (!printable.empty() && std::string_view("=+-@").find(printable[0]) != std::string_view::npos)
    out += '\'';
  for (char c : printable) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Printable(std::string_view text) {
  const std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  char escape[8];
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = uint8_t(valid[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(escape, sizeof(escape), "\\x%02x", c);
      out += escape;
    } else if (c == 0xC2 && i + 1 < valid.size() && uint8_t(valid[i + 1]) < 0xA0) {  // U+0080 - U+009F
      std::snprintf(escape, sizeof(escape), "\\u%04x", uint8_t(valid[i + 1]));
      out += escape;
      ++i;
    } else if (c == 0xE2 && i + 2 < valid.size() &&
               ((uint8_t(valid[i + 1]) == 0x80 &&
                 (uint8_t(valid[i + 2]) == 0x8E || uint8_t(valid[i + 2]) == 0x8F ||
                  (uint8_t(valid[i + 2]) >= 0xAA && uint8_t(valid[i + 2]) <= 0xAE))) ||
                (uint8_t(valid[i + 1]) == 0x81 && uint8_t(valid[i + 2]) >= 0xA6 &&
                 uint8_t(valid[i + 2]) <= 0xA9))) {
      // The marks and overrides of bidirectional text (U+200E, U+200F, U+202A - U+202E,
      // U+2066 - U+2069): shown, not obeyed, so that a name cannot reorder a line.
      const unsigned code =
          0x2000 | (unsigned(uint8_t(valid[i + 1]) & 0x3F) << 6) | (uint8_t(valid[i + 2]) & 0x3F);
      std::snprintf(escape, sizeof(escape), "\\u%04x", code);
      out += escape;
      i += 2;
    } else {
      out += char(c);
    }
  }
  return out;
}

size_t CountCharacters(std::string_view utf8) {
  size_t count = 0;
  for (char c : utf8) count += (uint8_t(c) & 0xC0) != 0x80;
  return count;
}

namespace {

// Where a column may be cut without splitting a word: before or after one of these.
bool IsWordBoundary(char c) {
  return std::string_view(" \t:/\\_-.,;<>()[]&*=+|").find(c) != std::string_view::npos;
}

}  // namespace

std::string FitColumn(std::string_view text, size_t width) {
  std::string out = Printable(text);
  size_t characters = CountCharacters(out);
  if (characters > width && width > 0) {
    // A column of 8 or more is cut at a word's end where one lies in the second half of
    // what fits, and says so with "..."; a narrower one keeps what fits and ends in "~".
    const bool words = width >= 8;
    const size_t fits = words ? width - 3 : width - 1;
    std::vector<size_t> starts;  // byte offset of each of the first `fits` + 1 characters
    for (size_t i = 0; i < out.size() && starts.size() <= fits; ++i) {
      if ((uint8_t(out[i]) & 0xC0) != 0x80) starts.push_back(i);
    }
    size_t keep = fits;
    if (words && !IsWordBoundary(out[starts[fits]])) {
      for (size_t k = fits; k > fits / 2; --k) {
        if (IsWordBoundary(out[starts[k - 1]])) {
          keep = k;
          break;
        }
      }
    }
    while (words && keep > 1 && out[starts[keep - 1]] == ' ') --keep;  // no space before "..."
    out.resize(starts[keep]);
    out += words ? "..." : "~";
    characters = keep + (words ? 3 : 1);
  } else if (characters > width) {
    out.clear();
    characters = 0;
  }
  out.append(width - characters, ' ');
  return out;
}

std::string ShortenSymbol(std::string_view name, size_t width) {
  std::string out(name);
  if (CountCharacters(out) <= width) return out;
  // The parameter list: the parenthesised group that ends the name (before qualifiers
  // such as " const"), never one that a scope follows, as "(anonymous namespace)::".
  const size_t close = out.rfind(')');
  if (close != std::string::npos && out.find("::", close) == std::string::npos) {
    int depth = 0;
    for (size_t i = close + 1; i-- > 0;) {
      depth += out[i] == ')' ? 1 : out[i] == '(' ? -1 : 0;
      if (depth == 0) {
        if (i > 0 && close - i > 1) out.replace(i, close - i + 1, "(...)");
        break;
      }
    }
  }
  if (CountCharacters(out) <= width) return out;
  // Then each outermost template argument list ("->" closes none). An operator's name
  // ("operator<", "operator<=>") is not one: such a name stays as it is, as does an
  // unbalanced one.
  if (out.find("operator") != std::string::npos) return out;
  std::string shorter;
  int depth = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (c == '<' && depth++ == 0) {
      shorter += "<...";
    } else if (c == '>' && depth > 0 && out[i - 1] != '-') {
      if (--depth == 0) shorter += '>';
    } else if (depth == 0) {
      shorter += c;
    }
  }
  return depth == 0 ? shorter : out;
}

std::string Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

std::string FormatDuration(double ns) {
  char buffer[32];
  if (ns > -0.5 && ns < 0.5) ns = 0;  // what rounds to nothing is 0, never "-0"
  const double magnitude = ns < 0 ? -ns : ns;
  // The unit is chosen by what the digits round to: 999,999 ns is "1 ms", never "1e+03 us".
  if (magnitude < 999.5) {
    std::snprintf(buffer, sizeof(buffer), "%.0f ns", ns);
  } else if (magnitude < 999.5e3) {
    std::snprintf(buffer, sizeof(buffer), "%.3g us", ns / 1e3);
  } else if (magnitude < 999.5e6) {
    std::snprintf(buffer, sizeof(buffer), "%.3g ms", ns / 1e6);
  } else if (magnitude < 9999.5e9) {
    std::snprintf(buffer, sizeof(buffer), "%.4g s", ns / 1e9);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.0f s", ns / 1e9);
  }
  return buffer;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = double(bytes) / 1024;
  size_t unit = 0;
  while (value >= 999.5 && unit + 1 < std::size(units)) {  // "1.02e+03 KiB" never
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g %s", value, units[unit]);
  return buffer;
}

std::string FormatBound(uint32_t early_ns, uint32_t late_ns) {
  auto side = [](uint32_t ns) { return ns == UINT32_MAX ? std::string("unknown") : FormatDuration(ns); };
  if (early_ns == late_ns) return "+/- " + side(early_ns);
  return "-" + side(early_ns) + "/+" + side(late_ns);
}

std::string FormatRange(double min_ns, double max_ns) {
  auto side = [](double ns) {
    if (std::isinf(ns)) return std::string(ns < 0 ? "-inf" : "+inf");
    return (ns >= 0 ? "+" : "") + FormatDuration(ns);
  };
  return "[" + side(min_ns) + ", " + side(max_ns) + "]";
}

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : ValidUtf8(text)) {  // strict parsers reject invalid UTF-8
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char escape[8];
          std::snprintf(escape, sizeof(escape), "\\u%04x", c);
          out += escape;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

bool ContainsText(std::string_view text, std::string_view needle, bool case_sensitive) {
  if (case_sensitive) return text.find(needle) != std::string_view::npos;
  // std::search, not std::ranges::search: Clang 14 cannot build the latter with GCC 12's library.
  return std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

}  // namespace gnomon::server
