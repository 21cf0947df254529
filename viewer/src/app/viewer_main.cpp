// gnomon-viewer: the desktop viewer (Dear ImGui on GLFW and OpenGL 3).
//
//   gnomon-viewer [FILE | HOST[:PORT]] [--size WxH] [--show LIST] [--select A:B]
//                 [--compare FILE2] [--frames N --screenshot OUT.png] [--layout-dump OUT.json]
//
// --frames renders N frames and exits (with --screenshot: a PNG of the last frame,
// read back with glReadPixels), once the trace has loaded and every window has computed;
// --layout-dump writes the timeline's lanes and items, in window coordinates, and what
// each side window drew, for tests that check the screenshot against them.
//
// The loop waits for input when nothing changes (an idle viewer costs no CPU), and keys
// go through an InputQueue so that no quick tap is lost.
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app.h"
#include "config_dir.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/export_filter.h"
#include "gnomon/server/text.h"
#include "input_queue.h"
#include "session.h"
#include "widgets.h"

namespace {

constexpr unsigned kGlRgba = 0x1908;
constexpr unsigned kGlUnsignedByte = 0x1401;
constexpr unsigned kGlColorBufferBit = 0x4000;

gnomon::viewer::App* g_app = nullptr;

constexpr const char* kKeyNames =
    "left, right, up, down, h, f, t, z, n, f3, backspace, escape, equal, minus, 0, each with shift+, alt+ "
    "or ctrl+ before it if wanted";

// A key to tap, with the modifier held around it (GLFW_KEY_UNKNOWN: none).
struct Tap {
  int modifier = GLFW_KEY_UNKNOWN;
  int key = GLFW_KEY_UNKNOWN;
};

Tap KeyNamed(std::string name) {
  static const std::pair<const char*, int> kKeys[] = {{"left", GLFW_KEY_LEFT},
                                                      {"right", GLFW_KEY_RIGHT},
                                                      {"up", GLFW_KEY_UP},
                                                      {"down", GLFW_KEY_DOWN},
                                                      {"h", GLFW_KEY_H},
                                                      {"f", GLFW_KEY_F},
                                                      {"t", GLFW_KEY_T},
                                                      {"z", GLFW_KEY_Z},
                                                      {"n", GLFW_KEY_N},
                                                      {"f3", GLFW_KEY_F3},
                                                      {"backspace", GLFW_KEY_BACKSPACE},
                                                      {"escape", GLFW_KEY_ESCAPE},
                                                      {"equal", GLFW_KEY_EQUAL},
                                                      {"minus", GLFW_KEY_MINUS},
                                                      {"0", GLFW_KEY_0}};
  Tap tap;
  for (const auto& [prefix, modifier] : {std::pair{"shift+", GLFW_KEY_LEFT_SHIFT},
                                         {"alt+", GLFW_KEY_LEFT_ALT},
                                         {"ctrl+", GLFW_KEY_LEFT_CONTROL}}) {
    if (name.starts_with(prefix)) {
      tap.modifier = modifier;
      name = name.substr(std::string_view(prefix).size());
    }
  }
  for (const auto& [key_name, key] : kKeys) {
    if (name == key_name) tap.key = key;
  }
  return tap;
}

// A scripted mouse action (--mouse): frame by frame, where the mouse is and whether the
// left button is down; after the last step the button stays up and the mouse there.
struct MouseScript {
  struct Step {
    float x, y;
    bool down;
  };
  std::vector<Step> steps;
  size_t frame = 0;
  bool active = false;
};

// "click@X,Y", "double-click@X,Y", "hover@X,Y" or "drag@X,Y,X2,Y2"; false when it is
// none of them.
bool ParseMouse(const std::string& text, MouseScript& script) {
  const size_t at = text.find('@');
  if (at == std::string::npos) return false;
  const std::string action = text.substr(0, at);
  std::vector<float> numbers;
  const char* p = text.c_str() + at + 1;
  while (true) {
    char* end = nullptr;
    numbers.push_back(std::strtof(p, &end));
    if (end == p || !std::isfinite(numbers.back())) return false;
    if (*end == '\0') break;
    if (*end != ',') return false;
    p = end + 1;
  }
  if (numbers.size() != (action == "drag" ? 4u : 2u)) return false;
  const float x = numbers[0], y = numbers[1];
  if (action == "hover") {
    script.steps = {{x, y, false}};
  } else if (action == "click") {
    script.steps = {{x, y, true}, {x, y, false}};
  } else if (action == "double-click") {
    script.steps = {{x, y, true}, {x, y, false}, {x, y, true}, {x, y, false}};
  } else if (action == "drag") {  // pressed, moved there over 8 frames, released
    constexpr int kMoves = 8;
    script.steps = {{x, y, true}};
    for (int k = 1; k <= kMoves; ++k) {
      const float t = float(k) / kMoves;
      script.steps.push_back({x + (numbers[2] - x) * t, y + (numbers[3] - y) * t, true});
    }
    script.steps.push_back({numbers[2], numbers[3], false});
  } else {
    return false;
  }
  // The mouse first rests there for two frames, as a hand does before it presses: what
  // was still settling as the trace appeared (a strip scrolling to its tab) has settled.
  if (action != "hover") script.steps.insert(script.steps.begin(), 2, {x, y, false});
  return true;
}

void OnDrop(GLFWwindow*, int count, const char** paths) {
  if (count > 0 && g_app != nullptr) g_app->Open(paths[0]);
}

void Usage(FILE* out) {
  std::fprintf(
      out,
      "Usage: gnomon-viewer [FILE | HOST[:PORT]] [--size WxH] [--scale S] [--show LIST] [--select A:B]\n"
      "                     [--compare FILE2] [--all-windows] [--counters] [--range A:B] [--program K]\n"
      "                     [--frames N] [--screenshot OUT.png] [--layout-dump OUT.json]\n"
      "                     [--frame-target FPS] [--frame-series NAME] [--wait] [--library-threads]\n"
      "                     [--zoom-to NAME[#N]] [--annotations F] [--keys LIST] [--mouse ACTION@X,Y] "
      "[--keep-settings]\n"
      "                     [--hide-lanes LIST] [--sort-lanes name|busiest] [--color-by KIND]\n"
      "                     [--memory-limit SIZE]\n"
      "\n"
      "Opens a Gnomon trace file, or connects to a running program (default port %u).\n"
      "Without an argument, a start window asks which. Drop a .gnomon file on the window\n"
      "to open it.\n"
      "\n"
      "Timeline: wheel zooms around the cursor, drag pans, shift+wheel scrolls lanes,\n"
      "arrows pan, up/down or =/- zoom, H fits the whole trace, F follows live data;\n"
      "click a zone for details (double-click zooms to it), a frame bar to zoom to that\n"
      "frame, Z zooms to the selected range; Backspace (or Alt+left, or the mouse's back\n"
      "button) goes back to the view before, Shift+Backspace (Alt+right) forward again;\n"
      "with Find zone open, N and Shift+N (F3, Shift+F3) show the next and previous\n"
      "occurrence; hovering a zone outlines every zone of its location in view; a lane title to\n"
      "collapse it (right-click hides it; the Lanes menu shows it again), drag a lane title to\n"
      "move the lane; drag with the right button (or shift+drag) to select a time range,\n"
      "right-click to clear it. The Lanes menu also sorts the lanes, hides groups of them and\n"
      "chooses what the zones' colours tell.\n"
      "Side windows open in tiles below the timeline and can be moved and resized freely\n"
      "(their places are kept); T puts them all back in their tiles. Ctrl+= and Ctrl+-\n"
      "change the interface scale (Ctrl+0: the monitor's; View > Interface scale).\n"
      "\n"
      "  --size WxH        window size (default 1400x900)\n"
      "  --scale S         interface scale (default: the monitor's content scale)\n"
      "  --show LIST       open these windows (comma-separated): statistics, find-zone=NAME\n"
      "                    (find-zone-self=NAME: its self times), trace-info, annotations,\n"
      "                    flame-graph, frame-histogram, gpu-clocks, messages, memory\n"
      "                    (memory-tree=POOL: the pool's allocations by call stack;\n"
      "                    memory-map=POOL: its blocks' addresses over time;\n"
      "                    memory-address=ADDRESS: the blocks that held it),\n"
      "                    samples (samples=flame: its flame graph), source=FILE:LINE (a\n"
      "                    file's lines with their samples), symbol=NAME (a sampled\n"
      "                    function's machine code), cpu-data (the threads' use of the\n"
      "                    CPUs, and the cores' lanes), callstack (of the\n"
      "                    longest zone), compare, debug\n"
      "  --select A:B      select milliseconds A to B, or with units (4.5s:5s; ns, us, ms, s,\n"
      "                    min): windows can limit themselves to it\n"
      "  --compare FILE2   compare the trace with FILE2 (the compare window)\n"
      "  --all-windows     open the statistics, messages, GPU clocks and debug windows\n"
      "  --counters        a lane for every GPU counter (the Lanes menu chooses them), and\n"
      "                    the first counted GPU zone in view selected\n"
      "  --range A:B       show milliseconds A to B of the trace (or with units, as --select)\n"
      "  --program K       of a file of several programs (a capture of several, a merged\n"
      "                    trace), show the K-th (default 1; the Program menu picks another)\n"
      "  --wait            with HOST:PORT: where nothing listens yet, keep trying until a program\n"
      "                    does (without it, the viewer says so at once)\n"
      "  --library-threads lanes for Gnomon's own threads too (its sampler, the CUDA collector;\n"
      "                    hidden by default, the Lanes menu shows them)\n"
      "  --source-map OLD=NEW the Source window reads a file recorded under folder OLD from\n"
      "                    NEW (the trace was built elsewhere); repeat for more folders\n"
      "  --hide-lanes LIST hide these groups of lanes (comma-separated: library, gpu, plots,\n"
      "                    memory, locks, cpus), besides those the settings hide\n"
      "  --sort-lanes BY   once loaded, sort each kind of lane by name or busiest first (time\n"
      "                    in its outermost zones); the Lanes menu does it too\n"
      "  --color-by KIND   colour zones by location (default), thread, or duration (blue at\n"
      "                    1 us or less, red at the frame target and longer; log scale)\n"
      "  --frame-target FPS grade frames against FPS frames a second (default 60; kept in the\n"
      "                    settings; View > Frame target): within it green, within twice it\n"
      "                    yellow, longer red, in the frame strips and Frame times alike\n"
      "  --frame-series NAME the series Frame times shows (default: main)\n"
      "  --annotations F   keep the annotations in F (default: beside the trace, in\n"
      "                    FILE.annotations.json)\n"
      "  --annotate TEXT   once loaded, name the range --select chose TEXT (an annotation)\n"
      "  --zoom-to NAME[#N] once loaded, select the N-th zone named NAME (default the first, by\n"
      "                    start; CPU zones, else GPU ones) and zoom to it\n"
      "  --max-expansion N load file blocks that decompress to up to N times their size\n"
      "                    (default 1024; past it a block is a bomb or damage, and skipped)\n"
      "  --memory-limit SIZE the most memory a trace file's zones may take (512M, 2G; default\n"
      "                    an eighth of this machine's memory). A file whose zones need more\n"
      "                    opens all the same: its zones are counted as it loads, not held;\n"
      "                    the timeline draws each thread from an overview of them (a zone at\n"
      "                    least its resolution long as itself, shorter ones merged; Trace info\n"
      "                    says the resolution); zoomed in past it, the zones in view are read\n"
      "                    from the file again, and Statistics reads them all again\n"
      "                    (the whole trace; medians of over 4096 zones within 0.4 %%). Find\n"
      "                    zone, the flame graph, Compare, a zone's details and --zoom-to need\n"
      "                    the zones held: cut the part to look at with gnomon-cut, or raise\n"
      "                    the limit\n"
      "  --frames N        render N frames, then exit (for scripts and tests)\n"
      "  --screenshot F    with --frames: save the last frame as a PNG\n"
      "  --layout-dump F   with --frames: write the timeline layout and the windows' contents\n"
      "                    as JSON\n"
      "  --keys LIST       with --frames: once the trace is shown, tap these keys all at once\n"
      "                    (comma-separated: left, right, up, down, h, f, t, z, n, f3,\n"
      "                    backspace, escape, equal, minus, 0; shift+KEY, alt+KEY or ctrl+KEY\n"
      "                    with a modifier)\n"
      "  --mouse A@X,Y     with --frames: then click, double-click or hover at X,Y (window\n"
      "                    pixels) with the left button, and leave the mouse there;\n"
      "                    drag@X,Y,X2,Y2 presses at X,Y, moves to X2,Y2 and releases\n"
      "  --keep-settings   with --frames: read and write the settings as a normal run does\n"
      "\n"
      "The open windows and their places, the panel's height, the frame target, the groups of\n"
      "lanes hidden, the zones' colouring and the recent files are kept in\n"
      "$XDG_CONFIG_HOME/gnomon (~/.config/gnomon); scripted runs (--frames) neither read\n"
      "nor write them, unless --keep-settings.\n",
      unsigned{gnomon::protocol::kDefaultPort});
}

bool WriteScreenshot(const std::string& path, int width, int height) {
  using ReadPixels = void (*)(int, int, int, int, unsigned, unsigned, void*);
  auto read_pixels = reinterpret_cast<ReadPixels>(glfwGetProcAddress("glReadPixels"));
  if (read_pixels == nullptr) return false;
  std::vector<unsigned char> pixels(size_t(width) * size_t(height) * 4);
  read_pixels(0, 0, width, height, kGlRgba, kGlUnsignedByte, pixels.data());
  stbi_flip_vertically_on_write(1);
  return stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4) != 0;
}

void WriteLayout(const std::string& path, gnomon::viewer::App& app) {
  std::ofstream out(path);
  const ImVec2 o = app.timeline_origin();
  out << "{\"lanes\":[";
  bool first = true;
  for (const auto& lane : app.lanes()) {
    out << (first ? "" : ",") << "{\"title\":" << gnomon::server::JsonQuote(app.LaneTitle(lane))
        << ",\"kind\":" << int(lane.key.kind) << ",\"y\":" << o.y + lane.y << ",\"height\":" << lane.height
        << "}";
    first = false;
  }
  out << "],\"items\":[";
  const std::vector<std::string>& labels = app.ItemLabels();
  for (size_t i = 0; i < app.items().size(); ++i) {
    const auto& item = app.items()[i];
    out << (i == 0 ? "" : ",") << "{\"kind\":" << int(item.kind) << ",\"x0\":" << o.x + item.x0
        << ",\"y0\":" << o.y + item.y0 << ",\"x1\":" << o.x + item.x1 << ",\"y1\":" << o.y + item.y1
        << ",\"color\":" << item.color << ",\"count\":" << item.count
        << ",\"label\":" << gnomon::server::JsonQuote(i < labels.size() ? labels[i] : "") << "}";
  }
  auto rect = [&out](const gnomon::viewer::App::ScreenRect& r) {
    out << "{\"title\":" << gnomon::server::JsonQuote(r.title) << ",\"x0\":" << r.x0 << ",\"y0\":" << r.y0
        << ",\"x1\":" << r.x1 << ",\"y1\":" << r.y1 << "}";
  };
  out << "],\"view\":{\"begin_ns\":" << app.view().begin_ns() << ",\"end_ns\":" << app.view().end_ns() << "}";
  out << ",\"groups\":[";
  first = true;
  for (const auto& group : app.groups()) {
    out << (first ? "" : ",") << "{\"title\":" << gnomon::server::JsonQuote(group.title)
        << ",\"program\":" << group.program + 1 << ",\"collapsed\":" << (group.collapsed ? "true" : "false")
        << ",\"y\":" << o.y + group.header_y << ",\"lanes\":[";
    bool first_lane = true;
    for (const auto& lane : group.timeline.lanes()) {
      if (group.collapsed) break;
      out << (first_lane ? "" : ",")
          << "{\"title\":" << gnomon::server::JsonQuote(app.GroupLaneTitle(group, lane))
          << ",\"y\":" << o.y + lane.y << ",\"height\":" << lane.height << "}";
      first_lane = false;
    }
    out << "],\"items\":[";
    bool first_item = true;
    for (const auto& item : group.items) {
      out << (first_item ? "" : ",") << "{\"kind\":" << int(item.kind) << ",\"x0\":" << o.x + item.x0
          << ",\"x1\":" << o.x + item.x1 << ",\"y0\":" << o.y + item.y0
          << ",\"label\":" << gnomon::server::JsonQuote(item.label ? *item.label : "") << "}";
      first_item = false;
    }
    out << "]}";
    first = false;
  }
  out << "]";
  if (gnomon::viewer::Session* session = app.session()) {
    out << ",\"session\":{\"title\":" << gnomon::server::JsonQuote(session->title())
        << ",\"state\":" << gnomon::server::JsonQuote(session->StateText())
        << ",\"program\":" << session->program() + 1 << ",\"programs\":" << session->programs()
        << ",\"warning\":" << gnomon::server::JsonQuote(session->warning()) << ",\"clock_bound_ns\":";
    if (const auto bound = app.shown_clock_bound_ns()) {
      out << *bound;
    } else {
      out << "null";
    }
    out << "}";
  }
  out << ",\"timeline\":";
  rect(app.timeline_rect());
  out << ",\"side_windows\":[";
  first = true;
  for (const auto& r : app.side_window_rects()) {
    out << (first ? "" : ",");
    rect(r);
    first = false;
  }
  out << "],\"windows\":{";
  first = true;
  for (const auto& [name, json] : app.window_reports()) {
    out << (first ? "" : ",") << gnomon::server::JsonQuote(name) << ":" << json;
    first = false;
  }
  out << "}}\n";
}

// Milliseconds A:B as a trace-relative range in ns; false when the text is not that.
// "A:B" as gnomon-report and gnomon-cut take it (milliseconds, or each with its unit:
// 4.5s:5s), both ends given and B after A; "" when it parsed, else what is wrong.
std::string ParseRange(const std::string& text, int64_t& begin_ns, int64_t& end_ns) {
  gnomon::server::ExportFilter range;
  if (std::string error = range.ParseRange(text); !error.empty()) return error;
  if (range.begin_ns == gnomon::server::ExportFilter{}.begin_ns ||
      range.end_ns == gnomon::server::ExportFilter{}.end_ns)
    return "give both ends, A:B";
  if (range.end_ns <= range.begin_ns) return "the range ends where it begins";
  begin_ns = range.begin_ns;
  end_ns = range.end_ns;
  return "";
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// The interface font: DejaVu Sans (Debian's fonts-dejavu-core) at `scale`, or ImGui's
// own bitmap font when it is not installed.
void LoadFont(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  static const ImWchar kRanges[] = {0x0020, 0x00FF, 0x0100, 0x017F, 0x2000, 0x206F, 0x2190, 0x21FF, 0};
  for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                           "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed.ttf"}) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) continue;
    std::fclose(f);
    ImFontConfig config;
    config.OversampleH = 2;
    if (io.Fonts->AddFontFromFileTTF(path, 15.0f * scale, &config, kRanges) != nullptr) return;
  }
  ImFontConfig config;
  config.SizePixels = 13.0f * scale;
  io.Fonts->AddFontDefault(&config);
}

// The style and font for an interface `scale` (before the first frame, or between two).
void ApplyScale(float scale) {
  ImGuiStyle& style = ImGui::GetStyle();
  style = ImGuiStyle();
  ImGui::StyleColorsDark();
  style.Colors[ImGuiCol_WindowBg].w = 1.0f;  // windows over windows (decks) stay readable
  style.ScaleAllSizes(scale);
  gnomon::viewer::SetInterfaceScale(scale);
  ImGui::GetIO().Fonts->Clear();
  LoadFont(scale);
}

}  // namespace

int main(int argc, char** argv) {
  gnomon::viewer::App::Options options;
  options.memory_limit = gnomon::server::DefaultMemoryLimit();
  int width = 1400, height = 900, frames = -1;
  float scale = 0;       // 0: the monitor's
  uint32_t program = 0;  // of a file of several, the one shown
  std::string screenshot, layout_dump;
  std::vector<Tap> tap_keys;
  MouseScript mouse;
  bool keep_settings = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gnomon-viewer: %s needs a value\n", arg.c_str());
        std::exit(1);
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      Usage(stdout);
      return 0;
    } else if (arg == "--size") {
      if (std::sscanf(value().c_str(), "%dx%d", &width, &height) != 2 || width < 200 || height < 150) {
        std::fprintf(stderr, "gnomon-viewer: --size wants WxH, e.g. 1400x900\n");
        return 1;
      }
    } else if (arg == "--frames") {
      const auto n = gnomon::protocol::ParseUnsigned(value(), 1, 1000000);
      if (!n) {
        std::fprintf(stderr, "gnomon-viewer: --frames: %s\n", n.error.c_str());
        return 1;
      }
      frames = int(*n);
    } else if (arg == "--keys") {
      for (const std::string& name : SplitList(value())) {
        const Tap tap = KeyNamed(name);
        if (tap.key == GLFW_KEY_UNKNOWN) {
          std::fprintf(stderr, "gnomon-viewer: --keys: '%s' is not one of %s\n", name.c_str(), kKeyNames);
          return 1;
        }
        tap_keys.push_back(tap);
      }
    } else if (arg == "--keep-settings") {
      keep_settings = true;
    } else if (arg == "--screenshot") {
      screenshot = value();
    } else if (arg == "--layout-dump") {
      layout_dump = value();
    } else if (arg == "--range") {
      if (const std::string error = ParseRange(value(), options.range_begin_ns, options.range_end_ns);
          !error.empty()) {
        std::fprintf(stderr, "gnomon-viewer: --range: %s\n", error.c_str());
        return 1;
      }
    } else if (arg == "--select") {
      int64_t begin = 0, end = 0;
      if (const std::string error = ParseRange(value(), begin, end); !error.empty()) {
        std::fprintf(stderr, "gnomon-viewer: --select: %s\n", error.c_str());
        return 1;
      }
      options.select_ns = std::make_pair(begin, end);
    } else if (arg == "--show") {
      for (const std::string& name : SplitList(value())) {
        options.show.push_back(name);
        if (name == "callstack") options.select_longest_zone = true;  // a zone's stack to show
      }
      if (const std::string wrong = gnomon::viewer::App::CheckWindowNames(options.show); !wrong.empty()) {
        std::fprintf(stderr, "gnomon-viewer: --show: %s\n", wrong.c_str());
        return 1;
      }
    } else if (arg == "--compare") {
      options.compare = value();
      options.show.push_back("compare");
    } else if (arg == "--scale") {
      scale = std::strtof(value().c_str(), nullptr);
      if (!(scale >= 0.5f && scale <= 4.0f)) {
        std::fprintf(stderr, "gnomon-viewer: --scale wants a number from 0.5 to 4\n");
        return 1;
      }
    } else if (arg == "--program") {
      const auto n = gnomon::protocol::ParseUnsigned(value(), 1, gnomon::tracefile::kMaxTraceStreams);
      if (!n) {
        std::fprintf(stderr, "gnomon-viewer: --program: %s\n", n.error.c_str());
        return 1;
      }
      program = uint32_t(*n - 1);
    } else if (arg == "--max-expansion") {
      const auto n = gnomon::protocol::ParseUnsigned(value(), 1, UINT32_MAX);
      if (!n) {
        std::fprintf(stderr, "gnomon-viewer: --max-expansion: %s\n", n.error.c_str());
        return 1;
      }
      options.max_expansion = uint32_t(*n);
    } else if (arg == "--memory-limit") {
      const auto size = gnomon::protocol::ParseByteSize(value());
      if (!size) {
        std::fprintf(stderr, "gnomon-viewer: --memory-limit: %s\n", size.error.c_str());
        return 1;
      }
      options.memory_limit = *size;
    } else if (arg == "--frame-target") {
      const std::string fps = value();
      char* end = nullptr;
      options.frame_target_fps = std::strtod(fps.c_str(), &end);
      if (end == fps.c_str() || *end != '\0' ||
          !(options.frame_target_fps >= 1 && options.frame_target_fps <= 1000)) {
        std::fprintf(stderr,
                     "gnomon-viewer: --frame-target wants frames a second, from 1 to 1000 (e.g. 60)\n");
        return 1;
      }
    } else if (arg == "--wait") {
      options.wait = true;
    } else if (arg == "--library-threads") {
      options.library_threads = true;
    } else if (arg == "--source-map") {
      const std::string map = value();
      const size_t equals = map.find('=');
      if (equals == std::string::npos || equals == 0) {
        std::fprintf(
            stderr,
            "gnomon-viewer: --source-map: '%s' is not OLD=NEW (a folder where the trace was built, and "
            "where it is now)\n",
            map.c_str());
        return 1;
      }
      options.source_map.emplace_back(map.substr(0, equals), map.substr(equals + 1));
    } else if (arg == "--hide-lanes") {
      const std::string list = value();
      for (const std::string& name : SplitList(list)) {
        const auto* group = std::find_if(std::begin(gnomon::viewer::kLaneGroupNames),
                                         std::end(gnomon::viewer::kLaneGroupNames),
                                         [&](const auto& g) { return name == g.name; });
        if (group == std::end(gnomon::viewer::kLaneGroupNames)) {
          std::fprintf(stderr,
                       "gnomon-viewer: --hide-lanes: '%s' is not a group of lanes (library, gpu, plots, "
                       "memory, locks, cpus)\n",
                       name.c_str());
          return 1;
        }
        options.hide_lanes |= group->group;
      }
    } else if (arg == "--color-by") {
      const std::string name = value();
      for (const auto& known : gnomon::viewer::kZoneColorings) {
        if (name == known.name) options.zone_coloring = known.coloring;
      }
      if (!options.zone_coloring) {
        std::fprintf(stderr, "gnomon-viewer: --color-by: '%s' is not location, thread or duration\n",
                     name.c_str());
        return 1;
      }
    } else if (arg == "--sort-lanes") {
      const std::string by = value();
      if (by == "name") {
        options.sort_lanes = gnomon::viewer::LaneSort::kName;
      } else if (by == "busiest") {
        options.sort_lanes = gnomon::viewer::LaneSort::kBusiest;
      } else {
        std::fprintf(stderr, "gnomon-viewer: --sort-lanes: '%s' is not name or busiest\n", by.c_str());
        return 1;
      }
    } else if (arg == "--mouse") {
      const std::string action = value();
      if (!ParseMouse(action, mouse)) {
        std::fprintf(stderr,
                     "gnomon-viewer: --mouse: '%s' is not click@X,Y, double-click@X,Y, hover@X,Y "
                     "or drag@X,Y,X2,Y2 (window pixels)\n",
                     action.c_str());
        return 1;
      }
    } else if (arg == "--annotations") {
      options.annotations = value();
    } else if (arg == "--annotate") {
      options.annotate = value();
    } else if (arg == "--zoom-to") {
      std::string name = value();
      const size_t hash = name.rfind('#');
      if (hash != std::string::npos) {
        const auto n = gnomon::protocol::ParseUnsigned(name.substr(hash + 1), 1, UINT32_MAX);
        if (!n) {
          std::fprintf(stderr, "gnomon-viewer: --zoom-to NAME#N: %s\n", n.error.c_str());
          return 1;
        }
        options.zoom_to_number = size_t(*n);
        name.resize(hash);
      }
      options.zoom_to = name;
    } else if (arg == "--frame-series") {
      options.frame_series = value();
    } else if (arg == "--counters") {
      options.show_counters = true;
      options.select_longest_zone = true;  // a counted GPU zone, in the details window
    } else if (arg == "--all-windows") {
      options.show_all_windows = true;
      options.select_longest_zone = true;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "gnomon-viewer: unknown option %s\n\n", arg.c_str());
      Usage(stderr);
      return 1;
    } else {
      options.open = arg;
    }
  }

  // A trace file starts loading before the window opens, so the two overlap.
  std::unique_ptr<gnomon::viewer::Session> loading;
  std::string loading_path;
  if (std::error_code ec; !options.open.empty() && std::filesystem::is_regular_file(options.open, ec)) {
    loading_path = std::exchange(options.open, {});
    loading =
        gnomon::viewer::Session::OpenFile(loading_path, options.max_expansion, program, options.memory_limit);
  }

  if (!glfwInit()) {
    std::fprintf(stderr,
                 "gnomon-viewer: cannot open a window (no display? set DISPLAY, or run under Xvfb)\n");
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(width, height, "Gnomon", nullptr, nullptr);
  if (window == nullptr) {
    std::fprintf(stderr, "gnomon-viewer: cannot create an OpenGL 3.3 window\n");
    glfwTerminate();
    return 2;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(frames < 0 ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  options.keep_settings = frames < 0 || keep_settings;  // a scripted run is the same every time
  options.keep_item_labels = !layout_dump.empty();
  static std::string ini_path;
  if (options.keep_settings) {
    const std::string dir = gnomon::viewer::ConfigDirectory();
    std::error_code ec;
    if (!dir.empty() && (std::filesystem::create_directories(dir, ec), !ec))
      ini_path = dir + "/viewer-imgui.ini";
  }
  ImGui::GetIO().IniFilename = ini_path.empty() ? nullptr : ini_path.c_str();
  float monitor_scale = 1;
  {
    float x = 1, y = 1;
    glfwGetWindowContentScale(window, &x, &y);
    monitor_scale = std::clamp(std::max(x, y), 1.0f, 4.0f);
  }
  if (scale == 0) scale = monitor_scale;
  ApplyScale(scale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  gnomon::viewer::InputQueue keys;
  keys.Install(window);

  gnomon::viewer::App app(options);
  app.SetScale(scale, monitor_scale);
  if (loading) app.OpenLoading(loading_path, std::move(loading));
  g_app = &app;
  glfwSetDropCallback(window, OnDrop);
  using Clear = void (*)(unsigned);
  using ClearColor = void (*)(float, float, float, float);
  using Viewport = void (*)(int, int, int, int);
  auto gl_clear = reinterpret_cast<Clear>(glfwGetProcAddress("glClear"));
  auto gl_clear_color = reinterpret_cast<ClearColor>(glfwGetProcAddress("glClearColor"));
  auto gl_viewport = reinterpret_cast<Viewport>(glfwGetProcAddress("glViewport"));

  int rendered = 0;
  int settle_frames = 3;  // frames drawn after an event before the loop may wait again
  while (!glfwWindowShouldClose(window)) {
    const bool busy = app.is_busy();
    if (frames >= 0 || busy || settle_frames > 0 || !keys.empty()) {
      glfwPollEvents();
      if (settle_frames > 0) --settle_frames;
    } else {
      glfwWaitEventsTimeout(1.0);  // idle: no CPU until something happens (or a second passes)
      settle_frames = 3;
    }
    if (frames >= 0) glfwSetCursorPos(window, -100, -100);  // scripted: no hover, no tooltip
    // Scripted runs wait for a file to finish loading and the windows to compute before
    // counting frames, and give a live program time to send something.
    if (frames >= 0 && app.session() != nullptr && (busy || app.session()->is_live())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(app.session()->is_live() ? 20 : 5));
    }
    keys.Feed(window);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (mouse.active) {  // scripted: the mouse where the script puts it, its button as told
      ImGuiIO& io = ImGui::GetIO();
      const MouseScript::Step& step = mouse.steps[std::min(mouse.frame, mouse.steps.size() - 1)];
      io.MousePos = ImVec2(step.x, step.y);
      io.MouseDown[0] = mouse.frame < mouse.steps.size() && step.down;
      ++mouse.frame;
    }
    ImGui::NewFrame();
    int fb_width = 0, fb_height = 0;
    glfwGetFramebufferSize(window, &fb_width, &fb_height);
    app.Frame(float(fb_width), float(fb_height));
    ImGui::Render();
    gl_viewport(0, 0, fb_width, fb_height);
    gl_clear_color(0.12f, 0.12f, 0.13f, 1.0f);
    gl_clear(kGlColorBufferBit);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const bool computing = app.is_busy() && !(app.session() != nullptr && app.session()->is_live());
    // A live session is ready for the keys and the mouse once something has arrived.
    const bool no_data_yet = app.session() != nullptr && app.session()->is_live() &&
                             app.session()->bytes_received() == 0 && !app.session()->failed();
    if (frames >= 0 && !computing && !no_data_yet &&
        (!tap_keys.empty() || (!mouse.steps.empty() && !mouse.active))) {
      // Every tap at once, as a fast typist's between two slow frames; the queue spreads
      // them over frames, a modifier held around its key. The mouse script starts with
      // them. The run's frames count from here.
      for (const Tap& tap : tap_keys) {
        if (tap.modifier != GLFW_KEY_UNKNOWN) {
          keys.Push(tap.modifier, glfwGetKeyScancode(tap.modifier), GLFW_PRESS, 0);
        }
        keys.Push(tap.key, glfwGetKeyScancode(tap.key), GLFW_PRESS, 0);
        keys.Push(tap.key, glfwGetKeyScancode(tap.key), GLFW_RELEASE, 0);
        if (tap.modifier != GLFW_KEY_UNKNOWN) {
          keys.Push(tap.modifier, glfwGetKeyScancode(tap.modifier), GLFW_RELEASE, 0);
        }
      }
      tap_keys.clear();
      mouse.active = !mouse.steps.empty();
      rendered = 0;
    }
    if (frames >= 0 && !computing && ++rendered >= frames) {
      if (!screenshot.empty() && !WriteScreenshot(screenshot, fb_width, fb_height)) {
        std::fprintf(stderr, "gnomon-viewer: cannot write %s\n", screenshot.c_str());
      }
      if (!layout_dump.empty()) WriteLayout(layout_dump, app);
      break;
    }
    glfwSwapBuffers(window);
    if (const std::optional<float> rescale = app.TakeScaleRequest()) {  // between frames
      ApplyScale(*rescale);
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
      app.SetScale(*rescale, monitor_scale);
    }
  }
  g_app = nullptr;
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}
