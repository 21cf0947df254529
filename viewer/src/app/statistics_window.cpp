#include "statistics_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr auto kLiveStatisticsPeriod = std::chrono::seconds(1);

std::string Duration(double ns) { return server::FormatDuration(ns); }

// How many threads each location's zones (beginning in `range`) ran on: counted once a
// thread, with a stamp per location instead of a set.
std::vector<uint32_t> ThreadsPerLocation(const server::TraceModel& model, bool gpu,
                                         const server::TickRange& range) {
  std::vector<uint32_t> count(model.source_locations.size(), 0);
  std::vector<uint64_t> stamp(model.source_locations.size(), UINT64_MAX);
  auto seen = [&](uint32_t location, uint64_t thread) {
    if (location >= count.size() || stamp[location] == thread) return;
    stamp[location] = thread;
    ++count[location];
  };
  if (!gpu) {
    for (size_t t = 0; t < model.threads.size(); ++t) {
      const server::ThreadTimeline& thread = model.threads[t];
      for (size_t i = 0; i < thread.zones.size(); ++i) {
        const server::Zone z = thread.zones[i];
        if (range.Contains(z.begin_tick)) seen(z.source_location, t);
      }
    }
    return count;
  }
  // GPU zones by recording thread: each thread's zones in one pass over the contexts.
  std::map<uint32_t, std::vector<uint32_t>> by_thread;
  const bool whole = range.begin_tick == 0 && range.end_tick == UINT64_MAX;
  const int64_t begin_ns = model.clock.TickToNs(range.begin_tick),
                end_ns = model.clock.TickToNs(range.end_tick);
  for (const auto& [id, context] : model.gpu_contexts) {
    for (size_t i = 0; i < context.zones.size(); ++i) {
      const server::GpuZone& z = context.zones[i];
      if (!z.is_timed()) continue;
      if (!whole) {
        const int64_t at = model.MapGpuZone(context, z).begin_ns;
        if (at < begin_ns || at > end_ns) continue;
      }
      by_thread[z.thread_id].push_back(z.source_location);
    }
  }
  for (const auto& [thread, locations] : by_thread) {
    for (uint32_t location : locations) seen(location, thread);
  }
  return count;
}

}  // namespace

StatisticsWindow::Result StatisticsWindow::Compute(const server::TraceModel& model, const Key& key) {
  Result r;
  const server::TickRange range = key.range ? Workspace::TicksOf(model, *key.range) : server::TickRange{};
  r.rows = key.gpu ? server::ComputeGpuZoneStatistics(model, 0, range)
                   : server::ComputeZoneStatistics(model, 0, range);
  r.threads = ThreadsPerLocation(model, key.gpu, range);
  r.range_ns = key.range                               ? key.range->second - key.range->first
               : model.first_tick == server::kOpenZone ? 0
                                                       : model.DurationNs(model.first_tick, model.last_tick);
  if (key.gpu) {
    for (const server::CounterStatistics& c : server::ComputeCounterStatistics(model)) {
      const uint64_t column = uint64_t(c.set_id) << 32 | c.counter;
      if (std::find(r.counter_columns.begin(), r.counter_columns.end(), column) == r.counter_columns.end() &&
          r.counter_columns.size() < kMaxCounterColumns) {
        r.counter_columns.push_back(column);
      }
      r.counter_means[{c.source_location, column}] = c.mean;
    }
  }
  return r;
}

StatisticsWindow::Result StatisticsWindow::ComputeFromFile(Session& session) {
  Result r;
  r.from_file = true;
  auto rows = session.StreamStatistics(&r.note);
  if (!rows.ok()) {
    r.error = rows.status().message();
    return r;
  }
  r.rows = std::move(rows.value());
  session.WithModel([&](const server::TraceModel& model) {
    if (model.first_tick != server::kOpenZone)
      r.range_ns = model.DurationNs(model.first_tick, model.last_tick);
  });
  return r;
}

double StatisticsWindow::Share(const Result& result, const server::ZoneStatistics& s) {
  return result.range_ns > 0 ? 100.0 * double(s.total_ns) / double(result.range_ns) : 0;
}

std::string StatisticsWindow::Csv(const server::TraceModel& model, const Result& result,
                                  const std::vector<uint32_t>& rows) {
  std::string csv =
      "name,function,file,line,count,total_ns,self_ns,mean_ns,median_ns,min_ns,max_ns,range_pct,threads\n";
  char numbers[256];
  for (uint32_t row : rows) {
    const server::ZoneStatistics& s = result.rows[row];
    const server::SourceLocation& l = model.Location(s.source_location);
    std::snprintf(numbers, sizeof(numbers), ",%u,%llu,%lld,%lld,%.1f,%lld,%lld,%lld,%.3f,", l.line,
                  static_cast<unsigned long long>(s.count), static_cast<long long>(s.total_ns),
                  static_cast<long long>(s.self_ns), s.mean_ns, static_cast<long long>(s.median_ns),
                  static_cast<long long>(s.min_ns), static_cast<long long>(s.max_ns), Share(result, s));
    // Read from the file, the threads are not counted: left empty.
    const std::string threads = result.from_file ? std::string()
                                                 : std::to_string(s.source_location < result.threads.size()
                                                                      ? result.threads[s.source_location]
                                                                      : 0u);
    csv += server::CsvField(l.name) + "," + server::CsvField(l.function) + "," + server::CsvField(l.file) +
           numbers + threads + "\n";
  }
  return csv;
}

void StatisticsWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Statistics");
  if (!ImGui::Begin("Statistics", &open)) {
    ImGui::End();
    return;
  }
  bool gpu = gpu_;
  if (ImGui::RadioButton("CPU zones", !gpu)) gpu = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("GPU zones", gpu)) gpu = true;
  gpu_ = gpu;
  ImGui::SameLine();
  ImGui::BeginDisabled(!model.zones_held && !gpu_);  // zones read from the file: the whole trace
  ImGui::Checkbox("selected range only", &limit_to_range_);
  ImGui::EndDisabled();
  ImGui::SameLine();
  filter_.Draw("filter by name", 180);

  // A new request when what is asked changed, or (live) the trace grew a second ago.
  const auto now = std::chrono::steady_clock::now();
  // Zones not held are read from the file: the whole trace, once.
  const bool from_file = !model.zones_held && !gpu_;
  Key key{gpu_, limit_to_range_ && !from_file ? ws.range : std::nullopt, requested_zones_};
  if (model.zone_count != requested_zones_ &&
      (now - requested_at_ >= kLiveStatisticsPeriod || !job_.result())) {
    key.zone_count = requested_zones_ = model.zone_count;
    requested_at_ = now;
  }
  Session* session = ws.session;
  if (from_file && session->is_loading()) {  // the file is read again once, when loaded
    ImGui::TextDisabled("the zones are not held: their statistics are read from the file once it has loaded");
    ImGui::End();
    return;
  }
  job_.Request(key, [session, key, from_file] {
    if (from_file) return ComputeFromFile(*session);
    Result r;
    session->WithModel([&](const server::TraceModel& m) { r = Compute(m, key); });
    return r;
  });
  const Result* result = job_.result();
  if (job_.is_busy()) {
    ImGui::SameLine();
    ImGui::TextDisabled(result ? "(updating...)" : "computing...");
  }
  if (from_file && result != nullptr && !result->error.empty()) {
    ImGui::TextDisabled("reading the zones from the file failed: %s", result->error.c_str());
  } else if (from_file) {
    ImGui::TextDisabled(
        "The whole trace, its zones read from the file (they are not held: --memory-limit); a median of over "
        "4096 zones within 0.4 %%.");
    if (result != nullptr && !result->note.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 180, 80, 255));
      ImGui::TextWrapped("%s", result->note.c_str());
      ImGui::PopStyleColor();
    }
  }
  if (result == nullptr) {
    ImGui::End();
    return;
  }
  if (key.range) {
    ImGui::Text("%s .. %s of the trace", Duration(double(key.range->first)).c_str(),
                Duration(double(key.range->second)).c_str());
  }
  ImGui::SameLine();
  const bool copy = ImGui::SmallButton("copy as CSV");
  const int columns = kFixedColumns + int(result->counter_columns.size());
  constexpr ImGuiTableFlags kFlags =
      ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
      ImGuiTableFlags_ScrollX | ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("stats", columns, kFlags)) {
    ImGui::TableSetupScrollFreeze(1, 1);
    // The name columns as wide as their longest text (a third of the window at most);
    // anything cut ends in "..." and shows whole on hover.
    float name_width = ImGui::CalcTextSize("Zone").x, location_width = ImGui::CalcTextSize("Location").x;
    for (const server::ZoneStatistics& s : result->rows) {
      const server::SourceLocation& l = model.Location(s.source_location);
      name_width = std::max(name_width, ImGui::CalcTextSize(l.name.c_str()).x);
      location_width = std::max(location_width, ImGui::CalcTextSize(l.ShortLabel().c_str()).x);
    }
    const float cap = std::max(120.0f, ImGui::GetContentRegionAvail().x / 3);
    ImGui::TableSetupColumn("Zone", ImGuiTableColumnFlags_WidthFixed, std::min(cap, name_width + 8));
    ImGui::TableSetupColumn("Location", ImGuiTableColumnFlags_WidthFixed, std::min(cap, location_width + 8));
    ImGui::TableSetupColumn("Count");
    ImGui::TableSetupColumn("Total",
                            ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending);
    ImGui::TableSetupColumn("Self");
    ImGui::TableSetupColumn("Mean");
    ImGui::TableSetupColumn("Median");
    ImGui::TableSetupColumn("Min");
    ImGui::TableSetupColumn("Max");
    ImGui::TableSetupColumn("% of range");
    ImGui::TableSetupColumn("Threads");
    for (uint64_t column : result->counter_columns) {
      const server::CounterSet& set = model.counter_sets.at(uint32_t(column >> 32));
      const uint32_t index = uint32_t(column & 0xFFFFFFFF);
      const std::string unit = server::CounterUnit(set, index);
      ImGui::TableSetupColumn((set.CounterName(index) + (unit.empty() ? "" : " (" + unit + ")")).c_str());
    }
    ImGui::TableHeadersRow();
    ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs();
    if (sorted_generation_ != job_.result_generation() || (sort && sort->SpecsDirty)) {
      order_.resize(result->rows.size());
      for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
      if (sort && sort->SpecsCount > 0) {
        const ImGuiTableColumnSortSpecs& spec = sort->Specs[0];
        const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
        auto key_of = [&](const server::ZoneStatistics& s) -> double {
          switch (spec.ColumnIndex) {
            case 2:
              return double(s.count);
            case 3:
              return double(s.total_ns);
            case 4:
              return double(s.self_ns);
            case 5:
              return s.mean_ns;
            case 6:
              return double(s.median_ns);
            case 7:
              return double(s.min_ns);
            case 8:
              return double(s.max_ns);
            case 9:
              return double(s.total_ns);
            case 10:
              return s.source_location < result->threads.size() ? result->threads[s.source_location] : 0;
            default: {
              const size_t column = size_t(spec.ColumnIndex) - kFixedColumns;
              if (column >= result->counter_columns.size()) return 0;
              auto it = result->counter_means.find({s.source_location, result->counter_columns[column]});
              return it == result->counter_means.end() ? -1 : it->second;
            }
          }
        };
        std::stable_sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
          const auto& a = result->rows[x];
          const auto& b = result->rows[y];
          if (spec.ColumnIndex <= 1) {
            const std::string& na = spec.ColumnIndex == 0 ? model.Location(a.source_location).name
                                                          : model.Location(a.source_location).file;
            const std::string& nb = spec.ColumnIndex == 0 ? model.Location(b.source_location).name
                                                          : model.Location(b.source_location).file;
            return ascending ? na < nb : na > nb;
          }
          return ascending ? key_of(a) < key_of(b) : key_of(a) > key_of(b);
        });
      }
      if (sort) sort->SpecsDirty = false;
      sorted_generation_ = job_.result_generation();
    }
    size_t shown = 0;
    std::string zones_json = "[";
    std::vector<uint32_t> shown_rows;
    for (uint32_t row : order_) {
      const server::ZoneStatistics& s = result->rows[row];
      const server::SourceLocation& location = model.Location(s.source_location);
      if (!filter_.PassFilter(location.name.c_str())) continue;
      shown_rows.push_back(row);
      const double share = Share(*result, s);
      const uint32_t threads =
          s.source_location < result->threads.size() ? result->threads[s.source_location] : 0;
      if (++shown <= 50) {
        zones_json += (zones_json.size() > 1 ? "," : "") + JsonReport()
                                                               .Add("name", location.name)
                                                               .Add("count", double(s.count))
                                                               .Add("total_ns", double(s.total_ns))
                                                               .Add("self_ns", double(s.self_ns))
                                                               .Add("range_pct", share)
                                                               .Add("threads", double(threads))
                                                               .str();
      }
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(s.source_location));
      const bool found = ws.find_request && ws.find_request->location == s.source_location;
      if (ImGui::Selectable("##row", found,
                            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap)) {
        ws.find_request = Workspace::FindRequest{s.source_location, gpu_};
      }
      ImGui::SameLine(0, 0);
      TextCell(location.name);
      ImGui::PopID();
      ImGui::TableNextColumn();
      TextCell(location.ShortLabel());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(s.count));
      for (double v : {double(s.total_ns), double(s.self_ns), s.mean_ns, double(s.median_ns),
                       double(s.min_ns), double(s.max_ns)}) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(v).c_str());
      }
      ImGui::TableNextColumn();
      ImGui::Text("%.1f %%", share);
      ImGui::TableNextColumn();
      if (result->from_file) {
        ImGui::TextDisabled("?");  // not counted from the file
      } else {
        ImGui::Text("%u", threads);
      }
      for (uint64_t column : result->counter_columns) {
        ImGui::TableNextColumn();
        auto it = result->counter_means.find({s.source_location, column});
        if (it != result->counter_means.end()) ImGui::Text("%.6g", it->second);
      }
    }
    ImGui::EndTable();
    // Made for the clipboard when asked, and for the report of a short table (tests).
    const std::string csv = copy || shown <= 50 ? Csv(model, *result, shown_rows) : std::string();
    if (copy) ImGui::SetClipboardText(csv.c_str());
    ws.reports["statistics"] = JsonReport()
                                   .Add("rows", double(shown))
                                   .Add("csv", csv)
                                   .Add("gpu", gpu_ ? 1.0 : 0.0)
                                   .Add("from_file", result->from_file ? 1.0 : 0.0)
                                   .Add("note", result->note)
                                   .AddRaw("zones", zones_json + "]")
                                   .str();
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
