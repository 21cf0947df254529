#include "flame_graph_window.h"

#include <imgui.h>

#include <string>

#include "gnomon/server/text.h"
#include "gnomon/viewer/timeline.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

std::string Duration(double ns) { return server::FormatDuration(ns); }

}  // namespace

void FlameGraphWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Flame graph");
  if (!ImGui::Begin("Flame graph", &open)) {
    ImGui::End();
    return;
  }
  // Zones not held are read from the file again (a live capture's are always held).
  const bool from_file = !model.zones_held;
  if (from_file && ws.session->path().empty()) {
    SayZonesNotHeld(false);
    ImGui::End();
    return;
  }
  ImGui::SetNextItemWidth(Scaled(220));
  const std::string current =
      thread_id_ == 0 ? std::string("every thread") : Timeline::Name(model, {LaneKind::kThread, thread_id_});
  if (ImGui::BeginCombo("##thread", current.c_str())) {
    if (ImGui::Selectable("every thread", thread_id_ == 0)) thread_id_ = 0;
    for (const server::ThreadTimeline& thread : model.threads) {
      ImGui::PushID(int(thread.id));
      if (ImGui::Selectable(Timeline::Name(model, {LaneKind::kThread, thread.id}).c_str(),
                            thread_id_ == thread.id)) {
        thread_id_ = thread.id;
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::Checkbox("selected range only", &limit_to_range_);
  FlameQuery query{thread_id_};
  if (limit_to_range_ && ws.range) {
    query.begin_ns = ws.range->first;
    query.end_ns = ws.range->second;
  }
  // A live trace grows: a new graph once a second at most is the statistics' rhythm;
  // here the graph is rebuilt when the query changes or the user asks.
  Session* session = ws.session;
  if (from_file && session->is_loading()) {  // the file is read again once loaded
    ImGui::TextDisabled("the zones are not held: their flame graph is read from the file once it has loaded");
    ImGui::End();
    return;
  }
  job_.Request(query, [session, query, from_file] {
    Built built;
    built.from_file = from_file;
    if (from_file) {
      auto read = session->StreamFlameGraph(query, &built.note);
      if (read.ok()) {
        built.graph = std::move(read.value());
      } else {
        built.error = read.status().message();
      }
    } else {
      session->WithModel([&](const server::TraceModel& m) { built.graph = BuildFlameGraph(m, query); });
    }
    return built;
  });
  const Built* built = job_.result();
  if (job_.is_busy()) {
    ImGui::SameLine();
    ImGui::TextDisabled(built ? "updating..."
                              : (from_file ? "reading the zones from the file..." : "building..."));
  }
  if (built != nullptr && built->from_file) {
    if (!built->error.empty()) {
      ImGui::TextDisabled("reading the zones from the file failed: %s", built->error.c_str());
    } else {
      ImGui::TextDisabled("Its zones read from the file (they are not held: --memory-limit).");
    }
    if (!built->note.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 180, 80, 255));
      ImGui::TextWrapped("%s", built->note.c_str());
      ImGui::PopStyleColor();
    }
  }
  if (built == nullptr || !built->error.empty()) {
    ImGui::End();
    return;
  }
  const FlameGraph* graph = &built->graph;
  if (focus_generation_ != job_.result_generation()) {
    focus_ = FlameGraph::kRoot;
    focus_generation_ = job_.result_generation();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("whole")) focus_ = FlameGraph::kRoot;
  const FlameNode& focus = graph->nodes[focus_];
  ImGui::SameLine();
  ImGui::Text("%s: %s",
              focus_ == FlameGraph::kRoot ? "all zones" : model.Location(focus.location).name.c_str(),
              Duration(double(focus.total_ns)).c_str());

  const float width = std::max(40.0f, ImGui::GetContentRegionAvail().x);
  const std::vector<FlameBox> boxes = LayOutFlameGraph(*graph, focus_, 1.0 / double(width));
  std::string boxes_json;
  const FlameBox* hovered = DrawFlameBoxes(
      boxes, width,
      {.name =
           [&](uint32_t n) {
             return n == FlameGraph::kRoot ? std::string("all zones")
                                           : model.Location(graph->nodes[n].location).name;
           },
       .color =
           [&](uint32_t n) {
             return n == FlameGraph::kRoot
                        ? IM_COL32(110, 110, 120, 255)
                        : ZoneColor(model.Location(graph->nodes[n].location), graph->nodes[n].location);
           },
       .weight = [&](uint32_t n) { return double(graph->nodes[n].total_ns); },
       .weight_key = "total_ns"},
      boxes_json);
  ws.reports["flame-graph"] = JsonReport()
                                  .Add("nodes", double(graph->nodes.size()))
                                  .Add("from_file", built->from_file ? 1.0 : 0.0)
                                  .AddRaw("boxes", boxes_json)
                                  .str();
  if (hovered != nullptr) {
    const FlameNode& node = graph->nodes[hovered->node];
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(hovered->node == FlameGraph::kRoot ? "all zones"
                                                              : model.Location(node.location).name.c_str());
    ImGui::Text("total %s   self %s   %llu zone(s)", Duration(double(node.total_ns)).c_str(),
                Duration(double(node.self_ns)).c_str(), static_cast<unsigned long long>(node.count));
    ImGui::TextDisabled("click to zoom in, right-click to go back out");
    ImGui::EndTooltip();
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) focus_ = hovered->node;
  }
  if (ImGui::IsItemHovered() && ImGui::IsMouseClicked(ImGuiMouseButton_Right))
    focus_ = graph->nodes[focus_].parent;
  ImGui::End();
}

const FlameBox* DrawFlameBoxes(const std::vector<FlameBox>& boxes, float width, const FlameCanvas& canvas,
                               std::string& json) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  uint32_t rows = 1;
  for (const FlameBox& b : boxes) rows = std::max(rows, b.row + 1);
  const float row_height = ImGui::GetFontSize() + Scaled(5);
  const float height = std::max(ImGui::GetContentRegionAvail().y, float(rows) * row_height);
  ImGui::InvisibleButton("##flame", ImVec2(width, height));
  const bool hovered_area = ImGui::IsItemHovered();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  json.assign(1, '[');  // (not `= "["`: a false -Wrestrict of GCC 12)
  const FlameBox* hovered = nullptr;
  for (const FlameBox& b : boxes) {
    const float x0 = at.x + float(b.x0) * width, x1 = at.x + float(b.x1) * width;
    const float y0 = at.y + float(b.row) * row_height, y1 = y0 + row_height - 1;
    draw->AddRectFilled(ImVec2(x0, y0), ImVec2(std::max(x0 + 1, x1 - 1), y1), canvas.color(b.node));
    const std::string label = FitText(canvas.name(b.node), x1 - x0 - 6);
    if (!label.empty()) draw->AddText(ImVec2(x0 + 3, y0 + 2), IM_COL32(15, 15, 18, 255), label.c_str());
    if (hovered_area && mouse.x >= x0 && mouse.x < x1 && mouse.y >= y0 && mouse.y < y1) hovered = &b;
    char item[256];
    std::snprintf(item, sizeof(item), "%s{\"x0\":%.1f,\"x1\":%.1f,\"y0\":%.1f,\"row\":%u,\"%s\":%.17g}",
                  json.size() > 1 ? "," : "", x0, x1, y0, b.row, canvas.weight_key, canvas.weight(b.node));
    json += item;
  }
  json += "]";
  return hovered;
}

}  // namespace gnomon::viewer
