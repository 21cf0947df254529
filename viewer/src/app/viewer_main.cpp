// gnomon-viewer: the desktop viewer (Dear ImGui on GLFW and OpenGL 3).
//
//   gnomon-viewer [FILE | HOST[:PORT]] [--size WxH] [--all-windows]
//                 [--frames N --screenshot OUT.png] [--layout-dump OUT.json]
//
// --frames renders N frames and exits (with --screenshot: a PNG of the last frame,
// read back with glReadPixels); --layout-dump writes the timeline's lanes and items, in
// window coordinates, for tests that check the screenshot against the layout.
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "app.h"
#include "gnomon/protocol/settings.h"
#include "gnomon/server/text.h"

namespace {

constexpr unsigned kGlRgba = 0x1908;
constexpr unsigned kGlUnsignedByte = 0x1401;
constexpr unsigned kGlColorBufferBit = 0x4000;

gnomon::viewer::App* g_app = nullptr;

void OnDrop(GLFWwindow*, int count, const char** paths) {
  if (count > 0 && g_app != nullptr) g_app->Open(paths[0]);
}

void Usage(FILE* out) {
  std::fprintf(
      out,
      "Usage: gnomon-viewer [FILE | HOST[:PORT]] [--size WxH] [--all-windows] [--counters] [--range A:B]\n"
      "                     [--frames N] [--screenshot OUT.png] [--layout-dump OUT.json]\n"
      "\n"
      "Opens a Gnomon trace file, or connects to a running program (default port %u).\n"
      "Without an argument, a start window asks which. Drop a .gnomon file on the window\n"
      "to open it.\n"
      "\n"
      "Timeline: wheel zooms around the cursor, drag pans, shift+wheel scrolls lanes,\n"
      "arrows pan, up/down or =/- zoom, H fits the whole trace, F follows live data;\n"
      "click a zone for details, a frame bar to zoom to that frame, a lane title to\n"
      "collapse it (right-click hides it; the Lanes menu shows it again).\n"
      "\n"
      "  --size WxH        window size (default 1400x900)\n"
      "  --all-windows     open the statistics, messages, GPU clocks and debug windows\n"
      "  --counters        a lane for every GPU counter (the Lanes menu chooses them), and\n"
      "                    the first counted GPU zone in view selected\n"
      "  --range A:B       show milliseconds A to B of the trace\n"
      "  --max-expansion N load file blocks that decompress to up to N times their size\n"
      "                    (default 1024; past it a block is a bomb or damage, and skipped)\n"
      "  --frames N        render N frames, then exit (for scripts and tests)\n"
      "  --screenshot F    with --frames: save the last frame as a PNG\n"
      "  --layout-dump F   with --frames: write the timeline layout as JSON\n",
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
  first = true;
  for (const auto& item : app.items()) {
    out << (first ? "" : ",") << "{\"kind\":" << int(item.kind) << ",\"x0\":" << o.x + item.x0
        << ",\"y0\":" << o.y + item.y0 << ",\"x1\":" << o.x + item.x1 << ",\"y1\":" << o.y + item.y1
        << ",\"color\":" << item.color
        << ",\"label\":" << gnomon::server::JsonQuote(item.label ? *item.label : "") << "}";
    first = false;
  }
  out << "]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  gnomon::viewer::App::Options options;
  int width = 1400, height = 900, frames = -1;
  std::string screenshot, layout_dump;
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
      frames = std::atoi(value().c_str());
    } else if (arg == "--screenshot") {
      screenshot = value();
    } else if (arg == "--layout-dump") {
      layout_dump = value();
    } else if (arg == "--range") {
      double begin_ms = 0, end_ms = 0;
      if (std::sscanf(value().c_str(), "%lf:%lf", &begin_ms, &end_ms) != 2 || end_ms <= begin_ms) {
        std::fprintf(stderr, "gnomon-viewer: --range wants BEGIN_MS:END_MS, e.g. 100:120\n");
        return 1;
      }
      options.range_begin_ns = int64_t(begin_ms * 1e6);
      options.range_end_ns = int64_t(end_ms * 1e6);
    } else if (arg == "--max-expansion") {
      const auto n = gnomon::protocol::ParseUnsigned(value(), 1, UINT32_MAX);
      if (!n) {
        std::fprintf(stderr, "gnomon-viewer: --max-expansion: %s\n", n.error.c_str());
        return 1;
      }
      options.max_expansion = uint32_t(*n);
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
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  gnomon::viewer::App app(options);
  g_app = &app;
  glfwSetDropCallback(window, OnDrop);
  using Clear = void (*)(unsigned);
  using ClearColor = void (*)(float, float, float, float);
  using Viewport = void (*)(int, int, int, int);
  auto gl_clear = reinterpret_cast<Clear>(glfwGetProcAddress("glClear"));
  auto gl_clear_color = reinterpret_cast<ClearColor>(glfwGetProcAddress("glClearColor"));
  auto gl_viewport = reinterpret_cast<Viewport>(glfwGetProcAddress("glViewport"));

  int rendered = 0;
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    if (frames >= 0) glfwSetCursorPos(window, -100, -100);  // scripted: no hover, no tooltip
    // Scripted runs wait for a file to finish loading before counting frames, and give a
    // live program time to send something.
    if (frames >= 0 && app.session() != nullptr &&
        (app.session()->is_loading() || app.session()->is_live())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(app.session()->is_live() ? 20 : 5));
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    int fb_width = 0, fb_height = 0;
    glfwGetFramebufferSize(window, &fb_width, &fb_height);
    app.Frame(float(fb_width), float(fb_height));
    ImGui::Render();
    gl_viewport(0, 0, fb_width, fb_height);
    gl_clear_color(0.12f, 0.12f, 0.13f, 1.0f);
    gl_clear(kGlColorBufferBit);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const bool loading = app.session() != nullptr && app.session()->is_loading();
    if (frames >= 0 && !loading && ++rendered >= frames) {
      if (!screenshot.empty() && !WriteScreenshot(screenshot, fb_width, fb_height)) {
        std::fprintf(stderr, "gnomon-viewer: cannot write %s\n", screenshot.c_str());
      }
      if (!layout_dump.empty()) WriteLayout(layout_dump, app);
      break;
    }
    glfwSwapBuffers(window);
  }
  g_app = nullptr;
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}
