// Text that came from a program (names, messages) made safe for where it goes.
//
// A program can send any bytes as a name. The model keeps names as valid UTF-8
// (AssignUtf8, at ingestion: invalid sequences and NULs become U+FFFD), and every place
// that prints or exports them escapes what its reader would act on: a terminal's control
// characters (Printable), JSON's (JsonQuote), a table's column width
// (FitColumn cuts at a character, not inside one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gnomon::server {

// U+FFFD, the replacement character, in UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// `out` = `text` with each invalid UTF-8 sequence (a stray byte, a truncated or
// overlong sequence, a surrogate, a code point past U+10FFFF) and each NUL replaced by
// U+FFFD. ASCII text is copied as it is.
void AssignUtf8(std::string& out, std::string_view text);
inline std::string ValidUtf8(std::string_view text) {
  std::string out;
  AssignUtf8(out, text);
  return out;
}

// For a terminal or a text file: valid UTF-8 (as ValidUtf8), with control characters
// (C0, DEL and the C1 range, which terminals act on) written as visible escapes: \n,
// \r, \t, and \xNN (or \u0085 for C1) for the others.
std::string Printable(std::string_view text);

// Whether `path` ends in `end` at a folder boundary: "demo.cpp" and "app/demo.cpp" name
// "/src/app/demo.cpp"; "mo.cpp" does not.
bool PathEndsWith(std::string_view path, std::string_view end);

// A CSV field: Printable text in quotes, its quotes doubled, and a ' before a leading
// =, +, - or @, which a spreadsheet would otherwise run as a formula.
std::string CsvField(std::string_view text);

// Printable text in exactly `width` characters, padded with spaces. Text too long is cut
// at a character boundary: in a column of 8 or more at a word's end (where one lies in
// the second half of what fits) and marked with "...", in a narrower one marked "~".
std::string FitColumn(std::string_view text, size_t width);
// A C++ function's name made to fit `width` where it can without losing which function
// it is: its parameter list becomes "(...)", then each template argument list "<...>".
// Still too long, FitColumn cuts it.
std::string ShortenSymbol(std::string_view name, size_t width);

// Characters (code points) of valid UTF-8 text.
size_t CountCharacters(std::string_view utf8);

// `text` as a JSON string, quotes included: valid UTF-8 (strict parsers reject anything
// else), control characters escaped.
std::string JsonQuote(std::string_view text);

// Whether `text` holds `needle`, ASCII letters in any case (or exactly, when told).
bool ContainsText(std::string_view text, std::string_view needle, bool case_sensitive = false);

// printf into a string of whatever length it takes.
[[gnu::format(printf, 1, 2)]] std::string Format(const char* format, ...);

// "12.3 ms", "870 ns", "2.014 s": three significant digits, adaptive unit.
std::string FormatDuration(double ns);

// "512 B", "1.50 KiB", "3.25 GiB": three significant digits, binary units.
std::string FormatBytes(uint64_t bytes);

// An error bound that may differ on either side of a time: "+/- 3.04 us" when both
// sides are equal, "-3.04 us/+412 ns" otherwise; "unknown" for UINT32_MAX.
std::string FormatBound(uint32_t early_ns, uint32_t late_ns);
inline std::string FormatBound(uint32_t ns) { return FormatBound(ns, ns); }

// A signed range: "[-2.9 us, +685 ns]", with "-inf" or "+inf" for a side not bounded.
std::string FormatRange(double min_ns, double max_ns);

}  // namespace gnomon::server
