// The panel of side windows below the timeline: the splitter that shares the height,
// the tiles each window first opens in (decks when they do not fit side by side), and
// the strip of tabs that names the windows of a deck.
#include <imgui.h>
#include <imgui_internal.h>  // FindWindowByName, ImGuiWindow::FocusOrder

#include <algorithm>
#include <string>
#include <vector>

#include "app.h"
#include "widgets.h"

namespace gnomon::viewer {

void App::Splitter(float y, float width, float height) {
  ImGui::SetCursorScreenPos(ImVec2(0, y));
  ImGui::InvisibleButton("##splitter", ImVec2(width, kSplitterHeight));
  const bool hot = ImGui::IsItemHovered() || ImGui::IsItemActive();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(0, y + 2), ImVec2(width, y + kSplitterHeight - 2),
                                            hot ? IM_COL32(120, 120, 130, 255) : IM_COL32(60, 60, 66, 255));
  if (hot) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeNS);
  if (ImGui::IsItemActive()) {
    split_ = std::clamp((ImGui::GetIO().MousePos.y + kSplitterHeight / 2) / height, 0.2f, 0.85f);
    tile_requested_ = true;
  }
}

bool App::TileSideWindows(float top, float width, float height) {
  std::vector<const char*> titles;
  auto add = [&](bool open, const char* title) {
    if (open) titles.push_back(title);
  };
  add(statistics_window_.open, "Statistics");
  add(find_zone_window_.open, "Find zone");
  add(flame_graph_window_.open, "Flame graph");
  add(frame_times_window_.open, "Frame times");
  add(compare_window_.open, "Compare");
  add(workspace_.selected.has_value(), "Zone details");
  add(messages_window_.open, "Messages");
  add(clock_window_.open, "GPU clocks");
  add(memory_window_.open, "Memory");
  add(samples_window_.open, "Samples");
  add(source_window_.open, "Source");
  add(symbol_window_.open, "Symbol");
  add(cpu_window_.open, "CPU data");
  add(callstack_window_.open, "Call stack");
  add(debug_window_.open, "Debug");
  add(trace_info_window_.open, "Trace info");
  add(annotations_window_.open, "Annotations");
  open_titles_.assign(titles.begin(), titles.end());
  const size_t n = titles.size();
  if (n == 0) return false;
  // Tiles never smaller than a window needs to be read (at the interface's scale): as
  // many as fit side by side in the panel; more windows than tiles stack in decks, each
  // a title bar lower and to the right of the one behind, and the strip of their names
  // above the tiles brings any of them to the front.
  const float min_width = Scaled(kMinTileWidth), min_height = Scaled(kMinTileHeight);
  const size_t fit_columns = std::max<size_t>(1, size_t(std::max(0.0f, width / min_width)));
  auto fit_rows_below = [&](float at) {
    return std::max<size_t>(1, size_t(std::max(0.0f, (height - at) / min_height)));
  };
  const bool stacked = n > fit_columns * fit_rows_below(top);
  if (stacked) top += WindowStripHeight();
  const size_t fit_rows = fit_rows_below(top);
  const size_t cells = std::min(n, fit_columns * fit_rows);
  size_t columns = std::min({cells, fit_columns, size_t(cells <= 3 ? cells : cells <= 6 ? 3 : 4)});
  size_t rows = (cells + columns - 1) / columns;
  if (rows > fit_rows) {
    rows = fit_rows;
    columns = (cells + rows - 1) / rows;
  }
  const float w = width / float(columns), h = (height - top) / float(rows);
  // A deck's windows step down by a title bar, or less where the cell has no room for
  // it: every window stays inside its cell.
  const size_t decks = (n + cells - 1) / cells;
  const float room = std::max(0.0f, std::min(w, h) - std::min(min_width, min_height) / 2);
  const float step = decks > 1 ? std::min(ImGui::GetFrameHeight(), room / float(decks - 1)) : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const size_t cell = i % cells, deck = i / cells;
    const size_t row = cell / columns, column = cell % columns;
    // The last row's windows share its width.
    const size_t in_row = row + 1 == rows ? cells - row * columns : columns;
    const float cw = row + 1 == rows ? width / float(in_row) : w;
    const float offset = float(deck) * step;
    workspace_.tiles[titles[i]] = {float(column) * cw + offset, top + float(row) * h + offset, cw - offset,
                                   h - offset};
  }
  return stacked;
}

float App::WindowStripHeight() const { return ImGui::GetFrameHeight() + 2 * ImGui::GetStyle().ItemSpacing.y; }

void App::WindowStrip(float top) {
  // The window in front: the open one focused last.
  std::string front;
  int front_order = -1;
  for (const std::string& title : open_titles_) {
    const ImGuiWindow* w = ImGui::FindWindowByName(title.c_str());
    if (w != nullptr && w->WasActive && w->FocusOrder > front_order) {  // drawn last frame
      front_order = w->FocusOrder;
      front = title;
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(ImGui::GetStyle().WindowPadding.x, top + ImGui::GetStyle().ItemSpacing.y));
  JsonReport report;
  std::string tabs = "[";
  if (ImGui::BeginTabBar("##windows",
                         ImGuiTabBarFlags_FittingPolicyScroll | ImGuiTabBarFlags_TabListPopupButton)) {
    for (const std::string& title : open_titles_) {
      // The tab follows the window in front when the user brought another forward.
      const ImGuiTabItemFlags flags =
          title == front && front != strip_front_ ? ImGuiTabItemFlags_SetSelected : 0;
      const bool selected = ImGui::BeginTabItem(title.c_str(), nullptr, flags);
      if (ImGui::IsItemClicked()) ImGui::SetWindowFocus(title.c_str());  // a tab clicked: its window in front
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      tabs += (tabs.size() > 1 ? "," : "") + JsonReport()
                                                 .Add("title", title)
                                                 .Add("x0", double(a.x))
                                                 .Add("y0", double(a.y))
                                                 .Add("x1", double(b.x))
                                                 .Add("y1", double(b.y))
                                                 .str();
      if (selected) ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  strip_front_ = front;
  if (options_.keep_item_labels)
    workspace_.reports["window-strip"] = report.Add("front", front).AddRaw("tabs", tabs + "]").str();
}

}  // namespace gnomon::viewer
