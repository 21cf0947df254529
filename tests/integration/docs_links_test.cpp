// Every link of the README and of docs/ leads somewhere: a relative link names a file or
// folder of the tree, and a link's #anchor names a heading of the page it points to; a
// path of the tree the pages name in code (`tests/server/...`) is there.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The anchor a heading's text gets: lower case, spaces as '-', other punctuation but '-'
// and '_' left out (backticks, dots, commas, parentheses, '?', '/'...).
std::string Anchor(const std::string& heading) {
  // Symbols the pages' headings use that are punctuation, not letters (UTF-8).
  static const char* const kLeftOut[] = {"\u2014", "\u2013", "\u00d7", "\u2192", "\u2190",
                                         "\u2026", "\u2019", "\u201c", "\u201d", "\u00b7"};
  std::string anchor;
  for (size_t i = 0; i < heading.size(); ++i) {
    const unsigned char c = heading[i];
    if (c >= 0x80) {
      size_t length = 1;
      while (i + length < heading.size() && (heading[i + length] & 0xC0) == 0x80) ++length;
      const std::string symbol = heading.substr(i, length);
      bool left_out = false;
      for (const char* s : kLeftOut) left_out |= symbol == s;
      if (!left_out) anchor += symbol;
      i += length - 1;
    } else if (std::isalnum(c) || c == '-' || c == '_') {
      anchor += char(std::tolower(c));
    } else if (c == ' ') {
      anchor += '-';
    }
  }
  return anchor;
}

// The anchors of a page's headings, outside fenced code; a repeated heading's later
// anchors get "-1", "-2"... as on the hosting sites.
std::set<std::string> Anchors(const std::string& page) {
  std::set<std::string> anchors;
  std::istringstream lines(page);
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code || line.empty() || line[0] != '#') continue;
    const size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    const std::string anchor = Anchor(line.substr(text + 1));
    std::string unique = anchor;
    for (int n = 1; anchors.count(unique); ++n) unique = anchor + "-" + std::to_string(n);
    anchors.insert(unique);
  }
  return anchors;
}

// The targets of the page's inline links, "[text](target)", outside fenced and inline code.
std::vector<std::string> Links(const std::string& page) {
  std::vector<std::string> links;
  std::istringstream lines(page);
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code) continue;
    bool in_span = false;
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      if (line[i] == '`') in_span = !in_span;
      if (in_span || line[i] != ']' || line[i + 1] != '(') continue;
      const size_t end = line.find(')', i + 2);
      if (end == std::string::npos) break;
      links.push_back(line.substr(i + 2, end - i - 2));
    }
  }
  return links;
}

// The paths of the tree a page names in inline code outside fenced code: spans that start
// with a top-level folder and a '/', and hold no placeholder ("X/foo", '*', "...").
std::vector<std::string> TreePaths(const std::string& page) {
  static const char* const kRoots[] = {"tests/",  "server/",  "client/", "protocol/",
                                       "viewer/", "scripts/", "docs/",   ".ci/"};
  std::vector<std::string> paths;
  std::istringstream lines(page);
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (in_code) continue;
    for (size_t open = line.find('`'); open != std::string::npos; open = line.find('`', open + 1)) {
      const size_t close = line.find('`', open + 1);
      if (close == std::string::npos) break;
      const std::string span = line.substr(open + 1, close - open - 1);
      open = close;
      bool rooted = false;
      for (const char* root : kRoots) rooted |= span.rfind(root, 0) == 0;
      if (!rooted || span.find_first_of(" *<") != std::string::npos ||
          span.find("/X/") != std::string::npos || span.find("...") != std::string::npos)
        continue;
      paths.push_back(span);
    }
  }
  return paths;
}

std::vector<fs::path> Pages() {
  const fs::path root = GNOMON_SOURCE_DIR;
  std::vector<fs::path> pages = {root / "README.md", root / "CHANGELOG.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  return pages;
}

}  // namespace

TEST_CASE("a heading's anchor is the one the hosting sites give it") {
  CHECK(Anchor("How big is a trace file, per zone?") == "how-big-is-a-trace-file-per-zone");
  CHECK(Anchor("`gnomon-capture --listen` and `GNOMON_COLLECTOR`") ==
        "gnomon-capture---listen-and-gnomon_collector");
  CHECK(Anchor("Clocks \u2014 GPU \u00d7 CPU") == "clocks--gpu--cpu");
  CHECK(Anchors("# A\n```\n# not a heading\n```\n## A\n") == std::set<std::string>{"a", "a-1"});
  CHECK(TreePaths("`tests/a.cpp` and `gnomon/x.h`, `tests/X/foo.cpp`, `server/*.h`") ==
        std::vector<std::string>{"tests/a.cpp"});
  CHECK(Links("see [x](a.md#b) and `[y](c.md)`\n```\n[z](d.md)\n```\n") ==
        std::vector<std::string>{"a.md#b"});
}

TEST_CASE("every link of the README and of docs/ leads to a file of the tree and a heading of its page") {
  size_t checked = 0;
  for (const fs::path& page : Pages()) {
    const std::string text = Read(page);
    REQUIRE_MESSAGE(!text.empty(), "cannot read ", page.string());
    for (const std::string& link : Links(text)) {
      if (link.find("://") != std::string::npos || link.rfind("mailto:", 0) == 0) continue;
      CAPTURE(page.string());
      CAPTURE(link);
      const size_t hash = link.find('#');
      const std::string file = link.substr(0, hash);
      const fs::path target = file.empty() ? page : (page.parent_path() / file).lexically_normal();
      CHECK_MESSAGE(fs::exists(target), "no such file: ", target.string());
      if (hash != std::string::npos && fs::exists(target) && target.extension() == ".md") {
        const std::set<std::string> anchors = Anchors(Read(target));
        CHECK_MESSAGE(anchors.count(link.substr(hash + 1)), "no heading with that anchor in ",
                      target.string());
      }
      ++checked;
    }
  }
  CHECK(checked > 50);
}

TEST_CASE("every path of the tree the README and docs/ name in code is there") {
  const fs::path root = GNOMON_SOURCE_DIR;
  size_t checked = 0;
  for (const fs::path& page : Pages()) {
    for (const std::string& path : TreePaths(Read(page))) {
      CAPTURE(page.string());
      CHECK_MESSAGE(fs::exists(root / path), "no such file or folder: ", path);
      ++checked;
    }
  }
  CHECK(checked > 100);
}
