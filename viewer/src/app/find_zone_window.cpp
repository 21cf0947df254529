#include "find_zone_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gnomon/server/text.h"
#include "gnomon/viewer/timeline.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kBins = 80;
constexpr size_t kMaxResults = 200;
constexpr uint32_t kBarColor = IM_COL32(90, 150, 230, 255);
constexpr uint32_t kPickedColor = IM_COL32(250, 200, 80, 255);

std::string Duration(double ns) { return server::FormatDuration(ns); }

std::string ThreadName(const server::TraceModel& model, uint32_t thread_id) {
  return Timeline::Name(model, {LaneKind::kThread, thread_id});
}

// F3: the GLFW backend gives ImGui its keys by GLFW's codes (GLFW_KEY_F3).
constexpr int kF3 = 292;

// Selects and shows the next (or previous) occurrence after (before) the view's middle.
void StepOccurrence(const ZoneOccurrences& found, Workspace& ws, bool forward) {
  const std::vector<Occurrence>& items = found.items;
  // From the middle of the view: after jumping to one occurrence, its middle is there.
  const int64_t center = ws.view.begin_ns() + (ws.view.end_ns() - ws.view.begin_ns()) / 2;
  // Chosen by middle alone, so that occurrences overlapping on other threads each come
  // in turn.
  auto middle = [](const Occurrence& o) { return o.begin_ns + o.duration_ns / 2; };
  const Occurrence* chosen = nullptr;
  for (const Occurrence& o : items) {
    if (forward && middle(o) > center + 1 && (chosen == nullptr || middle(o) < middle(*chosen))) chosen = &o;
    if (!forward && middle(o) < center - 1 && (chosen == nullptr || middle(o) > middle(*chosen))) chosen = &o;
  }
  if (chosen == nullptr) return;
  if (chosen->index != Occurrence::kNotHeld) {
    ws.selected = Selection{
        chosen->lane, chosen->lane.kind == LaneKind::kGpu ? DrawItem::Kind::kGpuZone : DrawItem::Kind::kZone,
        chosen->index};
  } else {
    ws.selected.reset();  // read from the file: nothing held to select
  }
  ws.JumpTo(chosen->begin_ns, chosen->begin_ns + chosen->duration_ns);
}

}  // namespace

void FindZoneWindow::Reset() {
  job_.Reset();
  has_query_ = false;
  bins_.reset();
  rows_generation_ = UINT64_MAX;
  searched_.clear();
}

void FindZoneWindow::SearchFor(const std::string& text) {
  std::snprintf(search_, sizeof(search_), "%s", text.c_str());
  pick_first_result_ = true;
  open = true;
}

void FindZoneWindow::DrawSearch(const server::TraceModel& model) {
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##search", "search zones by name", search_, sizeof(search_));
  if (searched_ != search_ || searched_locations_ != model.source_locations.size()) {
    searched_ = search_;
    searched_locations_ = model.source_locations.size();
    results_ = SearchLocations(model, searched_, kMaxResults);
  }
  if (pick_first_result_ && !results_.empty()) {
    query_ = {results_[0].location, results_[0].is_gpu()};
    has_query_ = true;
    pick_first_result_ = false;
    try_other_kind_ = true;
  }
  ImGui::BeginChild("results", ImVec2(0, 0), true);
  for (const LocationMatch& match : results_) {
    const uint32_t location = match.location;
    const server::SourceLocation& l = model.Location(location);
    ImGui::PushID(int(location));
    const bool chosen = has_query_ && query_.location == location;
    const std::string label = l.name + (match.is_gpu() ? "  (GPU)" : "");
    if (ImGui::Selectable(FitText(label, ImGui::GetContentRegionAvail().x).c_str(), chosen)) {
      query_ = {location, match.is_gpu()};
      has_query_ = true;
      try_other_kind_ = true;
      bins_.reset();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n%s", l.name.c_str(), l.ShortLabel().c_str());
    ImGui::PopID();
  }
  if (results_.empty()) ImGui::TextDisabled("no zone matches");
  ImGui::EndChild();
}

void FindZoneWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  if (ws.find_request) {
    query_ = {ws.find_request->location, ws.find_request->gpu};
    has_query_ = true;
    bins_.reset();
    open = true;
    ws.find_request.reset();
  }
  ws.find_highlight.reset();  // set again below while the window shows occurrences
  if (!open) return;
  ws.Place("Find zone");
  if (!ImGui::Begin("Find zone", &open)) {
    ImGui::End();
    return;
  }
  // CPU zones not held are read from the file again; GPU zones are held all the same.
  if (!model.zones_held && ws.session->path().empty()) SayZonesNotHeld(false);
  ImGui::BeginChild("search", ImVec2(Scaled(220), 0));
  DrawSearch(model);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("found", ImVec2(0, 0));
  if (!has_query_) {
    ImGui::TextDisabled("type a name, then pick a zone on the left");
  } else {
    bool gpu = query_.gpu;
    if (ImGui::RadioButton("CPU", !gpu)) gpu = false;
    ImGui::SameLine();
    if (ImGui::RadioButton("GPU", gpu)) gpu = true;
    ImGui::SameLine();
    ImGui::Checkbox("selected range only", &limit_to_range_);
    if (gpu != query_.gpu) {
      bins_.reset();
      try_other_kind_ = false;  // the user chose
    }
    ZoneQuery query{query_.location, gpu};
    if (limit_to_range_ && ws.range) {
      query.begin_ns = ws.range->first;
      query.end_ns = ws.range->second;
    }
    query_ = {query.location, gpu};
    Session* session = ws.session;
    const bool from_file = !model.zones_held && !gpu && !session->path().empty();
    if (from_file && session->is_loading()) {
      ImGui::TextDisabled("the zones are not held: they are read from the file once it has loaded");
      ImGui::EndChild();
      ImGui::End();
      return;
    }
    job_.Request(query, [session, query, from_file] {
      auto found = std::make_shared<ZoneOccurrences>();
      if (from_file) {
        auto read = session->FindZonesInFile(
            {.location = query.location, .begin_ns = query.begin_ns, .end_ns = query.end_ns});
        if (read.ok()) {
          *found = OccurrencesFromFile(read.value(), query);
        } else {
          found->query = query;
          found->from_file = true;
          found->file_note = "reading the zones from the file failed: " + read.status().message();
        }
      } else {
        session->WithModel([&](const server::TraceModel& m) { *found = FindOccurrences(m, query); });
      }
      return std::shared_ptr<const ZoneOccurrences>(std::move(found));
    });
    const auto* result = job_.result();
    const ZoneOccurrences* found = result != nullptr ? result->get() : nullptr;
    if (found != nullptr) ws.find_highlight = Workspace::FindHighlight{*result, {}};
    // N and Shift+N (or F3 and Shift+F3): the next and previous occurrence on the timeline.
    if (found != nullptr && !ImGui::GetIO().WantTextInput &&
        (ImGui::IsKeyPressed('N') || ImGui::IsKeyPressed(kF3)))
      StepOccurrence(*found, ws, !ImGui::GetIO().KeyShift);
    if (found != nullptr && try_other_kind_ && !job_.is_busy() && job_.result_key() != nullptr &&
        *job_.result_key() == query) {
      // The search guessed the kind from a sample; none of it: the other kind, once.
      try_other_kind_ = false;
      // (A failed read of the file says why, not the other kind.)
      if (found->items.empty() && found->file_note.empty()) query_.gpu = !query_.gpu;
    }
    if (found != nullptr) {
      DrawOccurrences(model, ws, *found);
    } else {
      ImGui::TextDisabled("finding...");
    }
  }
  ImGui::EndChild();
  ImGui::End();
}

FindZoneWindow::HistogramAxis FindZoneWindow::DrawHistogramAxis(const DurationHistogram& histogram,
                                                                const DurationSpread& spread) {
  // The histogram just drawn: markers over it, and its time axis under it.
  const ImVec2 at = ImGui::GetItemRectMin(), end = ImGui::GetItemRectMax();
  const float width = end.x - at.x;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  HistogramAxis axis;
  auto marker = [&](double ns, uint32_t color) {
    const float x = at.x + float(std::clamp(histogram.Fraction(ns), 0.0, 1.0)) * width;
    draw->AddLine(ImVec2(x, at.y), ImVec2(x, end.y), color, 2.0f);
    return x;
  };
  axis.mean_x = marker(spread.mean_ns, kMeanColor);
  axis.median_x = marker(double(spread.Percentile(0.5)), kMedianColor);
  // Five labels: the shortest, the longest, and three between (on the histogram's scale).
  const float text_height = ImGui::GetTextLineHeight();
  axis.labels_json = "[";
  for (int k = 0; k <= 4; ++k) {
    const double ns = histogram.EdgeNs(size_t(std::llround(double(histogram.counts.size()) * k / 4.0)));
    const std::string label = Duration(ns);
    const float label_width = ImGui::CalcTextSize(label.c_str()).x;
    const float x = std::clamp(at.x + width * float(k) / 4 - label_width / 2, at.x, end.x - label_width);
    draw->AddLine(ImVec2(at.x + width * float(k) / 4, end.y), ImVec2(at.x + width * float(k) / 4, end.y + 3),
                  IM_COL32(150, 150, 155, 255));
    draw->AddText(ImVec2(x, end.y + 3), IM_COL32(170, 170, 175, 255), label.c_str());
    axis.labels_json += (k > 0 ? ",\"" : "\"") + label + "\"";
  }
  axis.labels_json += "]";
  ImGui::Dummy(ImVec2(width, text_height + 4));
  return axis;
}

void FindZoneWindow::DrawOccurrences(const server::TraceModel& model, Workspace& ws,
                                     const ZoneOccurrences& found) {
  const server::SourceLocation& location = model.Location(found.query.location);
  ImGui::Text("%s  (%s)%s", location.name.c_str(), location.ShortLabel().c_str(),
              job_.is_busy() ? "  updating..." : "");
  const DurationSpread& spread = found.Of(self_);
  ImGui::PushTextWrapPos(0);
  if (found.from_file && found.items.size() < found.count) {
    ImGui::TextDisabled(
        "Read from the file (the zones are not held: --memory-limit): every zone in the figures and the "
        "histogram (percentiles within 1/128); the %zu longest listed, grouped and outlined.",
        found.items.size());
  } else if (found.from_file) {
    ImGui::TextDisabled("Read from the file (the zones are not held: --memory-limit).");
  }
  ImGui::PopTextWrapPos();
  if (!found.file_note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 180, 80, 255));
    ImGui::TextWrapped("%s", found.file_note.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::Text("%llu occurrences   %s: total %s   mean %s   std dev %s   median %s   p90 %s   p99 %s",
              static_cast<unsigned long long>(found.count), self_ ? "self time" : "duration",
              Duration(double(spread.total_ns)).c_str(), Duration(spread.mean_ns).c_str(),
              Duration(spread.stddev_ns).c_str(), Duration(double(spread.Percentile(0.5))).c_str(),
              Duration(double(spread.Percentile(0.9))).c_str(),
              Duration(double(spread.Percentile(0.99))).c_str());
  if (found.items.empty()) return;

  bool log = scale_ == HistogramScale::kLog;
  if (ImGui::Checkbox("log scale", &log)) bins_.reset();
  scale_ = log ? HistogramScale::kLog : HistogramScale::kLinear;
  ImGui::SameLine();
  if (ImGui::Checkbox("self time", &self_)) bins_.reset();
  ImGui::SameLine();
  ImGui::TextColored(ImColor(kMeanColor), "| mean");
  ImGui::SameLine();
  ImGui::TextColored(ImColor(kMedianColor), "| median");
  const DurationHistogram histogram = MakeHistogram(spread, kBins, scale_);
  std::vector<HistogramBar> bars;
  const auto hovered = Histogram("##histogram", histogram.counts, histogram.tallest, ImVec2(-1, Scaled(90)),
                                 kBarColor, &bins_, &bars, kPickedColor);
  const HistogramAxis axis = DrawHistogramAxis(histogram, spread);
  if (hovered) {
    ImGui::SetTooltip("%s .. %s: %llu", Duration(histogram.EdgeNs(*hovered)).c_str(),
                      Duration(histogram.EdgeNs(*hovered + 1)).c_str(),
                      static_cast<unsigned long long>(histogram.counts[*hovered]));
  }
  OccurrenceFilter filter;
  filter.self = self_;
  if (bins_) {
    filter.min_ns = int64_t(std::floor(histogram.EdgeNs(bins_->first)));
    filter.max_ns = bins_->second + 1 >= histogram.counts.size()
                        ? INT64_MAX
                        : int64_t(std::ceil(histogram.EdgeNs(bins_->second + 1)));
    ImGui::Text("durations %s .. %s (drag on the histogram; click to clear)",
                Duration(double(filter.min_ns)).c_str(),
                filter.max_ns == INT64_MAX ? Duration(double(histogram.max_ns)).c_str()
                                           : Duration(double(filter.max_ns)).c_str());
  } else {
    ImGui::Text("%s .. %s, %s (drag on the histogram to choose durations)",
                Duration(double(histogram.min_ns)).c_str(), Duration(double(histogram.max_ns)).c_str(),
                log ? "log scale" : "linear");
  }
  ImGui::SetNextItemWidth(Scaled(140));
  ImGui::Combo("##grouping", &grouping_, "no groups\0by thread\0by parent\0");

  const uint64_t generation = job_.result_generation();
  if (ws.find_highlight) ws.find_highlight->strong = filter;
  const bool stale = generation != rows_generation_ || filter.min_ns != rows_filter_.min_ns ||
                     filter.max_ns != rows_filter_.max_ns || order_ != rows_order_ ||
                     grouping_ != rows_grouping_;
  if (stale) {
    rows_ = SelectOccurrences(found, filter, order_);
    groups_.clear();
    if (grouping_ != 0) {
      groups_ = GroupOccurrences(found, filter,
                                 grouping_ == 1 ? OccurrenceGrouping::kThread : OccurrenceGrouping::kParent);
    }
    rows_generation_ = generation;
    rows_filter_ = filter;
    rows_order_ = order_;
    rows_grouping_ = grouping_;
  }

  JsonReport report;
  report.Add("location", location.name)
      .Add("occurrences", double(found.count))
      .Add("listed", double(found.items.size()))
      .Add("from_file", found.from_file ? 1.0 : 0.0)
      .Add("rows", double(rows_.size()));
  report.Add("p50_ns", double(spread.Percentile(0.5)))
      .Add("p99_ns", double(spread.Percentile(0.99)))
      .Add("self", double(self_))
      .Add("mean_ns", spread.mean_ns)
      .Add("stddev_ns", spread.stddev_ns)
      .Add("mean_x", axis.mean_x)
      .Add("median_x", axis.median_x)
      .AddRaw("axis", axis.labels_json);
  report.AddBars("bars", bars);
  ws.reports["find-zone"] = report.str();

  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                     ImGuiTableFlags_Borders | ImGuiTableFlags_Resizable |
                                     ImGuiTableFlags_SizingFixedFit;
  if (grouping_ != 0) {
    if (ImGui::BeginTable("groups", 4, kFlags)) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn(grouping_ == 1 ? "Thread" : "Parent", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableSetupColumn("Count");
      ImGui::TableSetupColumn("Total");
      ImGui::TableSetupColumn("Mean");
      ImGui::TableHeadersRow();
      for (const OccurrenceGroup& g : groups_) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        TextCell(grouping_ == 1 ? ThreadName(model, g.key)
                 : g.key == 0   ? std::string("(top level)")
                                : model.Location(g.key).name);
        ImGui::TableNextColumn();
        ImGui::Text("%llu", static_cast<unsigned long long>(g.count));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(double(g.total_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(g.mean_ns).c_str());
      }
      ImGui::EndTable();
    }
    return;
  }
  if (ImGui::BeginTable("occurrences", 4, kFlags | ImGuiTableFlags_Sortable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Start", ImGuiTableColumnFlags_DefaultSort);
    ImGui::TableSetupColumn("Duration", ImGuiTableColumnFlags_PreferSortDescending);
    ImGui::TableSetupColumn("Thread");
    ImGui::TableSetupColumn("Parent", ImGuiTableColumnFlags_WidthStretch | ImGuiTableColumnFlags_NoSort);
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs();
        sort && sort->SpecsDirty && sort->SpecsCount > 0) {
      order_ = sort->Specs[0].ColumnIndex == 1   ? OccurrenceOrder::kDuration
               : sort->Specs[0].ColumnIndex == 2 ? OccurrenceOrder::kThread
                                                 : OccurrenceOrder::kStart;
      sort->SpecsDirty = false;
    }
    ImGuiListClipper clipper;
    clipper.Begin(int(rows_.size()));
    while (clipper.Step()) {
      for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
        const Occurrence& o = found.items[rows_[size_t(row)]];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::PushID(row);
        if (ImGui::Selectable(FormatTime(o.begin_ns).c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) {
          ws.JumpTo(o.begin_ns, o.begin_ns + o.duration_ns);
          if (o.index != Occurrence::kNotHeld) {
            ws.selected = Selection{
                o.lane, found.query.gpu ? DrawItem::Kind::kGpuZone : DrawItem::Kind::kZone, o.index};
          } else {
            ws.selected.reset();
          }
        }
        ImGui::PopID();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Duration(double(o.duration_ns)).c_str());
        ImGui::TableNextColumn();
        TextCell(ThreadName(model, o.thread_id));
        ImGui::TableNextColumn();
        TextCell(o.parent == 0 ? std::string("(top level)") : model.Location(o.parent).name);
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace gnomon::viewer
