// A TraceModel that one thread builds while others read it: the one owner of a model's
// lock, for the worker's live capture, the viewer's file loads and whoever else shares.
//
//   SharedModel shared;
//   shared.Read([](const TraceModel& m) { draw(m); });          // any thread, many at once
//   shared.Write([](TraceModel& m) { builder.Decode(...); });   // the building thread
//   if (!shared.TryWrite(decode)) keep_receiving();              // never waits for readers
//
// Readers run together and see the model between two writes, never in the middle of
// one. A writer that must not wait (the receiving thread of a live capture, whose
// socket would otherwise back up into the program) uses TryWrite and, when a reader
// holds the model, keeps its bytes for later; readers that hold the model long
// (statistics over 100 M zones) therefore delay only the model, not the capture.
// Writers that change disjoint parts of the model (a live capture's lanes, each its own
// threads' zones) may hold it together (JoinWriters), still apart from readers. A reader
// that waits turns new writers away, so a stream of writers never starves the window.
#pragma once

#include <condition_variable>
#include <mutex>
#include <utility>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

class SharedModel {
 public:
  SharedModel() = default;
  explicit SharedModel(TraceModel model) : model_(std::move(model)) {}
  SharedModel(const SharedModel&) = delete;
  SharedModel& operator=(const SharedModel&) = delete;

  // Runs f(const TraceModel&) while no write runs; returns what f returns. Not from
  // inside another Read of the same model (a writer waiting between the two would wait
  // for the first, and the second for it).
  template <typename F>
  decltype(auto) Read(F&& f) const {
    {
      std::unique_lock lock(mutex_);
      ++readers_waiting_;
      changed_.wait(lock, [&] { return writers_ == 0 && writers_waiting_ == 0; });
      --readers_waiting_;
      ++readers_;
    }
    const Leave leave{*this, &SharedModel::readers_};
    return f(std::as_const(model_));
  }
  // Runs f(TraceModel&) alone, once current readers and writers are done.
  template <typename F>
  decltype(auto) Write(F&& f) {
    Enter(kAlone);
    const Leave leave{*this, &SharedModel::writers_};
    return f(model_);
  }
  // Runs f(TraceModel&) alone if no one holds the model or waits to read it now; false
  // (and f not run) otherwise. Never waits.
  template <typename F>
  bool TryWrite(F&& f) {
    if (!TryEnter(kAlone)) return false;
    const Leave leave{*this, &SharedModel::writers_};
    f(model_);
    return true;
  }
  // Holds the model for writing beside other joined writers, if no reader holds it or
  // waits and no writer holds it alone; never waits. Each join is left once.
  bool TryJoinWriters() { return TryEnter(kJoined); }
  // The same, waiting for readers and a writer alone to be done.
  void JoinWriters() { Enter(kJoined); }
  void LeaveWriters() { const Leave leave{*this, &SharedModel::writers_}; }
  // Inside a join: the model, for the parts this writer alone changes.
  TraceModel& joined() { return model_; }

  // The model itself, with no lock: only while no other thread can reach it (before
  // it is shared, or once the building thread is joined).
  TraceModel& unshared() { return model_; }
  const TraceModel& unshared() const { return model_; }

 private:
  static constexpr int kAlone = -1;
  static constexpr int kJoined = 1;
  bool Admits(int how) const { return readers_ == 0 && (how == kAlone ? writers_ == 0 : writers_ >= 0); }
  bool TryEnter(int how) {
    std::lock_guard lock(mutex_);
    if (!Admits(how) || readers_waiting_ > 0) return false;
    writers_ = how == kAlone ? kAlone : writers_ + 1;
    return true;
  }
  void Enter(int how) {
    std::unique_lock lock(mutex_);
    ++writers_waiting_;
    changed_.wait(lock, [&] { return Admits(how); });
    --writers_waiting_;
    writers_ = how == kAlone ? kAlone : writers_ + 1;
  }
  // Lets go of a reader's or a writer's hold (`count`: readers_ or writers_).
  struct Leave {
    const SharedModel& shared;
    int SharedModel::*count;
    ~Leave() {
      std::lock_guard lock(shared.mutex_);
      int& held = const_cast<SharedModel&>(shared).*count;
      held = held == kAlone ? 0 : held - 1;
      if (held == 0) shared.changed_.notify_all();
    }
  };

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  // Who holds the model: readers, a writer alone (writers_ == kAlone), or joined
  // writers (writers_ > 0); and who waits.
  mutable int readers_ = 0;
  mutable int readers_waiting_ = 0;
  int writers_ = 0;
  int writers_waiting_ = 0;
  TraceModel model_;
};

}  // namespace gnomon::server
