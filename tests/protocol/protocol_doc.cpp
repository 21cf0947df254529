#include "protocol_doc.h"

#include <fstream>
#include <regex>
#include <sstream>

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
  const std::regex heading(R"(^### (\d+) (\w+)( — .*)?$)");
  const std::regex values_size(R"(^8 × `(\w+)`$)");
  enum class In { kNothing, kSummary, kMessage } in_table = In::kNothing;
  std::string line;
  int line_number = 0;
  auto error = [&](const std::string& what) {
    doc.errors.push_back(path + ":" + std::to_string(line_number) + ": " + what + ": " + line);
  };
  while (std::getline(in, line)) {
    ++line_number;
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      doc.messages.push_back({std::stoi(m[1]), m[2], {}});
      in_table = In::kMessage;
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
    if (in_table == In::kSummary) {
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
      } else if (std::regex_match(cells[1], m, values_size)) {
        field.size_field = m[1];
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
