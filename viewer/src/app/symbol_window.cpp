#include "symbol_window.h"

#include <imgui.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "gnomon/server/text.h"
#include "widgets.h"

namespace gnomon::viewer {
namespace {

constexpr size_t kHottestListed = 5;
constexpr size_t kReportedInstructions = 2000;

std::string Offset(uint64_t offset) {
  char text[24];
  std::snprintf(text, sizeof(text), "+0x%" PRIx64, offset);
  return text;
}

std::string Address(uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, address);
  return text;
}

}  // namespace

void SymbolWindow::Draw(const server::TraceModel& model, Workspace& ws) {
  ws.Place("Symbol");
  if (!ImGui::Begin("Symbol", &open)) {
    ImGui::End();
    return;
  }
  if (name_.empty() || model.samples.size() == 0) {
    ImGui::TextDisabled(model.samples.size() == 0
                            ? "no samples in this trace: run the program with GNOMON_SAMPLING_HZ=1000"
                            : "open a sampled function's code from Samples (a click on its name)");
    ws.reports["symbol"] = JsonReport().Add("instructions", 0).Add("samples", 0).str();
    ImGui::End();
    return;
  }
  // Counted again once a second while a live trace grows.
  const size_t samples_seen = samples_.Update(model.samples.size());
  Query query{.name = name_, .filter = {}, .samples = samples_seen};
  ws.LimitToRange(model, limit_to_range_, query.filter);
  Session* session = ws.session;
  auto symbolizer = symbolizer_;
  job_.Request(query, [session, query, symbolizer] {
    server::Disassembly code;
    session->WithModel([&](const server::TraceModel& m) {
      code = server::DisassembleSampledFunction(m, *symbolizer, query.name, query.filter);
    });
    return code;
  });
  const server::Disassembly* code = job_.result();
  if (code == nullptr) {
    ImGui::TextDisabled("disassembling %s...", server::Printable(name_).c_str());
    ImGui::End();
    return;
  }
  ImGui::TextUnformatted(server::Printable(code->function.empty() ? name_ : code->function).c_str());
  if (!code->module.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("in %s at %s", code->module.c_str(), Address(code->start).c_str());
  }
  ImGui::Checkbox("selected range only", &limit_to_range_);
  if (job_.is_busy()) {
    ImGui::SameLine();
    ImGui::TextDisabled("updating...");
  }
  if (!code->error.empty()) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "%s", code->error.c_str());
  ImGui::Text("%zu instruction(s), %llu sample(s) in them", code->instructions.size(),
              static_cast<unsigned long long>(code->samples));
  // The hottest instructions: a click scrolls there.
  std::vector<size_t> hottest;
  for (size_t i = 0; i < code->instructions.size(); ++i) {
    if (code->instructions[i].samples > 0) hottest.push_back(i);
  }
  std::stable_sort(hottest.begin(), hottest.end(), [&](size_t a, size_t b) {
    return code->instructions[a].samples > code->instructions[b].samples;
  });
  if (hottest.size() > kHottestListed) hottest.resize(kHottestListed);
  std::optional<size_t> scroll_to;
  // A function shown for the first time opens at its hottest instruction.
  if (shown_ != code->function + "@" + std::to_string(code->start)) {
    shown_ = code->function + "@" + std::to_string(code->start);
    if (!hottest.empty()) scroll_to = hottest[0];
  }
  if (!hottest.empty()) {
    ImGui::TextUnformatted("hottest:");
    for (size_t i : hottest) {
      ImGui::SameLine();
      const server::DisassembledInstruction& in = code->instructions[i];
      const std::string label = Offset(in.address - code->start) + " " + Percent(in.samples, code->samples);
      if (ImGui::SmallButton(label.c_str())) scroll_to = i;
    }
  }
  if (ImGui::BeginTable("instructions", 4,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Offset", ImGuiTableColumnFlags_WidthFixed,
                            ImGui::CalcTextSize("+0x00000").x + Scaled(8));
    ImGui::TableSetupColumn("Self", ImGuiTableColumnFlags_WidthFixed,
                            ImGui::CalcTextSize("100.0%").x + Scaled(8));
    ImGui::TableSetupColumn("Instruction", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("Source", ImGuiTableColumnFlags_WidthStretch, 1.0f);
    ImGui::TableHeadersRow();
    const float row_height = ImGui::GetTextLineHeightWithSpacing();
    if (scroll_to)
      ImGui::SetScrollY(std::max(0.0f, float(*scroll_to) * row_height - ImGui::GetWindowHeight() / 3));
    ImGuiListClipper clipper;
    clipper.Begin(int(code->instructions.size()), row_height);
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
        const server::DisassembledInstruction& in = code->instructions[size_t(r)];
        ImGui::TableNextRow();
        if (in.samples > 0) {
          // The share shaded in, so hot spots show at a glance.
          const double share = double(in.samples) / double(std::max<uint64_t>(code->samples, 1));
          ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(210, 100, 30, 50 + int(170.0 * share)));
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Offset(in.address - code->start).c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", Address(in.address).c_str());
        ImGui::TableNextColumn();
        if (in.samples > 0) ImGui::TextUnformatted(Percent(in.samples, code->samples).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(in.text.c_str());
        ImGui::TableNextColumn();
        if (!in.file.empty()) {
          const std::string where = in.file.substr(in.file.rfind('/') + 1) + ":" + std::to_string(in.line);
          TextCell(where);
          // A click opens the line in Source.
          if (ImGui::IsItemClicked()) ws.show_source = std::make_pair(in.file, in.line);
        }
      }
    }
    ImGui::EndTable();
  }
  std::string instructions = "[";
  for (size_t i = 0; i < std::min(code->instructions.size(), kReportedInstructions); ++i) {
    const server::DisassembledInstruction& in = code->instructions[i];
    instructions += (i == 0 ? "" : ",") + JsonReport()
                                              .Add("address", double(in.address))
                                              .Add("text", in.text)
                                              .Add("line", double(in.line))
                                              .Add("samples", double(in.samples))
                                              .str();
  }
  ws.reports["symbol"] = JsonReport()
                             .Add("function", code->function)
                             .Add("module", code->module)
                             .Add("error", code->error)
                             .Add("instructions", double(code->instructions.size()))
                             .Add("samples", double(code->samples))
                             .AddRaw("listed", instructions + "]")
                             .str();
  ImGui::End();
}

}  // namespace gnomon::viewer
