// A small strict JSON parser for tests: checks that exporters write valid JSON and
// lets assertions walk the result.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gnomon::test {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  const JsonValue* Find(const std::string& key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
  }
};

// Parses `text`; on failure returns false and says where in `error`.
bool ParseJson(std::string_view text, JsonValue& out, std::string& error);

}  // namespace gnomon::test
