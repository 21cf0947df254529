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
#pragma once

#include <shared_mutex>
#include <utility>

#include "gnomon/server/trace_model.h"

namespace gnomon::server {

class SharedModel {
 public:
  SharedModel() = default;
  explicit SharedModel(TraceModel model) : model_(std::move(model)) {}
  SharedModel(const SharedModel&) = delete;
  SharedModel& operator=(const SharedModel&) = delete;

  // Runs f(const TraceModel&) while no write runs; returns what f returns.
  template <typename F>
  decltype(auto) Read(F&& f) const {
    std::shared_lock lock(mutex_);
    return f(std::as_const(model_));
  }
  // Runs f(TraceModel&) alone, once current readers are done.
  template <typename F>
  decltype(auto) Write(F&& f) {
    std::unique_lock lock(mutex_);
    return f(model_);
  }
  // Runs f(TraceModel&) alone if no one holds the model now; false (and f not run)
  // otherwise. Never waits.
  template <typename F>
  bool TryWrite(F&& f) {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    f(model_);
    return true;
  }

  // The model itself, with no lock: only while no other thread can reach it (before
  // it is shared, or once the building thread is joined).
  TraceModel& unshared() { return model_; }
  const TraceModel& unshared() const { return model_; }

 private:
  mutable std::shared_mutex mutex_;
  TraceModel model_;
};

}  // namespace gnomon::server
