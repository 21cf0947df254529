#include "widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gnomon/server/text.h"

namespace gnomon::viewer {
namespace {
float g_interface_scale = 1;
}  // namespace

void SetInterfaceScale(float scale) { g_interface_scale = scale; }
float Scaled(float px) { return px * g_interface_scale; }

std::string FormatTime(int64_t ns) {
  char text[48];
  const double magnitude = std::fabs(double(ns));
  if (magnitude >= 1e9) {
    std::snprintf(text, sizeof(text), "%.6f s", double(ns) / 1e9);
  } else if (magnitude >= 1e6) {
    std::snprintf(text, sizeof(text), "%.4f ms", double(ns) / 1e6);
  } else if (magnitude >= 1e3) {
    std::snprintf(text, sizeof(text), "%.3f us", double(ns) / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%lld ns", static_cast<long long>(ns));
  }
  return text;
}

std::string FitText(const std::string& text, float width) {
  if (ImGui::CalcTextSize(text.c_str()).x <= width) return text;
  const float dots = ImGui::CalcTextSize("...").x;
  size_t lo = 0, hi = text.size();  // the longest prefix that fits with the dots
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (ImGui::CalcTextSize(text.c_str(), text.c_str() + mid).x + dots <= width) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  while (lo > 0 && (uint8_t(text[lo]) & 0xC0) == 0x80) --lo;  // not inside a UTF-8 character
  return lo == 0 ? std::string() : text.substr(0, lo) + "...";
}

void TextCell(const std::string& text) {
  const float width = ImGui::GetContentRegionAvail().x;
  const std::string shown = FitText(text, width);
  ImGui::TextUnformatted(shown.c_str());
  if (shown != text && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text.c_str());
}

std::optional<size_t> Histogram(const char* id, const std::vector<uint64_t>& counts, uint64_t tallest,
                                ImVec2 size, uint32_t color,
                                std::optional<std::pair<size_t, size_t>>* selection,
                                std::vector<HistogramBar>* bars, uint32_t selected_color, bool overlay) {
  if (size.x <= 0) size.x = std::max(40.0f, ImGui::GetContentRegionAvail().x + size.x);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  if (!overlay) draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), IM_COL32(22, 23, 26, 255));
  if (bars != nullptr) bars->clear();
  const size_t n = counts.size();
  if (n == 0) return std::nullopt;
  const float bin_width = size.x / float(n);
  auto bin_at = [&](float x) { return std::min(n - 1, size_t(std::max(0.0f, (x - at.x) / bin_width))); };
  std::optional<size_t> hovered;
  if (ImGui::IsItemHovered()) hovered = bin_at(ImGui::GetIO().MousePos.x);
  if (selection != nullptr && ImGui::IsItemActive()) {
    const ImVec2 drag = ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0);
    const float from = ImGui::GetIO().MouseClickedPos[ImGuiMouseButton_Left].x;
    const size_t a = bin_at(from), b = bin_at(from + drag.x);
    if (std::abs(drag.x) >= 3) *selection = std::make_pair(std::min(a, b), std::max(a, b));
  }
  if (selection != nullptr && ImGui::IsItemDeactivated() &&
      std::abs(ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).x) < 3) {
    selection->reset();
  }
  for (size_t i = 0; i < n; ++i) {
    if (counts[i] == 0 || tallest == 0) continue;
    const float h = std::max(1.0f, float(double(counts[i]) / double(tallest)) * (size.y - 2));
    const float x0 = at.x + float(i) * bin_width;
    const float x1 = std::max(x0 + 1, at.x + float(i + 1) * bin_width - (bin_width > 3 ? 1 : 0));
    const bool picked =
        selection != nullptr && *selection && i >= (*selection)->first && i <= (*selection)->second;
    draw->AddRectFilled(ImVec2(x0, at.y + size.y - h), ImVec2(x1, at.y + size.y),
                        picked && selected_color != 0 ? selected_color : color);
    if (bars != nullptr) bars->push_back({x0, at.y + size.y - h, x1, at.y + size.y, counts[i]});
  }
  if (hovered) {
    const float x0 = at.x + float(*hovered) * bin_width;
    draw->AddRect(ImVec2(x0, at.y), ImVec2(x0 + bin_width, at.y + size.y), IM_COL32(255, 255, 255, 90));
  }
  return hovered;
}

void JsonReport::Key(const char* key) {
  if (!body_.empty()) body_ += ",";
  body_ += server::JsonQuote(key) + ":";
}

JsonReport& JsonReport::Add(const char* key, double value) {
  Key(key);
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  body_ += text;
  return *this;
}

JsonReport& JsonReport::Add(const char* key, const std::string& value) {
  Key(key);
  body_ += server::JsonQuote(value);
  return *this;
}

JsonReport& JsonReport::AddRaw(const char* key, const std::string& json) {
  Key(key);
  body_ += json;
  return *this;
}

JsonReport& JsonReport::AddBars(const char* key, const std::vector<HistogramBar>& bars) {
  std::string json = "[";
  for (const HistogramBar& b : bars) {
    if (json.size() > 1) json += ",";
    char text[160];
    std::snprintf(text, sizeof(text), "{\"x0\":%.1f,\"y0\":%.1f,\"x1\":%.1f,\"y1\":%.1f,\"count\":%llu}",
                  b.x0, b.y0, b.x1, b.y1, static_cast<unsigned long long>(b.count));
    json += text;
  }
  return AddRaw(key, json + "]");
}

bool SayZonesNotHeld(bool zones_held) {
  if (zones_held) return false;
  ImGui::TextWrapped(
      "This trace's CPU zones are not held: they need more than --memory-limit. Save the part to look at "
      "(select a range, then Trace info; or gnomon-cut FILE --range A:B -o OUT) and open that, or open this "
      "file with a higher --memory-limit.");
  return true;
}

std::string Percent(uint64_t part, uint64_t whole) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f%%", whole == 0 ? 0.0 : 100.0 * double(part) / double(whole));
  return text;
}

}  // namespace gnomon::viewer
