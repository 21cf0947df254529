#include "details_window.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

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

// The children by location, as JSON for the layout dump: name, count, total_ns.
std::string DetailsWindow::ChildGroupsJson(const server::TraceModel& model, const Family& family) {
  std::string json = "[";
  for (const Family::ChildGroup& group : family.child_groups) {
    if (json.size() > 1) json += ",";
    json += JsonReport()
                .Add("name", model.Location(group.location).name)
                .Add("count", double(group.count))
                .Add("total_ns", double(group.total_ns))
                .str();
  }
  return json + "]";
}

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

DetailsWindow::Family DetailsWindow::FindFamily(const server::TraceModel& model,
                                                const server::ThreadTimeline& thread, uint32_t index) {
  const server::Zone z = thread.zones[index];
  Family f;
  f.lane = {LaneKind::kThread, thread.id};
  f.index = index;
  f.model_zones = model.zone_count;
  f.model_messages = model.messages.size();
  for (size_t i = index; i-- > 0;) {  // the parent: the nearest zone before it and above it
    if (thread.zones[i].depth < z.depth) {
      f.parent = uint32_t(i);
      const server::Zone p = thread.zones[i];
      if (!p.is_open()) f.parent_ns = model.DurationNs(p.begin_tick, p.end_tick);
      break;
    }
  }
  std::map<uint32_t, Family::ChildGroup> groups;
  for (size_t i = size_t(index) + 1; i < thread.zones.size(); ++i) {
    const server::Zone c = thread.zones[i];
    if (c.depth <= z.depth) break;
    if (c.depth != z.depth + 1) continue;
    ++f.child_count;
    if (f.children.size() < kMaxChildren) f.children.push_back(uint32_t(i));
    Family::ChildGroup& group = groups[c.source_location];
    group.location = c.source_location;
    ++group.count;
    if (c.is_open()) continue;
    const int64_t ns = model.DurationNs(c.begin_tick, c.end_tick);
    if (__builtin_add_overflow(f.children_ns, ns, &f.children_ns)) f.children_ns = INT64_MAX;
    if (__builtin_add_overflow(group.total_ns, ns, &group.total_ns)) group.total_ns = INT64_MAX;
  }
  for (const auto& [location, group] : groups) f.child_groups.push_back(group);
  std::stable_sort(f.child_groups.begin(), f.child_groups.end(),
                   [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  // What the thread did inside it: its messages, and the allocations it made.
  const uint64_t end = z.is_open() ? model.last_tick : z.end_tick;
  auto inside = [&](uint64_t tick) { return tick >= z.begin_tick && tick <= end; };
  for (size_t m = 0; m < model.messages.size(); ++m) {
    const server::LogMessage& message = model.messages[m];
    if (message.thread_id != thread.id || !inside(message.tick)) continue;
    ++f.message_count;
    if (f.messages.size() < kMaxListed) f.messages.push_back(uint32_t(m));
  }
  for (const auto& [id, pool] : model.memory_pools) {
    for (size_t a = 0; a < pool.allocations.size(); ++a) {
      const server::MemoryAllocation& allocation = pool.allocations[a];
      if (allocation.alloc_thread != thread.id || !inside(allocation.alloc_tick)) continue;
      ++f.allocation_count;
      f.allocated_bytes += allocation.size_bytes;
      if (f.allocations.size() < kMaxListed) f.allocations.push_back({id, a});
    }
  }
  return f;
}

void DetailsWindow::DrawInside(const server::TraceModel& model, Workspace& ws) {
  const Family& f = *family_;
  if (f.message_count > 0 && ImGui::TreeNode("messages", "Messages inside: %zu%s", f.message_count,
                                             f.message_count > f.messages.size() ? " (the first 50)" : "")) {
    for (uint32_t m : f.messages) {
      const server::LogMessage& message = model.messages[m];
      ImGui::PushID(int(m));
      const int64_t at = Workspace::RelNs(model, message.tick);
      if (ImGui::Selectable((Exact(at) + "  " + server::Printable(message.text)).c_str())) {
        ws.JumpTo(at - 1000, at + 1000);
      }
      ImGui::PopID();
    }
    ImGui::TreePop();
  }
  if (f.allocation_count > 0 &&
      ImGui::TreeNode("allocations", "Allocations inside: %zu, %s%s", f.allocation_count,
                      server::FormatBytes(f.allocated_bytes).c_str(),
                      f.allocation_count > f.allocations.size() ? " (the first 50 below)" : "")) {
    for (const Family::Allocation& a : f.allocations) {
      const server::MemoryPool& pool = model.memory_pools.at(a.pool);
      const server::MemoryAllocation& allocation = pool.allocations[a.index];
      ImGui::Text("%s  %s in %s%s", Exact(Workspace::RelNs(model, allocation.alloc_tick)).c_str(),
                  server::FormatBytes(allocation.size_bytes).c_str(), pool.name.c_str(),
                  allocation.is_freed() ? "" : ", never freed");
    }
    ImGui::TreePop();
  }
}

void DetailsWindow::DrawCpuZone(const server::TraceModel& model, Workspace& ws,
                                const server::ThreadTimeline& thread, uint32_t index) {
  const server::Zone z = thread.zones[index];
  const LaneKey lane{LaneKind::kThread, thread.id};
  if (!family_ || family_->lane != lane || family_->index != index ||
      family_->model_zones != model.zone_count || family_->model_messages != model.messages.size()) {
    family_ = FindFamily(model, thread, index);
  }
  const auto& location = model.Location(z.source_location);
  const int64_t duration = z.is_open() ? -1 : model.DurationNs(z.begin_tick, z.end_tick);
  ImGui::Text("Zone      %s", model.ZoneName(thread, index).c_str());
  ImGui::Text("Location  %s:%u (%s)", location.file.c_str(), location.line, location.function.c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("source")) ws.show_source = std::make_pair(location.file, location.line);
  ImGui::Text("Thread    %s", Timeline::Name(model, lane).c_str());
  ImGui::Text("Start     %s", Exact(Workspace::RelNs(model, z.begin_tick)).c_str());
  ImGui::Text("Duration  %s", duration < 0 ? "unfinished" : DurationExact(duration).c_str());
  ImGui::Text("Self      %s", duration < 0 ? "-" : DurationExact(duration - family_->children_ns).c_str());
  const double of_parent =
      duration >= 0 && family_->parent_ns > 0 ? 100.0 * double(duration) / double(family_->parent_ns) : -1;
  if (of_parent >= 0) ImGui::Text("Of parent %.1f %%", of_parent);
  ImGui::SameLine();
  if (ImGui::SmallButton("zoom to it")) {
    const int64_t begin = Workspace::RelNs(model, z.begin_tick);
    ws.JumpTo(begin, duration < 0 ? Workspace::RelNs(model, model.last_tick) : begin + duration, 0.05);
  }
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
  // Where its time goes: the children by location (a click finds them all).
  if (!family_->child_groups.empty() &&
      ImGui::BeginTable("time in children", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders)) {
    ImGui::TableSetupColumn("Child", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Count");
    ImGui::TableSetupColumn("Total");
    ImGui::TableSetupColumn("Of the zone");
    ImGui::TableHeadersRow();
    for (const Family::ChildGroup& group : family_->child_groups) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::PushID(int(group.location));
      if (ImGui::Selectable(model.Location(group.location).name.c_str(), false,
                            ImGuiSelectableFlags_SpanAllColumns))
        ws.find_request = Workspace::FindRequest{group.location, false};
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(group.count));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(Duration(double(group.total_ns)).c_str());
      ImGui::TableNextColumn();
      if (duration > 0) ImGui::Text("%.1f %%", 100.0 * double(group.total_ns) / double(duration));
    }
    ImGui::EndTable();
  }
  DrawInside(model, ws);
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
                              .Add("of_parent_pct", of_parent)
                              .AddRaw("time_in_children", ChildGroupsJson(model, *family_))
                              .Add("messages_inside", double(family_->message_count))
                              .Add("allocations_inside", double(family_->allocation_count))
                              .Add("bytes_allocated_inside", double(family_->allocated_bytes))
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
