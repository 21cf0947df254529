// Work that is too long for a frame (statistics of 100 M zones, a flame graph, the
// occurrences of a zone) done on a thread of its own, its result handed to the window
// that asked once it is ready.
//
//   BackgroundJob<Key, Result> job;
//   job.Request(key, [=] { return Compute(...); });   // every frame; starts only when the key is new
//   if (const Result* r = job.result()) Draw(*r);       // the newest finished result, if any
//   job.is_busy()                                       // "computing..."
//
// One computation runs at a time; a request made while one runs waits for it and then
// starts, unless a newer request replaced it first (so a user dragging a range computes
// the last range, not every one in between). The previous result stays readable until
// the next one is ready, so a window never goes blank. The destructor waits for the
// computation that runs: it must not outlive what it reads.
//
// Thread-safety: Request, result and is_busy are called from one thread (the UI's); the
// computation runs on the job's thread and must take its own locks (a SharedModel read).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace gnomon::viewer {

template <typename Key, typename Result>
class BackgroundJob {
 public:
  BackgroundJob() = default;
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  ~BackgroundJob() { Wait(); }

  // Computes `compute()` for `key`, unless the newest request already was for `key`.
  void Request(const Key& key, std::function<Result()> compute) {
    TakeFinished();
    if (requested_ && *requested_ == key) return;
    requested_ = key;
    std::lock_guard lock(shared_->mutex);
    shared_->next = {key, std::move(compute)};
    if (!shared_->running) Launch();
  }
  // Forgets every result and request (a new trace); waits for what runs.
  void Reset() {
    Wait();
    {
      std::lock_guard lock(shared_->mutex);
      shared_->finished.reset();  // the last computation's, for what was reset
    }
    requested_.reset();
    result_.reset();
    result_key_.reset();
  }

  // The newest finished result, or nullptr before the first one.
  const Result* result() {
    TakeFinished();
    return result_ ? &*result_ : nullptr;
  }
  // The key the newest finished result was computed for.
  const Key* result_key() {
    TakeFinished();
    return result_key_ ? &*result_key_ : nullptr;
  }
  // Counts the results handed over so far: a window that derives something from the
  // result (a sorted order) knows when to derive it again.
  uint64_t result_generation() {
    TakeFinished();
    return generation_;
  }
  // A computation runs or waits.
  bool is_busy() {
    TakeFinished();
    std::lock_guard lock(shared_->mutex);
    return shared_->running || shared_->next.has_value();
  }
  // Blocks until nothing runs or waits (tests, scripted runs).
  void Wait() {
    std::unique_lock lock(shared_->mutex);
    shared_->idle.wait(lock, [&] { return !shared_->running && !shared_->next; });
    lock.unlock();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::condition_variable idle;
    bool running = false;
    std::optional<std::pair<Key, std::function<Result()>>> next;
    std::optional<std::pair<Key, Result>> finished;
  };

  // Under shared_->mutex, with nothing running: starts the next request.
  void Launch() {
    if (thread_.joinable()) thread_.join();  // it has finished: running is false
    shared_->running = true;
    thread_ = std::thread([shared = shared_] {
      std::unique_lock lock(shared->mutex);
      while (shared->next) {
        auto [key, compute] = std::move(*shared->next);
        shared->next.reset();
        lock.unlock();
        Result result = compute();
        lock.lock();
        shared->finished.emplace(std::move(key), std::move(result));
      }
      shared->running = false;
      shared->idle.notify_all();
    });
  }

  void TakeFinished() {
    std::lock_guard lock(shared_->mutex);
    if (!shared_->finished) return;
    result_key_ = std::move(shared_->finished->first);
    result_ = std::move(shared_->finished->second);
    shared_->finished.reset();
    ++generation_;
  }

  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::thread thread_;
  std::optional<Key> requested_;
  std::optional<Result> result_;
  std::optional<Key> result_key_;
  uint64_t generation_ = 0;
};

}  // namespace gnomon::viewer
