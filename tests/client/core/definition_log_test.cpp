// What a program keeps for a server that connects late, and sends the one connected.
#include "core/definition_log.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using gnomon::client::DefinitionLog;

namespace {

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }
std::string Text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::string Kept(const DefinitionLog& log) {
  std::vector<uint8_t> out;
  log.AppendKept(out);
  return Text(out);
}

}  // namespace

TEST_CASE("definitions are kept once, names as their latest, clock samples as the first and the newest") {
  DefinitionLog log;
  const auto def = Bytes("[location]");
  log.AddDefinition(def.data(), def.size());
  log.SetName(DefinitionLog::Named::kThread, 1, Bytes("[thread 1: a]"));
  log.SetName(DefinitionLog::Named::kGpuContext, 1, Bytes("[gpu 1: x]"));
  for (int i = 0; i < 1000; ++i)
    log.SetName(DefinitionLog::Named::kThread, 1, Bytes(i % 2 ? "[1: a]" : "[1: b]"));
  log.SetName(DefinitionLog::Named::kThread, 2, Bytes("[thread 2]"));
  const auto sample = Bytes("s");
  for (int i = 0; i < 10000; ++i) log.AddClockSample(0, sample.data(), sample.size());
  // Definitions first, then names (threads, then GPU contexts), then each clock's samples.
  CHECK(Kept(log) ==
        "[location][1: a][thread 2][gpu 1: x]" + std::string(DefinitionLog::kMaxClockSamples, 's'));
  CHECK(log.kept_bytes() == Kept(log).size());
  log.ForgetThread(2);
  CHECK(Kept(log).find("[thread 2]") == std::string::npos);
  CHECK(log.kept_bytes() == Kept(log).size());
}

TEST_CASE("a clock keeps its first samples and its newest, in order") {
  DefinitionLog log;
  for (int i = 0; i < 5000; ++i) {
    const auto sample = Bytes("<" + std::to_string(i) + ">");
    log.AddClockSample(7, sample.data(), sample.size());
  }
  const std::string kept = Kept(log);
  CHECK(kept.starts_with("<0><1><2>"));
  CHECK(kept.find("<15><" + std::to_string(5000 - (DefinitionLog::kMaxClockSamples - 16)) + ">") !=
        std::string::npos);
  CHECK(kept.ends_with("<4998><4999>"));
  CHECK(kept.find("<16>") == std::string::npos);
}

TEST_CASE("only what is new goes to the server connected, and only while one is") {
  DefinitionLog log;
  const auto before = Bytes("[before]");
  log.AddDefinition(before.data(), before.size());  // nobody connected: kept, not held
  CHECK(log.held_bytes() == 0);
  std::vector<uint8_t> out;
  log.BeginServer(out);
  CHECK(Text(out) == "[before]");
  log.SetName(DefinitionLog::Named::kThread, 3, Bytes("[3: w]"));
  log.SetName(DefinitionLog::Named::kThread, 3, Bytes("[3: w]"));  // the same again: nothing
  out.clear();
  log.TakeNew(out);
  CHECK(Text(out) == "[3: w]");
  log.EndServer();
  log.SetName(DefinitionLog::Named::kThread, 3, Bytes("[3: v]"));
  CHECK(log.held_bytes() == 0);
}
