// Annotations: named, coloured time ranges a user marks on a trace, kept beside it in
// FILE.annotations.json (an array of {"begin_ns", "end_ns", "color", "text"}, times
// trace-relative, colour 0xAABBGGRR), so that they come back when the trace is opened
// again and travel with it.
//
//   std::vector<Annotation> notes;
//   std::string error;
//   if (!ParseAnnotations(ReadFile(AnnotationsPathFor(trace)), notes, error)) say(error);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gnomon::viewer {

struct Annotation {
  int64_t begin_ns = 0;  // trace-relative
  int64_t end_ns = 0;
  uint32_t color = 0xFF40C0F0;  // 0xAABBGGRR
  std::string text;
  friend bool operator==(const Annotation&, const Annotation&) = default;
};

// The colours offered for a new annotation (0xAABBGGRR).
inline constexpr uint32_t kAnnotationColors[] = {0xFF40C0F0, 0xFF5AD25A, 0xFFE6965A, 0xFF6464E6, 0xFFD278D2};

// Where a trace's annotations are kept: "FILE.annotations.json".
std::string AnnotationsPathFor(const std::string& trace_path);

// The annotations as JSON (one per line).
std::string AnnotationsJson(const std::vector<Annotation>& annotations);

// Reads what AnnotationsJson wrote (any whitespace, keys in any order, unknown keys with
// a number, string, true, false or null skipped). A file is untrusted: anything else is
// refused with `error` saying where, and `out` is left as it was. At most kMaxAnnotations
// of kMaxTextBytes each.
inline constexpr size_t kMaxAnnotations = 100000;
inline constexpr size_t kMaxTextBytes = 4096;
bool ParseAnnotations(std::string_view json, std::vector<Annotation>& out, std::string& error);

// Writes them to `path` (through a temporary file, renamed); "" or why not.
std::string SaveAnnotations(const std::string& path, const std::vector<Annotation>& annotations);
// Reads them from `path`: true with none when there is no file; false with `error` when
// it cannot be read or parsed.
bool LoadAnnotations(const std::string& path, std::vector<Annotation>& out, std::string& error);

}  // namespace gnomon::viewer
