// A registry and a sender of the test's own (core/registry.h, core/sender.h), beside the
// process's profiler, driven through their API: threads of that registry whose events the
// test writes by hand into their chunks, as the recording path does, and which the sender
// drains to a worker over loopback, or to a trace file. For client_tests, which sees the
// client's private headers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/chunk_pool.h"
#include "core/registry.h"
#include "core/sender.h"
#include "gnomon/client/thread_writer.h"
#include "gnomon/gnomon.h"
#include "gnomon/protocol/messages.h"

namespace gnomon::test {

// Announcing nothing (a test's sender is no program to list) on a free loopback port.
inline client::Config QuietConfig() {
  client::Config config;
  config.port = 0;
  config.announce = client::AnnounceMode::kOff;
  config.keep_start_ms = 0;
  return config;
}

class OwnSender {
 public:
  explicit OwnSender(const client::Config& config = QuietConfig())
      : registry_(std::make_unique<client::Registry>(config)),
        sender_(std::make_unique<client::Sender>(*registry_)) {}
  // The sender stops first; then the threads it did not let go are freed with their
  // chunks, then the sender, then the registry.
  ~OwnSender() {
    sender_->Stop();
    std::sort(threads_.begin(), threads_.end());
    threads_.erase(std::unique(threads_.begin(), threads_.end()), threads_.end());
    for (client::ThreadState* thread : threads_) {
      bool listed = false;
      {
        std::lock_guard lock(registry_->mutex());
        const auto& threads = registry_->threads();
        listed = std::find(threads.begin(), threads.end(), thread) != threads.end();
      }
      if (!listed) continue;  // exited, drained and let go by the sender
      registry_->RetireThread(thread);
      client::Chunk* chunk = thread->read_chunk != nullptr ? thread->read_chunk : thread->head.load();
      while (chunk != nullptr) {
        client::Chunk* next = chunk->next.load();
        registry_->pool().Release(chunk);
        chunk = next;
      }
      if (client::Chunk* spare = thread->spare.exchange(nullptr)) registry_->pool().Release(spare);
      delete thread;
    }
    sender_.reset();
    registry_.reset();
  }
  OwnSender(const OwnSender&) = delete;
  OwnSender& operator=(const OwnSender&) = delete;

  client::Registry& registry() { return *registry_; }
  client::Sender& sender() { return *sender_; }
  uint16_t port() const { return sender_->port(); }

  // Listens (or opens its own file) and starts the sender's thread.
  void Start() {
    REQUIRE(sender_->Listen());
    sender_->Start();
  }
  void Stop() { sender_->Stop(); }

  // A source location of the registry, named `name`.
  uint32_t Location(const std::string& name) {
    names_.push_back(name);
    locations_.push_back({names_.back().c_str(), "HandWritten", __FILE__, 1, GNOMON_NO_COLOR, 0});
    return registry_->RegisterSourceLocation(&locations_.back());
  }

  // A thread of the registry named `name`, with no events yet.
  client::ThreadState* AddThread(const char* name) {
    client::ThreadState* thread = registry_->RegisterThread();
    registry_->SetThreadName(thread, name);
    threads_.push_back(thread);
    return thread;
  }

  // `zones` zones of `location` on `thread`, each published as it is written, in a new
  // chunk linked to the thread's chain whenever the current one is full.
  void WriteZones(client::ThreadState* thread, uint32_t location, int zones) {
    constexpr size_t kZoneBytes = sizeof(protocol::ZoneBegin) + sizeof(protocol::ZoneEnd);
    for (int i = 0; i < zones; ++i) {
      client::Chunk* chunk = thread->write_chunk;
      if (chunk == nullptr ||
          chunk->committed.load(std::memory_order_relaxed) + kZoneBytes > client::Chunk::kDataBytes) {
        client::Chunk* next = registry_->pool().Acquire();
        REQUIRE(next != nullptr);
        next->Reset();
        next->sequence = registry_->NextChunkSequence();
        if (chunk != nullptr) {
          chunk->next.store(next, std::memory_order_release);
        } else {
          thread->head.store(next, std::memory_order_release);
        }
        thread->write_chunk = chunk = next;
      }
      const uint32_t at = chunk->committed.load(std::memory_order_relaxed);
      uint8_t* p = chunk->data + at;
      p = protocol::WriteMessage(p, protocol::ZoneBegin{.srcloc_id = location, .tick = detail::Now()});
      p = protocol::WriteMessage(p, protocol::ZoneEnd{.tick = detail::Now()});
      chunk->committed.store(static_cast<uint32_t>(p - chunk->data), std::memory_order_release);
    }
  }

  // The thread exited: the sender drains it and lets it go. Not to be used after.
  static void Exit(client::ThreadState* thread) { thread->finished.store(true, std::memory_order_release); }

 private:
  std::unique_ptr<client::Registry> registry_;
  std::unique_ptr<client::Sender> sender_;
  std::vector<client::ThreadState*> threads_;
  std::deque<std::string> names_;
  std::deque<gnomon_source_location> locations_;
};

}  // namespace gnomon::test
