#include "gnomon/viewer/trace_comparison.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gnomon::viewer {
namespace {

std::string BaseName(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

using Key = std::tuple<std::string, std::string, std::string>;
Key KeyOf(const server::SourceLocation& l) { return {l.name, l.function, BaseName(l.file)}; }

}  // namespace

uint32_t MatchLocation(const server::TraceModel& model, const server::SourceLocation& other) {
  const Key wanted = KeyOf(other);
  for (uint32_t i = 1; i < model.source_locations.size(); ++i) {
    if (KeyOf(model.source_locations[i]) == wanted) return i;
  }
  return 0;
}

std::vector<ComparisonRow> CompareTraces(const server::TraceModel& a,
                                         const std::vector<server::ZoneStatistics>& stats_a,
                                         const server::TraceModel& b,
                                         const std::vector<server::ZoneStatistics>& stats_b) {
  std::map<Key, ComparisonRow> rows;
  for (const server::ZoneStatistics& s : stats_a) {
    const server::SourceLocation& l = a.Location(s.source_location);
    ComparisonRow& row = rows[KeyOf(l)];
    row.name = l.name;
    row.where = l.ShortLabel();
    row.location_a = s.source_location;
    row.count_a = s.count;
    row.total_a_ns = s.total_ns;
    row.mean_a_ns = s.mean_ns;
  }
  for (const server::ZoneStatistics& s : stats_b) {
    const server::SourceLocation& l = b.Location(s.source_location);
    ComparisonRow& row = rows[KeyOf(l)];
    if (row.name.empty()) {
      row.name = l.name;
      row.where = l.ShortLabel();
    }
    row.location_b = s.source_location;
    row.count_b = s.count;
    row.total_b_ns = s.total_ns;
    row.mean_b_ns = s.mean_ns;
  }
  std::vector<ComparisonRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const ComparisonRow& x, const ComparisonRow& y) {
    return std::max(x.total_a_ns, x.total_b_ns) > std::max(y.total_a_ns, y.total_b_ns);
  });
  return out;
}

}  // namespace gnomon::viewer
