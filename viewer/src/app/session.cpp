#include "session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "gnomon/server/streamed_statistics.h"

namespace gnomon::viewer {

std::unique_ptr<Session> Session::OpenFile(const std::string& path, uint32_t max_expansion, uint32_t program,
                                           uint64_t memory_limit) {
  std::unique_ptr<Session> session(new Session);
  Session* s = session.get();
  s->title_ = std::filesystem::path(path).filename().string();
  s->path_ = path;
  s->program_ = program;
  s->max_expansion_ = max_expansion;
  s->memory_limit_ = memory_limit;
  s->loading_ = true;
  s->loader_ = std::thread([s, path, max_expansion, program, memory_limit] {
    server::LoadOptions options;
    options.max_expansion = max_expansion;
    options.program = program;
    options.zone_memory_limit = memory_limit;
    // A run costs 24 bytes in the overview and about 17 in the timeline's index of it;
    // however small the limit, 65,536 of them (3 MiB) draw a screen of zones.
    options.overview_runs = memory_limit == UINT64_MAX ? 0 : std::max<size_t>(65'536, memory_limit / 4 / 48);
    options.bytes_done = &s->bytes_done_;
    options.bytes_total = &s->bytes_total_;
    options.cancel = &s->cancel_;
    server::Result<server::LoadReport> report = server::Status::Error("");
    if (auto source = server::TraceSource::OpenFile(path); source.ok()) {
      report = server::LoadTraceSet(source.value(), s->model_, s->others_, options);
    } else {
      report = source.status();
    }
    {
      std::lock_guard lock(s->text_mutex_);
      if (!report.ok()) {
        s->error_ = report.status().message();
        s->failed_ = true;
      } else {
        s->warning_ = report->warning;
        s->programs_ = std::max<uint32_t>(1, report->programs);
        s->shown_stream_ = report->shown_stream;
      }
    }
    s->loading_ = false;
  });
  return session;
}

template <typename R, typename Read>
server::Result<R> Session::ReadAgain(Read&& read) {
  auto source = server::TraceSource::OpenFile(path_);
  if (!source.ok()) return source.status();
  server::LoadOptions options;
  options.max_expansion = max_expansion_;
  options.cancel = &cancel_reads_;
  server::Result<R> result = server::Status::Error("");
  model_.Read([&](const server::TraceModel& model) { result = read(source.value(), model, options); });
  return result;
}

server::Result<std::vector<server::ZoneStatistics>> Session::StreamStatistics(std::string* note) {
  auto streamed = ReadAgain<std::vector<std::vector<server::ZoneStatistics>>>(
      [&](const server::TraceSource& source, const server::TraceModel& model,
          const server::LoadOptions& options) {
        return server::StreamZoneStatistics(source, {{shown_stream_.load(), &model}}, options,
                                            server::StreamedMedians::kWithinBucket, note);
      });
  if (!streamed.ok()) return streamed.status();
  if (streamed->empty()) return std::vector<server::ZoneStatistics>{};
  return std::move(streamed->front());
}

server::Result<server::FlameGraph> Session::StreamFlameGraph(const server::FlameQuery& query,
                                                             std::string* note) {
  return ReadAgain<server::FlameGraph>([&](const server::TraceSource& source, const server::TraceModel& model,
                                           const server::LoadOptions& options) {
    return server::StreamFlameGraph(source, {shown_stream_.load(), &model}, query, options, note);
  });
}

server::Result<server::FoundZones> Session::FindZonesInFile(server::FindZoneQuery query) {
  // The longest kept whole, by every worker: within a sixteenth of the limit, as a window.
  query.keep = std::min<uint64_t>(
      query.keep, std::max<uint64_t>(4096, memory_limit_ / 16 / (17 * sizeof(server::FoundZone))));
  return ReadAgain<server::FoundZones>([&](const server::TraceSource& source, const server::TraceModel& model,
                                           const server::LoadOptions& options) {
    return server::FindZonesInFile(source, {shown_stream_.load(), &model}, query, options);
  });
}

server::Result<server::ZoneWindow> Session::ReadZoneWindow(uint64_t begin_tick, uint64_t end_tick) {
  return ReadAgain<server::ZoneWindow>([&](const server::TraceSource& source, const server::TraceModel& model,
                                           const server::LoadOptions& options) {
    return server::ReadZoneWindow(source, model, begin_tick, end_tick,
                                  std::max<uint64_t>(memory_limit_ / 16, 64 << 20), options);
  });
}

std::unique_ptr<Session> Session::FromModel(server::TraceModel model, std::string title) {
  std::unique_ptr<Session> session(new Session);
  session->model_.unshared() = std::move(model);
  session->title_ = std::move(title);
  return session;
}

std::unique_ptr<Session> Session::Connect(const std::string& host, uint16_t port,
                                          std::chrono::milliseconds timeout, bool wait) {
  std::unique_ptr<Session> session(new Session);
  session->title_ = host + ":" + std::to_string(port);
  session->temp_path_ =
      (std::filesystem::temp_directory_path() /
       ("gnomon-viewer-" + std::to_string(getpid()) + "-" + std::to_string(port) + ".gnomon"))
          .string();
  // The tee is never published: it lives under a temporary name beside this path,
  // created exclusively, and is removed with the session.
  auto tee =
      tracefile::TraceWriter::Create(session->temp_path_, {.compression_level = tracefile::kLiveTeeLevel});
  server::Worker::Options options;
  options.host = host;
  options.port = port;
  options.connect_timeout = wait ? std::chrono::hours(24 * 365) : timeout;  // waiting ends with the session
  options.retry_refused = wait;
  session->waiting_ = wait;
  options.lanes = server::DefaultLanes(true);  // where there are cores to spare
  if (tee.ok()) {
    session->tee_ = std::move(tee.value());
    options.writer = &session->tee_->first_stream();
  }
  session->worker_ = std::make_unique<server::Worker>(options);
  Session* s = session.get();
  s->connector_ = std::thread([s] {
    const server::Status connected = s->worker_->Connect();
    if (!connected.ok()) {
      std::lock_guard lock(s->text_mutex_);
      s->error_ = connected.message();
      s->failed_ = true;
      return;
    }
    s->worker_->Start();
  });
  return session;
}

Session::~Session() {
  cancel_ = true;
  if (worker_) worker_->RequestStop();  // also ends a connection still being tried
  if (loader_.joinable()) loader_.join();
  if (connector_.joinable()) connector_.join();
  if (worker_) worker_->Join();
  if (tee_) tee_->Finish();
}

std::string Session::error() const {
  std::lock_guard lock(text_mutex_);
  if (!error_.empty()) return error_;
  return worker_ ? worker_->error() : "";
}

std::string Session::warning() const {
  std::lock_guard lock(text_mutex_);
  return warning_;
}

float Session::load_progress() const {
  return bytes_total_ == 0 ? 0.0f : float(double(bytes_done_.load()) / double(bytes_total_));
}

uint64_t Session::bytes_received() const { return worker_ ? worker_->bytes_received() : bytes_done_.load(); }

bool Session::is_receiving() const {
  return worker_ != nullptr && !failed() &&
         (worker_->state() == server::Worker::State::kReceiving ||
          worker_->state() == server::Worker::State::kIdle);
}

void Session::StopCapture() {
  if (worker_ != nullptr) worker_->RequestStop();
}

std::string Session::StateText() const {
  if (failed()) return "failed: " + error();
  if (!worker_) return loading_ ? "loading" : "loaded";
  switch (worker_->state()) {
    case server::Worker::State::kIdle:
      return waiting_ ? "waiting for a program to listen at " + title_ : "connecting";
    case server::Worker::State::kReceiving:
      return "receiving";
    case server::Worker::State::kEnded:
      return "the program ended";
    case server::Worker::State::kStopped:
      return "stopped";
    case server::Worker::State::kDisconnected:
      return "disconnected: " + worker_->error();
    case server::Worker::State::kFailed:
      return "stream error: " + worker_->error();
  }
  return "";
}

server::Status Session::SaveAs(const std::string& path, tracefile::Overwrite overwrite) {
  if (tee_) return tee_->SaveCopy(path, overwrite);
  if (path_.empty()) return server::Status::Error("nothing to save: this trace was not read from a file");
  if (server::Status s = tracefile::CheckOutputPath(path, overwrite); !s.ok()) return s;
  auto out = tracefile::OutputFile::Create(path);
  if (!out.ok()) return out.status();
  if (server::Status s = tracefile::CopyFileBytes(path_, UINT64_MAX, *out.value()); !s.ok()) return s;
  if (server::Status s = out.value()->Close(); !s.ok()) return s;
  return out.value()->Publish(overwrite);
}

}  // namespace gnomon::viewer
