#include "memory_window.h"

#include <imgui.h>

#include <cinttypes>
#include <cstdio>

#include "callstack_window.h"
#include "gnomon/server/memory_statistics.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {

void MemoryWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Memory");
  if (!ImGui::Begin("Memory", &open)) {
    ImGui::End();
    return;
  }
  if (model.memory_pools.empty()) {
    ImGui::TextDisabled("no memory events in this trace (GNOMON_ALLOC, gnomon/new_delete.hpp)");
    ws.reports["memory"] = JsonReport().Add("rows", 0).str();
    ImGui::End();
    return;
  }
  if (!model.memory_pools.contains(pool_id_)) {
    // First the pool that matters most: the largest peak.
    pool_id_ = model.memory_pools.begin()->first;
    uint64_t largest = 0;
    for (const auto& s : server::ComputeMemoryStatistics(model)) {
      if (s.peak_bytes > largest) {
        largest = s.peak_bytes;
        pool_id_ = s.pool_id;
      }
    }
  }
  const server::MemoryPool& pool = model.memory_pools.at(pool_id_);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  if (ImGui::BeginCombo("pool", pool.name.c_str())) {
    for (const auto& [id, p] : model.memory_pools) {
      if (ImGui::Selectable(p.name.c_str(), id == pool_id_)) pool_id_ = id;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::RadioButton("alive at", !never_freed_)) never_freed_ = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("never freed", never_freed_)) never_freed_ = true;
  // Alive at: the end of the selected range, or the middle of the view.
  const int64_t at_ns = ws.range ? ws.range->second : (ws.view.begin_ns() + ws.view.end_ns()) / 2;
  const uint64_t at_tick = Workspace::TicksOf(model, {at_ns, at_ns}).end_tick;
  const uint64_t events = pool.allocations.size() + pool.frees;
  if (list_pool_ != pool_id_ || list_never_freed_ != never_freed_ ||
      (!never_freed_ && list_at_tick_ != at_tick) || list_events_ != events) {
    list_ = ListAllocations(pool, never_freed_, at_tick);
    list_pool_ = pool_id_;
    list_never_freed_ = never_freed_;
    list_at_tick_ = at_tick;
    list_events_ = events;
  }
  if (!never_freed_) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s (%s)", FormatTime(at_ns).c_str(),
                        ws.range ? "end of the range" : "middle of the view");
  }
  ImGui::Text("%zu allocation(s), %s", list_.indexes.size(), server::FormatBytes(list_.bytes).c_str());
  const bool stacks = model.callstacks.size() != 0;
  if (ImGui::BeginTable("allocations", stacks ? 6 : 5,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupColumn("Size");
    ImGui::TableSetupColumn("Address");
    ImGui::TableSetupColumn("Allocated");
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Freed", stacks ? 0 : ImGuiTableColumnFlags_WidthStretch);
    if (stacks) ImGui::TableSetupColumn("Made in", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(int(list_.indexes.size()));
    while (clipper.Step()) {
      for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
        const uint64_t i = list_.indexes[size_t(row)];
        if (i >= pool.allocations.size()) continue;
        const server::MemoryAllocation& a = pool.allocations[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushID(row);
        const int64_t t = Workspace::RelNs(model, a.alloc_tick);
        if (ImGui::Selectable(server::FormatBytes(a.size_bytes).c_str(), false,
                              ImGuiSelectableFlags_SpanAllColumns)) {
          ws.JumpTo(t - 1'000'000, t + 1'000'000);
          if (a.callstack != 0) {  // and shows where it was made
            ws.callstack =
                Workspace::ShownCallstack{a.callstack, "allocation of " + server::FormatBytes(a.size_bytes)};
            ws.show_callstack = true;
          }
        }
        ImGui::PopID();
        ImGui::TableNextColumn();
        char address[24];
        std::snprintf(address, sizeof(address), "0x%" PRIx64, a.address);
        ImGui::TextUnformatted(address);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(FormatTime(t).c_str());
        ImGui::TableNextColumn();
        TextCell(Timeline::Name(model, {LaneKind::kThread, a.alloc_thread}));
        ImGui::TableNextColumn();
        if (a.is_freed()) {
          ImGui::TextUnformatted(FormatTime(Workspace::RelNs(model, a.free_tick)).c_str());
        } else {
          ImGui::TextDisabled("never");
        }
        if (stacks) {
          ImGui::TableNextColumn();
          TextCell(CallstackSummary(model, ws, a.callstack));
        }
      }
    }
    ImGui::EndTable();
  }
  ws.reports["memory"] = JsonReport()
                             .Add("pool", pool.name)
                             .Add("never_freed", never_freed_ ? 1 : 0)
                             .Add("rows", double(list_.indexes.size()))
                             .Add("bytes", double(list_.bytes))
                             .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
