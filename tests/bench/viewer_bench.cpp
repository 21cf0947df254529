// gnomon-viewer-bench: CPU time to build one viewer frame (Dear ImGui, no GPU) over a
// synthetic trace, at three zoom levels, then with each analysis window open.
//
//   gnomon-viewer-bench [--zones N] [--threads N] [--frames N] [--samples N]
// prints the first frame's cost (it indexes every zone): index zones=N cpu_ms=X
// then one line per zoom level: zoom=NAME zones=N cpu_ms_per_frame=X
// and one per window: window=NAME zones=N first_ms=W frames_meanwhile=F
//   worst_frame_ms_meanwhile=M cpu_ms_per_frame=X
// (first_ms: wall time of the window's first computation, off the UI thread, while the
// UI thread went on drawing F frames, the slowest taking M ms of its CPU).
// With --file FILE [--memory-limit MIB] the trace is that file instead, opened as the
// viewer opens it: the first frame's wall time and CPU, then the three zoom levels a
// third into it (the deeper two read their zones from the file when the file's zones are
// not held: measured once that window is drawn).
// With --samples N the trace also holds N statistical samples spread over its threads
// and time, their stacks made of this program's own functions (symbolized from its
// file), and the sample views are measured too: Samples, its flame graph, Source and
// Symbol.
#include <imgui.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "app.h"
#include "model/trace_builder.h"

namespace {

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// Frames of nested zones (depth 0..3, 12 source locations) on every thread, one frame
// mark per frame; ticks are nanoseconds. Zones last 5 to 50 us, so 10 million of them
// span about 36 s, as a real capture of that size does.
gnomon::server::TraceModel Synthetic(long zones, int threads, int64_t& duration_ns) {
  gnomon::server::TraceModel model;
  gnomon::server::TraceBuilder builder(model);
  namespace protocol = gnomon::protocol;
  builder.OnAppInfo({.pid = 0,
                     .timer_kind = uint8_t(protocol::TimerKind::kMonotonicRaw),
                     .ticks_per_second_estimate = 0,
                     .start_unix_ns = 0,
                     .start_tick = 0},
                    {.name = "viewer bench"});
  const char* names[12] = {"Frame", "Update", "Physics", "Render", "Cull", "Draw",
                           "Audio", "Mix",    "Net",     "Decode", "Jobs", "Wait"};
  for (uint32_t id = 1; id <= 12; ++id) {
    builder.OnSourceLocationDef({.id = id, .line = 0, .color = protocol::kNoColor},
                                {.name = names[id - 1], .function = "bench", .file = "viewer_bench.cpp"});
  }
  std::mt19937 rng(5);
  const long per_thread = zones / threads;
  for (int t = 0; t < threads; ++t) {
    const std::string name = "thread " + std::to_string(t);
    builder.OnThreadInfo({.thread_id = uint32_t(t + 1), .os_thread_id = uint32_t(1000 + t)}, {.name = name});
    builder.OnThreadContext({.thread_id = uint32_t(t + 1)});
    uint64_t tick = 1000;
    long made = 0;
    while (made < per_thread) {
      builder.BeginZone(1, tick);  // a frame of 1 + 4 x (1 + 3 x (1 + 2)) = 53 zones
      ++made;
      for (int a = 0; a < 4 && made < per_thread; ++a) {
        builder.BeginZone(2 + uint32_t(rng() % 4), tick += 20'000);
        ++made;
        for (int b = 0; b < 3 && made < per_thread; ++b) {
          builder.BeginZone(6 + uint32_t(rng() % 3), tick += 10'000);
          ++made;
          for (int c = 0; c < 2 && made < per_thread; ++c) {
            builder.BeginZone(9 + uint32_t(rng() % 4), tick += 5'000);
            ++made;
            builder.EndZone(tick += 5'000 + rng() % 45'000);
          }
          builder.EndZone(tick += 5'000);
        }
        builder.EndZone(tick += 10'000);
      }
      builder.EndZone(tick += 20'000);
      if (t == 0) builder.OnFrameMark({.name_id = 0, .tick = tick});
      tick += 30'000;
    }
    duration_ns = std::max<int64_t>(duration_ns, int64_t(tick));
  }
  return model;
}

// Functions of this program for the samples' stacks: where they were, and their callers.
[[gnu::noinline]] int BenchLeafA(int x) { return x * 3 + 1; }
[[gnu::noinline]] int BenchLeafB(int x) { return x * 5 + 2; }
[[gnu::noinline]] int BenchCaller(int x) { return BenchLeafA(x) + BenchLeafB(x); }

// This program's file, as the client announces it, so that the samples symbolize.
gnomon::protocol::ModuleDef SelfModule(std::string& path) {
  gnomon::protocol::ModuleDef def{};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& m = *static_cast<gnomon::protocol::ModuleDef*>(data);
        if (m.end != 0) return 0;  // the first is the program
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          m.load_bias = info->dlpi_addr;
          m.start = info->dlpi_addr + ph.p_vaddr;
          m.end = m.start + ph.p_memsz;
        }
        return 0;
      },
      &def);
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  path.assign(buffer, size_t(std::max<ssize_t>(n, 0)));
  return def;
}

// `count` samples spread evenly over [0, duration) and the threads, each at one of two
// leaves (a few bytes into them) called from BenchCaller.
void AddSamples(gnomon::server::TraceModel& model, long count, int threads, int64_t duration_ns) {
  gnomon::server::TraceBuilder builder(model);
  std::string path;
  builder.OnModuleDef(SelfModule(path), {.path = path, .build_id = {}});
  const uint64_t leaves[2] = {reinterpret_cast<uintptr_t>(&BenchLeafA) + 4,
                              reinterpret_cast<uintptr_t>(&BenchLeafB) + 4};
  const uint64_t caller = reinterpret_cast<uintptr_t>(&BenchCaller) + 8;
  std::mt19937 rng(7);
  for (long i = 0; i < count; ++i) {
    const uint64_t frames[2] = {leaves[rng() % 4 == 0 ? 1 : 0], caller};
    builder.OnSample({.os_thread_id = uint32_t(1000 + i % threads),
                      .tick = uint64_t(1000 + duration_ns * (i / threads) / (count / threads + 1))},
                     {.frames = {reinterpret_cast<const uint8_t*>(frames), 2}});
  }
}

// A Dear ImGui context as the viewer's window gives it, without a GPU.
void StartImGui() {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(1920, 1080);
  io.DeltaTime = 1.0f / 60.0f;
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as the OpenGL 3 renderer does
  unsigned char* pixels = nullptr;
  int width = 0, height = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);  // builds the font atlas
}

// --file: `path` opened as the viewer opens it, within `memory_limit`.
int FileBench(const std::string& path, uint64_t memory_limit, int frames) {
  StartImGui();
  gnomon::viewer::App::Options options;
  options.keep_settings = false;
  options.memory_limit = memory_limit;
  gnomon::viewer::App app(options);
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuMs();
  app.Show(gnomon::viewer::Session::OpenFile(path, gnomon::tracefile::kDefaultMaxExpansion, 0, memory_limit));
  auto frame = [&] {
    ImGui::NewFrame();
    app.Frame(1920, 1080);
    ImGui::Render();
  };
  do {
    frame();
  } while (app.session()->is_loading());
  frame();  // fits the view to the whole trace
  if (app.session()->failed()) {
    std::fprintf(stderr, "gnomon-viewer-bench: %s\n", app.session()->error().c_str());
    return 1;
  }
  std::printf("first_frame_s=%.3f ui_cpu_ms=%.1f view_ms=%.1f\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              ThreadCpuMs() - cpu_start, app.view().ns_per_px() * app.view().width_px() / 1e6);
  const int64_t begin = app.view().begin_ns();
  const int64_t end = begin + int64_t(app.view().ns_per_px() * app.view().width_px());
  const int64_t middle = begin + (end - begin) / 3;  // a third in: a capture's middle may be idle
  const struct {
    const char* name;
    int64_t begin, end;
  } zooms[] = {
      {"full", begin, end}, {"mid", middle, middle + 20'000'000}, {"deepest", middle, middle + 1'000}};
  for (const auto& zoom : zooms) {
    app.view().Fit(zoom.begin, zoom.end, app.view().width_px());
    // The zones read for the view, if it reads any (off the UI thread): a second, then
    // until nothing changes for 20 frames.
    const auto settle = std::chrono::steady_clock::now();
    size_t items = SIZE_MAX;
    int same = 0;
    while ((same < 20 || std::chrono::steady_clock::now() - settle < std::chrono::seconds(1)) &&
           std::chrono::steady_clock::now() - settle < std::chrono::seconds(30)) {
      frame();
      same = app.items().size() == items && !app.is_busy() ? same + 1 : 0;
      items = app.items().size();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double cpu = ThreadCpuMs();
    for (int i = 0; i < frames; ++i) frame();
    std::printf("zoom=%s items=%zu cpu_ms_per_frame=%.3f\n", zoom.name, app.items().size(),
                (ThreadCpuMs() - cpu) / frames);
  }
  ImGui::DestroyContext();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  long zones = 10'000'000;
  int threads = 8;
  int frames = 30;
  long samples = 0;
  std::string file;
  uint64_t memory_limit = UINT64_MAX;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--zones" && i + 1 < argc) {
      zones = std::atol(argv[++i]);
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--frames" && i + 1 < argc) {
      frames = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--samples" && i + 1 < argc) {
      samples = std::max(0L, std::atol(argv[++i]));
    } else if (arg == "--file" && i + 1 < argc) {
      file = argv[++i];
    } else if (arg == "--memory-limit" && i + 1 < argc) {
      memory_limit = uint64_t(std::max(1L, std::atol(argv[++i]))) << 20;
    } else {
      std::printf(
          "Usage: gnomon-viewer-bench [--zones N] [--threads N] [--frames N] [--samples N]\n"
          "       gnomon-viewer-bench --file FILE [--memory-limit MIB] [--frames N]\n"
          "Builds viewer frames (no GPU) over a synthetic trace at three zoom levels and prints\n"
          "zoom=NAME zones=N cpu_ms_per_frame=X for each; then opens find zone, the flame graph,\n"
          "compare (against a second trace as large) and statistics in turn and prints\n"
          "window=NAME first_ms=W (the first computation, off the UI thread) and the frames'\n"
          "CPU meanwhile and after. --samples N adds N samples and measures the sample views\n"
          "(samples, its flame graph, source, symbol) the same way. --file opens FILE as the\n"
          "viewer does (its zones within --memory-limit) and prints the first frame's time and\n"
          "the three zoom levels a third into it.\n");
      return arg == "-h" || arg == "--help" ? 0 : 1;
    }
  }
  if (!file.empty()) return FileBench(file, memory_limit, frames);
  int64_t duration_ns = 0;
  gnomon::server::TraceModel model = Synthetic(zones, threads, duration_ns);
  if (samples > 0) AddSamples(model, samples, threads, duration_ns);
  const volatile int called =
      BenchCaller(int(samples & 1));  // the functions the stacks name are used, so kept
  (void)called;
  const uint64_t stored = model.zone_count;
  std::fprintf(stderr, "synthetic trace: %llu zones on %d threads over %.3f s\n", (unsigned long long)stored,
               threads, double(duration_ns) / 1e9);

  StartImGui();
  gnomon::viewer::App::Options options;
  options.keep_settings = false;  // the same windows on every machine, and the user's settings untouched
  gnomon::viewer::App app(options);
  app.Show(gnomon::viewer::Session::FromModel(std::move(model), "synthetic"));

  auto frame = [&] {
    ImGui::NewFrame();
    app.Frame(1920, 1080);
    ImGui::Render();
  };
  const double index_start = ThreadCpuMs();
  frame();  // indexes the zones once, then fits the view
  std::printf("index zones=%llu cpu_ms=%.1f\n", (unsigned long long)stored, ThreadCpuMs() - index_start);
  frame();
  struct Zoom {
    const char* name;
    int64_t begin, end;
  };
  const int64_t middle = duration_ns / 2;
  const Zoom zooms[] = {{"full", 0, duration_ns},
                        {"mid", middle, middle + 20'000'000},  // 20 ms: thousands of zones in view
                        {"deepest", middle, middle + 1'000}};  // 1 us
  for (const Zoom& zoom : zooms) {
    app.view().Fit(zoom.begin, zoom.end, app.view().width_px());
    frame();
    const double start = ThreadCpuMs();
    size_t items = 0;
    for (int i = 0; i < frames; ++i) {
      frame();
      items += app.items().size();
    }
    const double per_frame = (ThreadCpuMs() - start) / frames;
    std::fprintf(stderr, "  %s: %.1f items per frame\n", zoom.name, double(items) / frames);
    std::printf("zoom=%s zones=%llu cpu_ms_per_frame=%.3f\n", zoom.name, (unsigned long long)stored,
                per_frame);
  }

  // The analysis windows over the whole trace; compare against a second trace as large.
  int64_t other_duration_ns = 0;
  app.CompareWith(
      gnomon::viewer::Session::FromModel(Synthetic(zones, threads, other_duration_ns), "synthetic B"));
  app.view().Fit(0, duration_ns, app.view().width_px());
  app.OpenWindows({}, true);
  frame();
  std::vector<std::string> shown = {"find-zone=Physics", "flame-graph", "compare", "statistics"};
  if (samples > 0) {
    for (const char* s : {"samples", "samples=flame", "source=viewer_bench.cpp:1", "symbol=BenchLeafA"})
      shown.emplace_back(s);
  }
  for (const std::string& show : shown) {
    std::string name = show.substr(0, show.find('='));
    if (show == "samples=flame") name = "samples-flame";
    app.OpenWindows({show}, true);
    const auto start = std::chrono::steady_clock::now();
    double worst_ms = 0;
    int meanwhile = 0;
    do {
      const double frame_start = ThreadCpuMs();
      frame();
      worst_ms = std::max(worst_ms, ThreadCpuMs() - frame_start);
      ++meanwhile;
    } while (app.is_busy() || !app.window_reports().contains(name));  // done: it drew its result
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const double measure_start = ThreadCpuMs();
    for (int i = 0; i < frames; ++i) frame();
    const double per_frame = (ThreadCpuMs() - measure_start) / frames;
    std::printf(
        "window=%s zones=%llu first_ms=%.0f frames_meanwhile=%d worst_frame_ms_meanwhile=%.3f "
        "cpu_ms_per_frame=%.3f\n",
        show == "samples=flame" ? "samples-flame" : name.c_str(), (unsigned long long)stored, first_ms,
        meanwhile, worst_ms, per_frame);
  }
  ImGui::DestroyContext();
  return 0;
}
