// Small drawing pieces the windows share: a histogram that a drag selects a range of,
// text cut to a width with an ellipsis, a table cell with its full text on hover, and a
// JSON sketch of what a window drew (for --layout-dump and the window tests).
#pragma once

#include <imgui.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gnomon::viewer {

// The interface scale (the monitor's content scale, or --scale), set once at start:
// Scaled(px) is a size given in pixels at scale 1.
void SetInterfaceScale(float scale);
float Scaled(float px);

// A trace-relative time with the digits a list of them needs to tell them apart:
// "1.234567 s", "100.1234 ms", "12.345 us", "870 ns".
std::string FormatTime(int64_t ns);

// `text` cut to fit `width` pixels, ending in "..." when cut.
std::string FitText(const std::string& text, float width);

// A table cell: the text, cut to the column's width, and all of it in a tooltip when
// cut and hovered.
void TextCell(const std::string& text);

// In a window that needs the CPU zones held: says that this trace's are not (it is
// bigger than --memory-limit) and what to do instead; true then.
bool SayZonesNotHeld(bool zones_held);

// "12.5%": `part` of `whole` (0.0% of nothing).
std::string Percent(uint64_t part, uint64_t whole);

// A growing count (a live trace's samples, switches, a pool's events) as a window asks
// its computation for it: taken again at most once a second, so that a trace that
// grows is counted again once a second, not every frame.
class CountedOnceASecond {
 public:
  size_t Update(size_t count) {
    const auto now = std::chrono::steady_clock::now();
    if (count != seen_ && now - counted_ >= std::chrono::seconds(1)) {
      seen_ = count;
      counted_ = now;
    }
    return seen_;
  }
  size_t value() const { return seen_; }

 private:
  size_t seen_ = 0;
  std::chrono::steady_clock::time_point counted_{};
};

// A bar per count, scaled to `tallest`, over `size` pixels (x negative: the width left).
// A drag across the bars selects a range of bins (kept in `selection`, inclusive); a
// click without a drag clears it. Returns the bin under the mouse, if any. `bars`, when
// given, gets each bar's rectangle (screen pixels) for reports.
struct HistogramBar {
  float x0, y0, x1, y1;
  uint64_t count;
};
// With `overlay`, nothing is painted under the bars: a second histogram drawn over a
// first at the same place shows both.
std::optional<size_t> Histogram(const char* id, const std::vector<uint64_t>& counts, uint64_t tallest,
                                ImVec2 size, uint32_t color,
                                std::optional<std::pair<size_t, size_t>>* selection = nullptr,
                                std::vector<HistogramBar>* bars = nullptr, uint32_t selected_color = 0,
                                bool overlay = false);

// Builds the JSON a window reports of itself: {"key": value, ...}.
class JsonReport {
 public:
  JsonReport& Add(const char* key, double value);
  JsonReport& Add(const char* key, const std::string& value);
  JsonReport& AddRaw(const char* key, const std::string& json);  // an array or object
  JsonReport& AddBars(const char* key, const std::vector<HistogramBar>& bars);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void Key(const char* key);
  std::string body_;
};

}  // namespace gnomon::viewer
