// Names from programs are any bytes: kept as valid UTF-8, and escaped wherever a reader
// (a terminal, a JSON parser, a table) would act on them.
#include "gnomon/server/text.h"

#include <doctest/doctest.h>

#include <string>

using namespace gnomon::server;

namespace {
const std::string kFffd(kReplacementCharacter);
}

TEST_CASE("invalid UTF-8 and NULs become U+FFFD, valid text is kept byte for byte") {
  CHECK(ValidUtf8("plain ascii") == "plain ascii");
  CHECK(ValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(ValidUtf8(std::string("a\0b", 3)) == "a" + kFffd + "b");
  CHECK(ValidUtf8("\xFF") == kFffd);                                      // never valid
  CHECK(ValidUtf8("\xC3") == kFffd);                                      // cut short
  CHECK(ValidUtf8("\xC0\xAF") == kFffd + kFffd);                          // overlong '/'
  CHECK(ValidUtf8("\xE0\x80\xAF") == kFffd + kFffd + kFffd);              // overlong
  CHECK(ValidUtf8("\xED\xA0\x80") == kFffd + kFffd + kFffd);              // a surrogate
  CHECK(ValidUtf8("\xF4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  CHECK(ValidUtf8("\x80x") == kFffd + "x");
}

TEST_CASE("a terminal sees control characters as escapes, never acts on them") {
  CHECK(Printable("ok \xC3\xA9") == "ok \xC3\xA9");
  CHECK(Printable("\x1B[31mred\x1B[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(Printable("line\nnext\r\ttab") == "line\\nnext\\r\\ttab");
  // Bidirectional overrides and marks are shown, never obeyed; other punctuation stays.
  CHECK(Printable("a\u202Eb\u2066c\u200Fd\u2014e\u2026") == "a\\u202eb\\u2066c\\u200fd\u2014e\u2026");
  CHECK(Printable("\x7F") == "\\x7f");
  CHECK(Printable("\xC2\x9B"
                  "2J") == "\\u009b2J");  // the one-character CSI of C1
  CHECK(Printable(std::string("nul\0", 4)) == "nul" + kFffd);
  for (int c = 0; c < 0x20; ++c) {
    const std::string escaped = Printable(std::string(1, char(c)));
    for (char e : escaped) CHECK(uint8_t(e) >= 0x20);
  }
}

TEST_CASE("columns are cut at a character, never inside one, and padded to their width") {
  CHECK(FitColumn("abc", 5) == "abc  ");
  CHECK(FitColumn("abcdefgh", 5) == "abcd~");
  CHECK(FitColumn("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 4) == "\xC3\xA9\xC3\xA9\xC3\xA9~");
  CHECK(CountCharacters(FitColumn("\xE2\x82\xAC\xE2\x82\xAC", 5)) == 5);
  CHECK(FitColumn("\x1B", 3) == "\\x~");  // the escape counts as what it shows
  CHECK(FitColumn("anything", 0) == "");
  // Wide enough for words: cut at a word's end, marked "...".
  CHECK(FitColumn("Simulate particles step", 16) == "Simulate...     ");
  CHECK(FitColumn("render_frame_graph_pass", 16) == "render_frame_...");
  CHECK(FitColumn("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefg...");  // no word end: at a character
  CHECK(FitColumn("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 8) ==
        "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9...");
  for (size_t width = 1; width < 30; ++width)
    CHECK(CountCharacters(FitColumn("a long name: with words", width)) == width);
}

TEST_CASE("a function's name loses its parameters, then its template arguments, before it is cut") {
  const std::string method = "gnomon::server::TraceBuilder::OnZoneBegin(gnomon::protocol::ZoneBegin const&)";
  CHECK(ShortenSymbol(method, 100) == method);  // fits: as it is
  CHECK(ShortenSymbol(method, 48) == "gnomon::server::TraceBuilder::OnZoneBegin(...)");
  CHECK(ShortenSymbol(
            "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(iterator, int const&)",
            48) == "std::vector<...>::_M_realloc_insert<...>(...)");
  CHECK(ShortenSymbol("(anonymous namespace)::Worker::Run()", 10) == "(anonymous namespace)::Worker::Run()");
  CHECK(ShortenSymbol("bool operator<(Key const&, Key const&)", 20) == "bool operator<(...)");
  CHECK(ShortenSymbol("auto operator<=>(Key const&, Key const&)", 10) == "auto operator<=>(...)");
  CHECK(ShortenSymbol("f<decltype(a->b)>::g(int, long)", 12) == "f<...>::g(...)");
  CHECK(ShortenSymbol("a<b::c", 3) == "a<b::c");  // unbalanced: as it is
  CHECK(FitColumn(ShortenSymbol(method, 30), 30) == "gnomon::server::..." + std::string(11, ' '));
}

TEST_CASE("durations read in the unit their size wants, and what rounds to nothing is 0, never -0") {
  CHECK(FormatDuration(999) == "999 ns");
  CHECK(FormatDuration(1500) == "1.5 us");
  CHECK(FormatDuration(22'000'000) == "22 ms");
  CHECK(FormatDuration(2.5e9) == "2.5 s");
  CHECK(FormatDuration(-0.3) == "0 ns");
  CHECK(FormatDuration(-0.0) == "0 ns");
  CHECK(FormatDuration(-0.6) == "-1 ns");
  CHECK(FormatDuration(-1500) == "-1.5 us");
  // What rounds up to the next unit is written in it, never as "1e+03".
  CHECK(FormatDuration(999.7) == "1 us");
  CHECK(FormatDuration(999'999.99) == "1 ms");
  CHECK(FormatDuration(999'960'000) == "1 s");
  CHECK(FormatDuration(-999'999.99) == "-1 ms");
  CHECK(FormatDuration(10'800e9) == "10800 s");  // a three-hour trace
  CHECK(FormatDuration(9'999.4e9) == "9999 s");
}

TEST_CASE("a CSV field is quoted, and a name a spreadsheet would run as a formula is not run") {
  CHECK(CsvField("plain") == "\"plain\"");
  CHECK(CsvField("say \"hi\"") == "\"say \"\"hi\"\"\"");
  for (const char* formula : {"=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)"}) {
    CAPTURE(formula);
    const std::string field = CsvField(formula);
    CHECK(field.substr(0, 2) == "\"'");  // a leading ' makes it text
  }
  CHECK(CsvField("a=b") == "\"a=b\"");  // only a leading sign counts
  CHECK(CsvField("line\nbreak") == "\"line\\nbreak\"");
}
