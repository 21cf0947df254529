// gnomon-demo: a small multi-threaded program to profile.
//
// A frame loop on the main thread (update, physics, render) hands jobs to a pool of
// worker threads; zones nest, some carry runtime text and values, two plots follow the
// frame time and queue depth, messages mark notable moments, and a named discontinuous
// frame series brackets each physics step. The job queue's mutex is a tracked lock (the
// workers wait on it), each job's scratch buffer is a tracked allocation, and a pool of
// "textures" streams in and out (the last few are never freed). Runs for --seconds
// (default 3).
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <gnomon/gnomon.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

class JobQueue {
 public:
  void Push(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  bool Pop(std::function<void()>& job) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return !jobs_.empty() || closed_; });
    if (jobs_.empty()) return false;
    job = std::move(jobs_.front());
    jobs_.pop_front();
    return true;
  }
  size_t Size() {
    std::lock_guard lock(mutex_);
    return jobs_.size();
  }
  void Close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  gnomon::Lockable<std::mutex> mutex_{"job queue"};
  std::condition_variable_any cv_;
  std::deque<std::function<void()>> jobs_;
  bool closed_ = false;
};

// Burns CPU for about `us` microseconds so zones have real, varied lengths.
double Spin(int us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  double x = 1.0;
  while (std::chrono::steady_clock::now() < end) x = std::sqrt(x + 1.0);
  return x;
}

void Decompress(int size) {
  GNOMON_ZONE_C("Decompress", 0x4CAF50);
  gnomon::ZoneValue(static_cast<uint64_t>(size));
  Spin(40 + size % 60);
}

void Simulate(int index) {
  GNOMON_ZONE_C("Simulate", 0x2196F3);
  for (int step = 0; step < 3; ++step) {
    GNOMON_ZONE("Simulate step");
    Spin(20 + (index * 7 + step) % 30);
  }
}

void Job(int index) {
  GNOMON_ZONE("Job");
  const std::string text = "job " + std::to_string(index);
  gnomon::ZoneText(text);
  const size_t scratch_bytes = 4096 + size_t(index * 37 % 1000) * 64;
  void* scratch = std::malloc(scratch_bytes);
  GNOMON_ALLOC(scratch, scratch_bytes);
  Decompress(index * 37 % 1000);
  Simulate(index);
  GNOMON_FREE(scratch);
  std::free(scratch);
}

// Textures stream in (one every 30 frames, 1 to 4 MiB) and the oldest out, keeping the
// last eight: they are still loaded when profiling ends, and freed after it.
class TextureCache {
 public:
  ~TextureCache() {
    for (void* texture : loaded_) std::free(texture);
  }
  void Stream(int frame) {
    if (frame % 30 != 0) return;
    GNOMON_ZONE("Stream texture");
    const size_t bytes = size_t(1 + frame / 30 % 4) << 20;
    void* texture = std::malloc(bytes);
    GNOMON_ALLOC_NAMED(texture, bytes, "textures");
    loaded_.push_back(texture);
    if (loaded_.size() > 8) {
      GNOMON_FREE_NAMED(loaded_.front(), "textures");
      std::free(loaded_.front());
      loaded_.pop_front();
    }
  }

 private:
  std::deque<void*> loaded_;
};

void Physics(uint32_t physics_series) {
  gnomon::FrameBegin(physics_series);
  GNOMON_ZONE_C("Physics", 0xFF9800);
  Spin(300);
  gnomon::FrameEnd(physics_series);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3.0;
  int workers = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--workers" && i + 1 < argc) {
      workers = std::max(1, std::atoi(argv[++i]));
    } else {
      std::printf(
          "Usage: gnomon-demo [--seconds S] [--workers N]\n"
          "A multi-threaded program to profile: run it, then capture it with\n"
          "gnomon-capture (it listens on 127.0.0.1:9421, or $GNOMON_PORT).\n");
      return arg == "--help" || arg == "-h" ? 0 : 1;
    }
  }
  gnomon::SetThreadName("main");
  gnomon::Message("demo started");
  JobQueue queue;
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&queue, w] {
      const std::string name = "worker " + std::to_string(w);
      gnomon::SetThreadName(name.c_str());
      std::function<void()> job;
      while (queue.Pop(job)) job();
    });
  }

  const uint32_t physics_series = gnomon::FrameName("Physics step");
  TextureCache textures;
  const auto start = std::chrono::steady_clock::now();
  auto last_frame = start;
  int frame = 0;
  int job_index = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
    {
      GNOMON_ZONE("Frame");
      {
        GNOMON_ZONE("Update");
        for (int j = 0; j < 8; ++j) {
          const int index = job_index++;
          queue.Push([index] { Job(index); });
        }
        if (frame % 2 == 0) Physics(physics_series);
        textures.Stream(frame);
      }
      {
        GNOMON_ZONE_C("Render", 0xE91E63);
        Spin(frame % 60 == 59 ? 22000 : 1500);  // every 60th frame is slow
      }
      GNOMON_PLOT("queue depth", static_cast<double>(queue.Size()));
    }
    std::this_thread::sleep_until(last_frame + 16ms);
    const auto now = std::chrono::steady_clock::now();
    const double frame_ms = std::chrono::duration<double, std::milli>(now - last_frame).count();
    last_frame = now;
    GNOMON_PLOT("frame time ms", frame_ms);
    if (frame_ms > 20.0) {
      const std::string text =
          "slow frame " + std::to_string(frame) + ": " + std::to_string(frame_ms) + " ms";
      gnomon::Message(text, gnomon::Severity::kWarning);
    }
    GNOMON_FRAME_MARK();
    ++frame;
  }
  queue.Close();
  for (std::thread& t : pool) t.join();
  gnomon::Message("demo finished: " + std::to_string(frame) + " frames, " + std::to_string(job_index) +
                  " jobs");
  std::printf("gnomon-demo: %d frames, %d jobs\n", frame, job_index);
  gnomon_shutdown();  // ships everything to a connected capture; the textures are freed after
  return 0;
}
