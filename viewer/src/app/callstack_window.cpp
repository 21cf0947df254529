#include "callstack_window.h"

#include <imgui.h>

#include <cinttypes>
#include <cstdio>

#include "widgets.h"

namespace gnomon::viewer {
namespace {

std::string Source(const server::SymbolizedFrame& frame) {
  if (frame.file.empty()) return "";
  return frame.file.substr(frame.file.rfind('/') + 1) + ":" + std::to_string(frame.line);
}

// Frames that only say memory was asked for: the allocator's own, the tracking hooks.
bool IsAllocatorFrame(const std::string& function) {
  return function.starts_with("operator new") || function.starts_with("gnomon_alloc") ||
         function.starts_with("malloc") || function.starts_with("__libc_malloc");
}

}  // namespace

std::string CallstackSummary(const server::TraceModel& model, Workspace& ws, uint32_t id) {
  const auto frames = model.callstacks.Frames(id);
  for (uint64_t address : frames) {
    const server::SymbolizedFrame& frame = ws.Frame(model, address, true);
    if (IsAllocatorFrame(frame.function)) continue;
    const std::string source = Source(frame);
    return frame.function + (source.empty() ? "" : " (" + source + ")");
  }
  return "";
}

void CallstackWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Call stack");
  if (!ImGui::Begin("Call stack", &open)) {
    ImGui::End();
    return;
  }
  const auto frames = ws.callstack ? model.callstacks.Frames(ws.callstack->id) : std::span<const uint64_t>{};
  if (frames.empty()) {
    ImGui::TextDisabled(model.callstacks.size() == 0
                            ? "no call stacks in this trace: run the program with GNOMON_CALLSTACK_DEPTH=8"
                            : "select a zone with a call stack, or an allocation in the Memory window");
    ws.reports["callstack"] = JsonReport().Add("frames", 0).str();
    ImGui::End();
    return;
  }
  ImGui::Text("%s: %zu frame(s), innermost first", ws.callstack->of.c_str(), frames.size());
  std::string first_function;
  if (ImGui::BeginTable("frames", 4,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("#");
    ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Source");
    ImGui::TableSetupColumn("Module");
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < frames.size(); ++i) {
      const server::SymbolizedFrame& frame = ws.Frame(model, frames[i], i > 0 || !ws.callstack->sampled);
      if (i == 0) first_function = frame.function;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", i);
      ImGui::TableNextColumn();
      TextCell(frame.function);
      if (ImGui::IsItemHovered()) {
        char address[24];
        std::snprintf(address, sizeof(address), "0x%" PRIx64, frames[i]);
        ImGui::SetTooltip("%s\n%s", frame.function.c_str(), address);
      }
      ImGui::TableNextColumn();
      TextCell(Source(frame));
      ImGui::TableNextColumn();
      TextCell(frame.module);
    }
    ImGui::EndTable();
  }
  ws.reports["callstack"] = JsonReport()
                                .Add("of", ws.callstack->of)
                                .Add("frames", double(frames.size()))
                                .Add("first", first_function)
                                .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
