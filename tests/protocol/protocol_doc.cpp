#include "protocol_doc.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

namespace gnomon::test {
namespace {

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      const size_t first = cell.find_first_not_of(' ');
      const size_t last = cell.find_last_not_of(' ');
      cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

std::string Unquote(const std::string& s) {
  return s.size() >= 2 && s.front() == '`' && s.back() == '`' ? s.substr(1, s.size() - 2) : s;
}

bool IsNumber(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whether `text` is a word (letters, digits, '_'), as message and field names are.
bool IsWord(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// "### TAG Name" or "### TAG Name — words": the tag and the name.
std::optional<std::pair<int, std::string>> MessageHeading(std::string_view line) {
  if (!line.starts_with("### ")) return std::nullopt;
  line.remove_prefix(4);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || !IsNumber(std::string(line.substr(0, space)))) return std::nullopt;
  const int tag = std::stoi(std::string(line.substr(0, space)));
  std::string_view name = line.substr(space + 1);
  if (const size_t dash = name.find(" \u2014 "); dash != std::string_view::npos) name = name.substr(0, dash);
  if (!IsWord(name)) return std::nullopt;
  return std::make_pair(tag, std::string(name));
}

// "`Name`, server → program, 16 bytes..." opens a frame: its name and size.
std::optional<std::pair<std::string, int>> FrameIntroduction(std::string_view line) {
  if (!line.starts_with("`")) return std::nullopt;
  const size_t close = line.find("`, ", 1);
  if (close == std::string_view::npos || !IsWord(line.substr(1, close - 1))) return std::nullopt;
  const size_t bytes = line.find(" bytes", close);
  if (bytes == std::string_view::npos) return std::nullopt;
  const size_t number = line.rfind(' ', bytes - 1) + 1;
  const std::string size(line.substr(number, bytes - number));
  if (!IsNumber(size)) return std::nullopt;
  return std::make_pair(std::string(line.substr(1, close - 1)), std::stoi(size));
}

}  // namespace

const DocMessage* ProtocolDoc::Find(int tag) const {
  for (const DocMessage& m : messages) {
    if (m.tag == tag) return &m;
  }
  return nullptr;
}

ProtocolDoc ReadProtocolDoc(const std::string& path) {
  ProtocolDoc doc;
  std::ifstream in(path);
  if (!in) {
    doc.errors.push_back("cannot open " + path);
    return doc;
  }
  enum class In { kNothing, kSummary, kMessage, kFrame } in_table = In::kNothing;
  std::string line;
  int line_number = 0;
  auto error = [&](const std::string& what) {
    doc.errors.push_back(path + ":" + std::to_string(line_number) + ": " + what + ": " + line);
  };
  while (std::getline(in, line)) {
    ++line_number;
    if (const auto heading = MessageHeading(line)) {
      doc.messages.push_back({heading->first, heading->second, {}});
      in_table = In::kMessage;
      continue;
    }
    if (const auto frame = FrameIntroduction(line)) {
      doc.frames.push_back({frame->first, frame->second, {}});
      in_table = In::kFrame;
      continue;
    }
    if (line.rfind("## ", 0) == 0) in_table = In::kNothing;
    if (line.rfind("| tag | message | fixed bytes | followed by | thread-bound |", 0) == 0) {
      in_table = In::kSummary;
      continue;
    }
    if (line.empty() || line[0] != '|' || line.rfind("|---", 0) == 0 || line.rfind("| offset |", 0) == 0)
      continue;
    const std::vector<std::string> cells = Cells(line);
    if (in_table == In::kFrame) {
      if (cells.size() != 4 || !IsNumber(cells[0]) || !IsNumber(cells[1])) {
        error("a frame's row needs offset, size, field, value");
        continue;
      }
      doc.frames.back().fields.push_back({std::stoi(cells[0]), std::stoi(cells[1]), cells[2], cells[3]});
    } else if (in_table == In::kSummary) {
      if (cells.size() != 5 || !IsNumber(cells[0]) || !IsNumber(cells[2])) {
        error("a summary row needs tag, message, fixed bytes, followed by, thread-bound");
        continue;
      }
      doc.summary.push_back(
          {std::stoi(cells[0]), cells[1], std::stoi(cells[2]), cells[3], cells[4] == "yes"});
    } else if (in_table == In::kMessage) {
      if (cells.size() != 5) {
        error("a field row needs offset, size, type, field, meaning");
        continue;
      }
      DocField field;
      field.name = Unquote(cells[3]);
      field.type = cells[2];
      if (IsNumber(cells[0]) && IsNumber(cells[1])) {
        field.offset = std::stoi(cells[0]);
        field.size = std::stoi(cells[1]);
      } else if (const std::string_view prefix = "8 \u00d7 ";
                 cells[1].starts_with(prefix) &&
                 Unquote(cells[1].substr(prefix.size())) != cells[1].substr(prefix.size()) &&
                 IsWord(Unquote(cells[1].substr(prefix.size())))) {
        field.size_field = Unquote(cells[1].substr(prefix.size()));
        field.unit_bytes = 8;
      } else if (cells[1].size() > 2 && Unquote(cells[1]) != cells[1]) {
        field.size_field = Unquote(cells[1]);
      } else {
        error("a size is a number, `length_field` or 8 × `count_field`");
        continue;
      }
      doc.messages.back().fields.push_back(field);
    }
  }
  return doc;
}

}  // namespace gnomon::test
