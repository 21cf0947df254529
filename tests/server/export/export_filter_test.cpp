// What an export keeps (gnomon-report --range, --threads, --zones): a range in
// milliseconds and its refusals, threads by name or OS thread id, zones by a part of
// their name.
#include "gnomon/server/export_filter.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../../support/build_model.h"

using namespace gnomon::server;

TEST_CASE(
    "an export filter's range is A:B in milliseconds or with units, either side left out, and nothing else") {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  ExportFilter whole;
  CHECK(whole.Contains(kMin));
  CHECK(whole.Contains(kMax));

  ExportFilter both;
  CHECK(both.ParseRange("1.5:2.25") == "");
  CHECK(both.begin_ns == 1'500'000);
  CHECK(both.end_ns == 2'250'000);
  CHECK(both.Contains(1'500'000));
  CHECK(both.Contains(2'250'000));
  CHECK_FALSE(both.Contains(1'499'999));
  CHECK_FALSE(both.Contains(2'250'001));
  CHECK(both.Overlaps(0, 1'500'000));  // a zone that ends where the range begins
  CHECK(both.Overlaps(0, 9'000'000));  // one that spans it
  CHECK_FALSE(both.Overlaps(2'250'001, 3'000'000));

  ExportFilter from;
  CHECK(from.ParseRange("3:") == "");
  CHECK(from.begin_ns == 3'000'000);
  CHECK(from.end_ns == kMax);
  ExportFilter to;
  CHECK(to.ParseRange(":0.000001") == "");
  CHECK(to.begin_ns == kMin);
  CHECK(to.end_ns == 1);
  ExportFilter instant;
  CHECK(instant.ParseRange("2:2") == "");
  CHECK(instant.begin_ns == 2'000'000);
  CHECK(instant.end_ns == 2'000'000);
  ExportFilter units;  // each side with its unit, or milliseconds
  CHECK(units.ParseRange("4.5s:1min") == "");
  CHECK(units.begin_ns == 4'500'000'000);
  CHECK(units.end_ns == 60'000'000'000);
  CHECK(units.ParseRange("250us:300000ns") == "");
  CHECK(units.begin_ns == 250'000);
  CHECK(units.end_ns == 300'000);
  CHECK(units.ParseRange("2ms:3") == "");
  CHECK(units.begin_ns == 2'000'000);
  CHECK(units.end_ns == 3'000'000);

  // Refused, each saying why, and the range left as it was.
  ExportFilter filter;
  REQUIRE(filter.ParseRange("1:2") == "");
  CHECK(filter.ParseRange("5") == "'5' is not A:B (milliseconds, or 4.5s:5s)");
  CHECK(filter.ParseRange("x:5") == "'x' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("1:2 ms") ==
        "'2 ms' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("1:2h") ==
        "'2h' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange(" 1:2") ==
        "' 1' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("inf:") ==
        "'inf' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("nan:1") ==
        "'nan' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("1e13:") ==
        "'1e13' is not a time (milliseconds, or a number and ns, us, ms, s or min)");  // past 31 years
  CHECK(filter.ParseRange("1e10s:") ==
        "'1e10s' is not a time (milliseconds, or a number and ns, us, ms, s or min)");
  CHECK(filter.ParseRange("5:1") == "the range ends before it begins");
  CHECK(filter.begin_ns == 1'000'000);
  CHECK(filter.end_ns == 2'000'000);
}

TEST_CASE("an export filter keeps threads by their whole name or OS thread id, from a comma-separated list") {
  gnomon::test::StreamWriter w;
  w.AppInfo("threads").SourceLocation(1, "Z", "f", "a.cpp", 1);
  w.ThreadInfo(1, 4242, "main").ThreadContext(1).ZoneBegin(1, 100).ZoneEnd(150);
  w.ThreadInfo(2, 17, "worker 0").ThreadContext(2).ZoneBegin(1, 200).ZoneEnd(250);
  w.ThreadInfo(3, 99, "io").ThreadContext(3).ZoneBegin(1, 300).ZoneEnd(350);
  const TraceModel model = gnomon::test::BuildWholeModel(w);
  REQUIRE(model.threads.size() == 3);
  const ThreadTimeline& main_thread = model.threads[model.thread_index.at(1)];
  const ThreadTimeline& worker = model.threads[model.thread_index.at(2)];
  const ThreadTimeline& io = model.threads[model.thread_index.at(3)];
  REQUIRE(main_thread.name == "main");
  REQUIRE(main_thread.os_thread_id == 4242);
  REQUIRE(worker.name == "worker 0");
  REQUIRE(io.os_thread_id == 99);

  ExportFilter every;
  CHECK(every.KeepsThread(main_thread));
  CHECK(every.KeepsThread(io));

  ExportFilter named;
  named.ParseThreads("main,,worker 0,");  // empty items name no thread
  CHECK(named.threads == std::vector<std::string>{"main", "worker 0"});
  CHECK(named.KeepsThread(main_thread));
  CHECK(named.KeepsThread(worker));
  CHECK_FALSE(named.KeepsThread(io));

  ExportFilter by_id;
  by_id.ParseThreads("99,4242");
  CHECK(by_id.KeepsThread(io));
  CHECK(by_id.KeepsThread(main_thread));
  CHECK_FALSE(by_id.KeepsThread(worker));

  // Part of a name or an id, or a name in another case, is no thread.
  ExportFilter partial;
  partial.ParseThreads("mai,Worker 0,424");
  CHECK(partial.threads.size() == 3);
  CHECK_FALSE(partial.KeepsThread(main_thread));
  CHECK_FALSE(partial.KeepsThread(worker));
  CHECK_FALSE(partial.KeepsThread(io));
}

TEST_CASE("an export filter keeps the zones whose name holds its text, in any case") {
  ExportFilter every;
  CHECK(every.KeepsZone("Load"));
  CHECK(every.KeepsZone(""));
  ExportFilter filter;
  filter.zones = "PARSE";
  CHECK(filter.KeepsZone("Parse"));
  CHECK(filter.KeepsZone("reparse json"));
  CHECK_FALSE(filter.KeepsZone("Load"));
  CHECK_FALSE(filter.KeepsZone("Pars"));
}
