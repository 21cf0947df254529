#include "details_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "callstack_window.h"
#include "gnomon/protocol/messages.h"
#include "gnomon/server/counter_values.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

// A trace-relative time to the nanosecond: "1.234567890 s".
std::string Exact(int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof(text), "%s%lld.%09lld s", ns < 0 ? "-" : "",
                static_cast<long long>(std::llabs(ns) / 1'000'000'000),
                static_cast<long long>(std::llabs(ns) % 1'000'000'000));
  return text;
}

// A duration as people read it, and to the nanosecond.
std::string DurationExact(int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof(text), " (%lld ns)", static_cast<long long>(ns));
  return Duration(double(ns)) + text;
}

}  // namespace

void DetailsWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  if (!ws.selected) return;
  bool open = true;
  ws.Place("Zone details");
  if (!ImGui::Begin("Zone details", &open)) {
    ImGui::End();
    return;
  }
  const Selection s = *ws.selected;
  if (s.kind == DrawItem::Kind::kZone && model.thread_index.contains(s.lane.id)) {
    const auto& thread = model.threads[model.thread_index.at(s.lane.id)];
    if (s.index < thread.zones.size()) DrawCpuZone(model, ws, thread, s.index);
  } else if (s.kind == DrawItem::Kind::kGpuZone && model.gpu_contexts.contains(s.lane.id)) {
    const auto& context = model.gpu_contexts.at(s.lane.id);
    if (s.index < context.zones.size()) DrawGpuZone(model, context, s.index);
  } else if ((s.kind == DrawItem::Kind::kLockHold || s.kind == DrawItem::Kind::kLockWait) &&
             model.locks.contains(s.lane.id) && s.index < model.locks.at(s.lane.id).holds.size()) {
    DrawLockHold(model, model.locks.at(s.lane.id), s.index);
  }
  ImGui::End();
  if (!open) ws.selected.reset();
}

void DetailsWindow::DrawLockHold(const server::TraceModel& model, const server::Lock& lock, uint32_t index) {
  const server::LockHold& hold = lock.holds[index];
  const int64_t origin = model.clock.TickToNs(model.first_tick);
  ImGui::Text("Lock      %s", lock.name.c_str());
  ImGui::Text("Thread    %s", Timeline::Name(model, {LaneKind::kThread, hold.thread_id}).c_str());
  ImGui::Text("Kind      %s", (hold.flags & protocol::kLockShared) ? "shared (a reader)" : "exclusive");
  if (hold.is_contended()) {
    ImGui::Text("Waited    %s, from %s",
                DurationExact(model.DurationNs(hold.wait_tick, hold.obtain_tick)).c_str(),
                Exact(model.clock.TickToNs(hold.wait_tick) - origin).c_str());
  } else {
    ImGui::Text("Waited    no (uncontended)");
  }
  ImGui::Text("Obtained  %s", Exact(model.clock.TickToNs(hold.obtain_tick) - origin).c_str());
  if (hold.is_released()) {
    ImGui::Text("Held      %s", DurationExact(model.DurationNs(hold.obtain_tick, hold.release_tick)).c_str());
  } else {
    ImGui::Text("Held      until the end of the trace");
  }
}

void DetailsWindow::DrawCpuZone(const server::TraceModel& model, Workspace& ws,
                                const server::ThreadTimeline& thread, uint32_t index) {
  const server::Zone z = thread.zones[index];
  const LaneKey lane{LaneKind::kThread, thread.id};
  if (!family_ || family_->lane != lane || family_->index != index) {
    Family f;
    f.lane = lane;
    f.index = index;
    for (size_t i = index; i-- > 0;) {  // the parent: the nearest zone before it and above it
      if (thread.zones[i].depth < z.depth) {
        f.parent = uint32_t(i);
        break;
      }
    }
    for (size_t i = size_t(index) + 1; i < thread.zones.size(); ++i) {
      const server::Zone c = thread.zones[i];
      if (c.depth <= z.depth) break;
      if (c.depth != z.depth + 1) continue;
      ++f.child_count;
      if (f.children.size() < kMaxChildren) f.children.push_back(uint32_t(i));
      if (!c.is_open() &&
          __builtin_add_overflow(f.children_ns, model.DurationNs(c.begin_tick, c.end_tick), &f.children_ns)) {
        f.children_ns = INT64_MAX;
      }
    }
    family_ = std::move(f);
  }
  const auto& location = model.Location(z.source_location);
  const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
  ImGui::Text("Zone      %s", model.ZoneName(thread, index).c_str());
  ImGui::Text("Location  %s:%u (%s)", location.file.c_str(), location.line, location.function.c_str());
  ImGui::Text("Thread    %s", Timeline::Name(model, lane).c_str());
  ImGui::Text("Start     %s", Exact(Workspace::RelNs(model, z.begin_tick)).c_str());
  ImGui::Text("Duration  %s", duration < 0 ? "unfinished" : DurationExact(duration).c_str());
  ImGui::Text("Self      %s", duration < 0 ? "-" : DurationExact(duration - family_->children_ns).c_str());
  if (z.flags & server::kZoneHasAttributes) {
    const auto& a = thread.attributes.at(index);
    if (!a.text.empty()) ImGui::Text("Text      %s", a.text.c_str());
    if (a.has_value) ImGui::Text("Value     %llu", static_cast<unsigned long long>(a.value));
  }
  // Its call stack: the Call stack window follows the selected zone.
  if (const std::optional<uint32_t> stack = thread.callstacks.find(index)) {
    ImGui::Text("Called in %s", CallstackSummary(model, ws, *stack).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("call stack")) ws.show_callstack = true;
    if (!ws.callstack || ws.callstack->id != *stack) {
      ws.callstack = Workspace::ShownCallstack{*stack, "zone " + model.ZoneName(thread, index)};
    }
  }
  auto go_to = [&](uint32_t i) {
    ws.selected = Selection{lane, DrawItem::Kind::kZone, i};
    const server::Zone target = thread.zones[i];
    const int64_t begin = Workspace::RelNs(model, target.begin_tick);
    ws.JumpTo(begin, target.is_open() ? begin + 1000 : Workspace::RelNs(model, target.end_tick));
  };
  ImGui::TextUnformatted("Parent   ");
  ImGui::SameLine();
  if (family_->parent) {
    const uint32_t p = *family_->parent;
    if (ImGui::SmallButton((model.ZoneName(thread, p) + "##parent").c_str())) go_to(p);
  } else {
    ImGui::TextDisabled("none (a top-level zone)");
  }
  ImGui::Text("Children  %zu%s", family_->child_count,
              family_->child_count > family_->children.size() ? " (the first 200 below)" : "");
  if (!family_->children.empty() && ImGui::BeginChild("children", ImVec2(0, 0), true)) {
    for (uint32_t c : family_->children) {
      const server::Zone child = thread.zones[c];
      ImGui::PushID(int(c));
      const std::string label =
          model.ZoneName(thread, c) + "  " +
          (child.is_open() ? std::string("unfinished")
                           : Duration(double(model.DurationNs(child.begin_tick, child.end_tick))));
      if (ImGui::Selectable(label.c_str())) go_to(c);
      ImGui::PopID();
    }
  }
  if (!family_->children.empty()) ImGui::EndChild();
  ws.reports["details"] = JsonReport()
                              .Add("zone", model.ZoneName(thread, index))
                              .Add("thread", Timeline::Name(model, lane))
                              .Add("duration_ns", double(duration))
                              .Add("self_ns", duration < 0 ? -1.0 : double(duration - family_->children_ns))
                              .Add("parent", family_->parent ? model.ZoneName(thread, *family_->parent) : "")
                              .Add("children", double(family_->child_count))
                              .str();
}

void DetailsWindow::DrawGpuZone(const server::TraceModel& model, const server::GpuContextTimeline& context,
                                uint32_t index) {
  const server::GpuZone& z = context.zones[index];
  const auto mapped = model.MapGpuZone(context, z);
  ImGui::Text("GPU zone  %s", model.Location(z.source_location).name.c_str());
  ImGui::Text("Context   %s", context.label().c_str());
  ImGui::Text("Raw ticks %llu .. %llu", static_cast<unsigned long long>(z.gpu_begin),
              static_cast<unsigned long long>(z.gpu_end));
  ImGui::Text("Start     %s +/- %s relative, %s absolute",
              Exact(mapped.begin_ns - model.clock.TickToNs(model.first_tick)).c_str(),
              Duration(double(mapped.relative_ns)).c_str(),
              server::FormatBound(mapped.early_ns, mapped.late_ns).c_str());
  ImGui::Text("Duration  %s (GPU clock)",
              DurationExact(std::llround(context.clock.TicksToNs(z.gpu_end - z.gpu_begin))).c_str());
  ImGui::Text("Latency   %s from CPU record to GPU start",
              Duration(double(mapped.begin_ns - model.clock.TickToNs(z.cpu_begin_tick))).c_str());
  ImGui::Text("Thread    %s", Timeline::Name(model, {LaneKind::kThread, z.thread_id}).c_str());
  if (const server::CounterSample* sample = server::FindZoneCounters(context, index)) {
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

}  // namespace gnomon::viewer
