#include "samples_window.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "flame_graph_window.h"
#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

// How many functions the table lists: the rest are seldom running.
constexpr size_t kMaxRows = 500;

// A stable colour per function name: warm, as flame graphs are.
uint32_t FunctionColor(const std::string& name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ uint8_t(c)) * 16777619u;
  const uint32_t r = 200 + (h & 0x37), g = 90 + ((h >> 8) & 0x7F), b = 40 + ((h >> 16) & 0x3F);
  return IM_COL32(r, g, b, 255);
}

}  // namespace

void SamplesWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Samples");
  if (!ImGui::Begin("Samples", &open)) {
    ImGui::End();
    return;
  }
  if (model.samples.size() == 0) {
    ImGui::TextDisabled("no samples in this trace: run the program with GNOMON_SAMPLING_HZ=1000");
    ws.reports["samples"] = JsonReport().Add("samples", 0).str();
    ImGui::End();
    return;
  }
  ImGui::SetNextItemWidth(Scaled(220));
  std::string shown =
      os_thread_id_ == 0 ? std::string("every thread") : "tid " + std::to_string(os_thread_id_);
  for (const server::ThreadTimeline& thread : model.threads) {
    if (thread.os_thread_id == os_thread_id_ && os_thread_id_ != 0)
      shown = Timeline::Name(model, {LaneKind::kThread, thread.id});
  }
  if (ImGui::BeginCombo("##thread", shown.c_str())) {
    if (ImGui::Selectable("every thread", os_thread_id_ == 0)) os_thread_id_ = 0;
    for (const server::ThreadTimeline& thread : model.threads) {
      ImGui::PushID(int(thread.id));
      if (ImGui::Selectable(Timeline::Name(model, {LaneKind::kThread, thread.id}).c_str(),
                            os_thread_id_ == thread.os_thread_id)) {
        os_thread_id_ = thread.os_thread_id;
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::Checkbox("selected range only", &limit_to_range_);
  ImGui::SameLine();
  if (ImGui::RadioButton("top functions", !show_flame_graph_)) show_flame_graph_ = false;
  ImGui::SameLine();
  if (ImGui::RadioButton("flame graph", show_flame_graph_)) show_flame_graph_ = true;

  // A live trace (or a file loading): its samples so far, counted again once a second.
  const size_t samples_seen = samples_.Update(model.samples.size());
  Query query{.filter = {.os_thread_id = os_thread_id_}, .samples = samples_seen};
  ws.LimitToRange(model, limit_to_range_, query.filter);
  Session* session = ws.session;
  auto symbolizer = symbolizer_;
  job_.Request(query, [session, query, symbolizer] {
    Result r;
    session->WithModel([&](const server::TraceModel& m) {
      r.summary = server::SummarizeSamples(m, *symbolizer, query.filter);
      r.tree = server::BuildSampleTree(m, *symbolizer, query.filter);
    });
    return r;
  });
  const Result* result = job_.result();
  if (job_.is_busy()) {
    ImGui::SameLine();
    ImGui::TextDisabled(result ? "updating..." : "symbolizing...");
  }
  if (result == nullptr) {
    ImGui::End();
    return;
  }
  ImGui::SameLine();
  ImGui::Text("%llu sample(s)", static_cast<unsigned long long>(result->summary.sample_count));
  if (show_flame_graph_) {
    DrawFlameGraph(*result, ws);
  } else {
    DrawTable(*result, ws);
  }
  const auto& functions = result->summary.functions;
  ws.reports["samples"] = JsonReport()
                              .Add("samples", double(result->summary.sample_count))
                              .Add("functions", double(functions.size()))
                              .Add("top", functions.empty() ? std::string() : functions[0].function)
                              .Add("top_self", functions.empty() ? 0.0 : double(functions[0].self_count))
                              .Add("flame_nodes", double(result->tree.nodes.size()))
                              .Add("flame_graph", show_flame_graph_ ? 1 : 0)
                              .str();
  ImGui::End();
}

void SamplesWindow::DrawTable(const Result& result, Workspace& ws) {
  const uint64_t all = result.summary.sample_count;
  if (!ImGui::BeginTable("functions", 6,
                         ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  const float number = ImGui::CalcTextSize("100.0%").x + Scaled(8);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch, 3.0f);
  ImGui::TableSetupColumn("Self", ImGuiTableColumnFlags_WidthFixed, number);
  ImGui::TableSetupColumn("Self %", ImGuiTableColumnFlags_WidthFixed, number);
  ImGui::TableSetupColumn("Total", ImGuiTableColumnFlags_WidthFixed, number);
  ImGui::TableSetupColumn("Total %", ImGuiTableColumnFlags_WidthFixed, number);
  ImGui::TableSetupColumn("Source", ImGuiTableColumnFlags_WidthStretch, 2.0f);
  ImGui::TableHeadersRow();
  const auto& functions = result.summary.functions;
  ImGuiListClipper clipper;
  clipper.Begin(int(std::min(functions.size(), kMaxRows)));
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const server::FunctionSamples& f = functions[size_t(row)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      TextCell(f.function);
      // A click on a function opens its machine code in Symbol.
      if (ImGui::IsItemClicked()) ws.show_symbol = f.function;
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(f.self_count));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(Percent(f.self_count, all).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(f.total_count));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(Percent(f.total_count, all).c_str());
      ImGui::TableNextColumn();
      const std::string file = f.file.substr(f.file.rfind('/') + 1);
      TextCell(file.empty() ? f.module : file + ":" + std::to_string(f.line) + "  " + f.module);
      // A click on a function's source opens it there.
      if (!f.file.empty() && ImGui::IsItemClicked()) ws.show_source = std::make_pair(f.file, f.line);
    }
  }
  ImGui::EndTable();
}

void SamplesWindow::DrawFlameGraph(const Result& result, Workspace& ws) {
  const server::SampleTree& tree = result.tree;
  if (tree.nodes.empty()) return;
  if (focus_generation_ != job_.result_generation() || focus_ >= tree.nodes.size()) {
    focus_ = 0;
    focus_generation_ = job_.result_generation();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("whole")) focus_ = 0;
  const float width = std::max(40.0f, ImGui::GetContentRegionAvail().x);
  auto count = [](const server::SampleTree::Node& n) { return double(n.count); };
  const std::vector<FlameBox> boxes = LayOutTree(tree.nodes, focus_, 1.0 / double(width), count);
  auto name = [&](uint32_t n) -> const std::string& { return tree.functions[tree.nodes[n].function]; };
  std::string boxes_json;
  const FlameBox* hovered = DrawFlameBoxes(
      boxes, width,
      {.name = name,
       .color = [&](uint32_t n) { return n == 0 ? IM_COL32(110, 110, 120, 255) : FunctionColor(name(n)); },
       .weight = [&](uint32_t n) { return double(tree.nodes[n].count); },
       .weight_key = "samples"},
      boxes_json);
  ws.reports["samples-flame"] = JsonReport().AddRaw("boxes", boxes_json).str();
  if (hovered != nullptr) {
    const server::SampleTree::Node& node = tree.nodes[hovered->node];
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(name(hovered->node).c_str());
    ImGui::Text("%llu sample(s), %s of those shown; %llu running here",
                static_cast<unsigned long long>(node.count), Percent(node.count, tree.nodes[0].count).c_str(),
                static_cast<unsigned long long>(node.self_count));
    ImGui::TextDisabled("click to zoom in, right-click to go back out");
    ImGui::EndTooltip();
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) focus_ = hovered->node;
  }
  if (ImGui::IsItemHovered() && ImGui::IsMouseClicked(ImGuiMouseButton_Right))
    focus_ = tree.nodes[focus_].parent;
}

}  // namespace gnomon::viewer
