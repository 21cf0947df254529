#include "details_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void DetailsWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  if (!ws.selected) return;
  // Taller when it opens on a GPU zone with counters, to show their table.
  const bool has_counters =
      ws.selected->kind == DrawItem::Kind::kGpuZone && model.gpu_contexts.contains(ws.selected->lane.id) &&
      server::FindZoneCounters(model.gpu_contexts.at(ws.selected->lane.id), ws.selected->index);
  ImGui::SetNextWindowSize(ImVec2(440, has_counters ? 300 : 190), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowPos(ImVec2(800, 520), ImGuiCond_FirstUseEver);
  bool open = true;
  if (!ImGui::Begin("Zone details", &open)) {
    ImGui::End();
    return;
  }
  const Selection s = *ws.selected;
  if (s.kind == DrawItem::Kind::kZone && model.thread_index.contains(s.lane.id)) {
    const auto& thread = model.threads[model.thread_index.at(s.lane.id)];
    const server::Zone& z = thread.zones[s.index];
    const auto& location = model.Location(z.source_location);
    int64_t children = 0;
    size_t child_count = 0;
    for (size_t i = s.index + 1; i < thread.zones.size() && thread.zones[i].depth > z.depth; ++i) {
      const auto& c = thread.zones[i];
      if (c.depth == z.depth + 1 && !c.is_open()) {
        if (__builtin_add_overflow(children, model.DurationNs(c.begin_tick, c.end_tick), &children))
          children = INT64_MAX;
        ++child_count;
      }
    }
    const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
    ImGui::Text("Zone      %s", model.ZoneName(thread, s.index).c_str());
    ImGui::Text("Location  %s:%u (%s)", location.file.c_str(), location.line, location.function.c_str());
    ImGui::Text("Thread    %s",
                thread.name.empty() ? std::to_string(thread.id).c_str() : thread.name.c_str());
    ImGui::Text("Start     %s", Duration(double(Workspace::RelNs(model, z.begin_tick))).c_str());
    ImGui::Text("Duration  %s", duration < 0 ? "unfinished" : Duration(double(duration)).c_str());
    ImGui::Text("Self      %s", duration < 0 ? "-" : Duration(double(duration - children)).c_str());
    ImGui::Text("Children  %zu", child_count);
    if (z.flags & server::kZoneHasAttributes) {
      const auto& a = thread.attributes.at(s.index);
      if (!a.text.empty()) ImGui::Text("Text      %s", a.text.c_str());
      if (a.has_value) ImGui::Text("Value     %llu", static_cast<unsigned long long>(a.value));
    }
  } else if (s.kind == DrawItem::Kind::kGpuZone && model.gpu_contexts.contains(s.lane.id)) {
    const auto& context = model.gpu_contexts.at(s.lane.id);
    const server::GpuZone& z = context.zones[s.index];
    const auto mapped = model.MapGpuZone(context, z);
    ImGui::Text("GPU zone  %s", model.Location(z.source_location).name.c_str());
    ImGui::Text("Context   %s", context.label().c_str());
    ImGui::Text("Raw ticks %llu .. %llu", static_cast<unsigned long long>(z.gpu_begin),
                static_cast<unsigned long long>(z.gpu_end));
    ImGui::Text("Start     %s +/- %s",
                Duration(double(mapped.begin_ns - model.clock.TickToNs(model.first_tick))).c_str(),
                Duration(double(mapped.uncertainty_ns)).c_str());
    ImGui::Text("Duration  %s (GPU clock)",
                Duration(context.clock.TicksToNs(z.gpu_end - z.gpu_begin)).c_str());
    ImGui::Text("Latency   %s from CPU record to GPU start",
                Duration(double(mapped.begin_ns - model.clock.TickToNs(z.cpu_begin_tick))).c_str());
    ImGui::Text("Thread    %u", z.thread_id);
    if (const server::CounterSample* sample = server::FindZoneCounters(context, s.index)) {
      const server::CounterSet& set = model.counter_sets.at(sample->set_id);
      ImGui::Separator();
      ImGui::Text("Counters  %s%s%s", set.name.c_str(),
                  sample->flags & protocol::kCounterFrequencyChanged ? "  (frequency changed)" : "",
                  sample->flags & protocol::kCounterSplitOccurred ? "  (split occurred)" : "");
      if (ImGui::BeginTable("zone counters", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders)) {
        ImGui::TableSetupColumn("Counter", ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("Value");
        ImGui::TableSetupColumn("Raw");
        ImGui::TableHeadersRow();
        for (uint32_t i = 0; i < sample->value_count; ++i) {
          const std::string unit = server::CounterUnit(set, i);
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(set.CounterName(i).c_str());
          const server::CounterInfo* counter = set.Find(i);
          if (ImGui::IsItemHovered() && counter != nullptr && !counter->description.empty()) {
            ImGui::SetTooltip("%s", counter->description.c_str());
          }
          ImGui::TableNextColumn();
          ImGui::Text("%.6g%s%s", server::NormalizedCounterValue(model, context, *sample, i),
                      unit.empty() ? "" : " ", unit.c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%.6g", context.counter_values[sample->first_value + i]);
        }
        ImGui::EndTable();
      }
    }
  }
  ImGui::End();
  if (!open) ws.selected.reset();
}

}  // namespace gnomon::viewer
