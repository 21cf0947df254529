// Names from programs are any bytes: kept as valid UTF-8, and escaped wherever a reader
// (a terminal, a JSON parser, a table) would act on them.
#include "gnomon/server/text.h"

#include <doctest/doctest.h>

#include <string>

using namespace gnomon::server;

namespace {
const std::string kFffd(kReplacementCharacter);
}

TEST_CASE("invalid UTF-8 and NULs become U+FFFD; valid text is kept byte for byte") {
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
}
