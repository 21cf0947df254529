#include "statistics_window.h"

#include <algorithm>
#include <cmath>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

constexpr auto kLiveStatisticsPeriod = std::chrono::seconds(1);

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void StatisticsWindow::Reset() {
  statistics_.clear();
  zone_count_ = UINT64_MAX;
}

void StatisticsWindow::Recompute(const server::TraceModel& model, bool gpu) {
  gpu_ = gpu;
  statistics_ = gpu ? server::ComputeGpuZoneStatistics(model) : server::ComputeZoneStatistics(model);
  // GPU zones: a column per counter (its mean per zone), as many as fit.
  counter_columns_.clear();
  counter_means_.clear();
  if (gpu) {
    for (const server::CounterStatistics& c : server::ComputeCounterStatistics(model)) {
      const uint64_t column = uint64_t(c.set_id) << 32 | c.counter;
      if (std::find(counter_columns_.begin(), counter_columns_.end(), column) == counter_columns_.end() &&
          counter_columns_.size() < kMaxCounterColumns) {
        counter_columns_.push_back(column);
      }
      counter_means_[{c.source_location, column}] = c.mean;
    }
  }
  zone_count_ = model.zone_count;
  time_ = std::chrono::steady_clock::now();
}

void StatisticsWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ImGui::SetNextWindowSize(ImVec2(760, 360), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(20, 520), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Statistics", &open)) {
    ImGui::End();
    return;
  }
  bool gpu = gpu_;
  if (ImGui::RadioButton("CPU zones", !gpu)) gpu = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("GPU zones", gpu)) gpu = true;
  ImGui::SameLine();
  filter_.Draw("filter by name", 200);
  const auto now = std::chrono::steady_clock::now();
  const bool stale = model.zone_count != zone_count_ && now - time_ >= kLiveStatisticsPeriod;
  if (gpu != gpu_ || stale || zone_count_ == UINT64_MAX) Recompute(model, gpu);
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                     ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_Resizable;
  if (ImGui::BeginTable("stats", 9 + int(counter_columns_.size()), kFlags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Zone", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Location");
    ImGui::TableSetupColumn("Count");
    ImGui::TableSetupColumn("Total",
                            ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending);
    ImGui::TableSetupColumn("Self");
    ImGui::TableSetupColumn("Mean");
    ImGui::TableSetupColumn("Median");
    ImGui::TableSetupColumn("Min");
    ImGui::TableSetupColumn("Max");
    for (uint64_t column : counter_columns_) {
      const server::CounterSet& set = model.counter_sets.at(uint32_t(column >> 32));
      const uint32_t index = uint32_t(column & 0xFFFFFFFF);
      const std::string unit = server::CounterUnit(set, index);
      ImGui::TableSetupColumn((set.CounterName(index) + (unit.empty() ? "" : " (" + unit + ")")).c_str());
    }
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs(); sort && sort->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs& spec = sort->Specs[0];
      const bool ascending = spec.SortDirection == ImGuiSortDirection_Ascending;
      auto key = [&](const server::ZoneStatistics& s) -> double {
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
          default: {
            const size_t column = size_t(spec.ColumnIndex) - 9;
            if (column >= counter_columns_.size()) return 0;
            auto it = counter_means_.find({s.source_location, counter_columns_[column]});
            return it == counter_means_.end() ? -1 : it->second;
          }
        }
      };
      std::stable_sort(statistics_.begin(), statistics_.end(), [&](const auto& a, const auto& b) {
        if (spec.ColumnIndex <= 1) {
          const auto& na = model.Location(a.source_location).name;
          const auto& nb = model.Location(b.source_location).name;
          return ascending ? na < nb : na > nb;
        }
        return ascending ? key(a) < key(b) : key(a) > key(b);
      });
    }
    for (const server::ZoneStatistics& s : statistics_) {
      const server::SourceLocation& location = model.Location(s.source_location);
      if (!filter_.PassFilter(location.name.c_str())) continue;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(s.source_location));
      const bool found = ws.find_request && ws.find_request->location == s.source_location;
      if (ImGui::Selectable(location.name.c_str(), found, ImGuiSelectableFlags_SpanAllColumns)) {
        ws.find_request = Workspace::FindRequest{s.source_location, gpu_};
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(location.ShortLabel().c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(s.count));
      for (double v : {double(s.total_ns), double(s.self_ns), s.mean_ns, double(s.median_ns),
                       double(s.min_ns), double(s.max_ns)}) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(v).c_str());
      }
      for (uint64_t column : counter_columns_) {
        ImGui::TableNextColumn();
        auto it = counter_means_.find({s.source_location, column});
        if (it != counter_means_.end()) ImGui::Text("%.6g", it->second);
      }
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace gnomon::viewer
