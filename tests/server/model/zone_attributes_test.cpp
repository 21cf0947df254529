// Zone attributes kept in sorted runs: every zone's attributes found again, whatever the
// order they came in, 16 bytes an attribute, and the hash table only past kMaxRuns runs.
#include "gnomon/server/zone_attributes.h"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../support/build_model.h"

using gnomon::server::StableStrings;
using gnomon::server::ZoneAttributeTable;
using gnomon::test::StreamWriter;
using Kind = ZoneAttributeTable::Kind;

TEST_CASE("zone attributes are found by zone, whether they came in order, late, or again") {
  ZoneAttributeTable t;
  CHECK(!t.find(0));
  for (uint64_t zone : {5, 6, 9}) t.Touch(Kind::kValue, zone, false) = zone * 10;
  t.Touch(Kind::kValue, 2, false) = 20;        // an outer zone after its children: a run of its own
  t.Touch(Kind::kValue, 7, false) = 70;        // after 2 in that run
  t.Touch(Kind::kValue, 1, false) = 10;        // a third run
  t.Touch(Kind::kColor, 6, true) = 0x123456;   // a kind of its own, on a zone that has a value
  t.Touch(Kind::kColor, 3, false) = 0x654321;  // a colour alone
  CHECK(t.size() == 7);
  for (uint64_t zone : {1, 2, 5, 6, 7, 9}) {
    REQUIRE(t.find(zone));
    CHECK(t.at(zone).value == zone * 10);
    CHECK(t.at(zone).has_value);
  }
  CHECK(t.at(6).color == 0x123456);
  CHECK(t.at(5).color == 0xFF000000u);  // none
  CHECK(t.at(3).color == 0x654321);
  CHECK(!t.at(3).has_value);
  CHECK(t.at(3).value == 0);
  for (uint64_t zone : {0, 4, 8, 10}) CHECK(!t.find(zone));
  CHECK_THROWS_AS(t.at(4), std::out_of_range);
}

TEST_CASE("zone attributes past kMaxRuns runs go to a hash table and are found the same") {
  ZoneAttributeTable t;
  const uint64_t count = ZoneAttributeTable::kMaxRuns + 100;
  for (uint64_t i = 0; i < count; ++i)
    t.Touch(Kind::kValue, 10'000 - i, false) = i;  // each later than the last
  for (uint64_t i = 0; i < count; ++i) CHECK(t.Touch(Kind::kValue, 10'000 - i, true) == i);  // found again
  for (uint64_t i = 0; i < count; ++i)
    t.Touch(Kind::kColor, 10'000 - i, true) = i + 1;  // another kind's runs
  CHECK(t.size() == count);
  for (uint64_t i = 0; i < count; ++i) {
    REQUIRE(t.find(10'000 - i));
    CHECK(t.at(10'000 - i).value == i);
    CHECK(t.at(10'000 - i).color == i + 1);
    CHECK(t.at(10'000 - i).has_value);
  }
}

TEST_CASE("zone attributes keep one name and text a zone, compare by content, and take 16 bytes each") {
  ZoneAttributeTable a;
  ZoneAttributeTable b;
  a.String(a.Touch(Kind::kText, 3, false)) = "hello";
  a.String(a.Touch(Kind::kName, 1, false)) = "named";
  b.String(b.Touch(Kind::kName, 1, false)) = "named";  // the same, in another order
  b.String(b.Touch(Kind::kText, 3, false)) = "hello";
  CHECK(a == b);
  CHECK(a.at(3).text == "hello");
  CHECK(a.at(3).name.empty());
  CHECK(a.at(1).name == "named");
  CHECK(a.Name(1) == "named");
  CHECK(a.Name(3).empty());
  CHECK(a.at(1).text.empty());
  b.Touch(Kind::kValue, 3, true) = 1;
  CHECK(!(a == b));
  a.Touch(Kind::kValue, 3, true) = 2;
  CHECK(!(a == b));  // a value of its own
  a.Touch(Kind::kValue, 3, true) = 1;
  CHECK(a == b);
  a.String(a.Touch(Kind::kText, 3, true)) = "bye";
  CHECK(!(a == b));  // a text of its own
  // A text set again and again on one zone is overwritten, not kept beside the others.
  for (int i = 0; i < 100'000; ++i) a.String(a.Touch(Kind::kText, 1, true)) = "step " + std::to_string(i);
  CHECK(a.at(1).text == "step 99999");
  CHECK(a.at(1).name == "named");
  CHECK(a.capacity_bytes() < 4096);

  ZoneAttributeTable many;
  constexpr uint64_t kZones = 1'000'000;
  for (uint64_t zone = 0; zone < kZones; ++zone) many.Touch(Kind::kValue, zone * 3, false) = zone;
  CHECK(many.capacity_bytes() <= kZones * 18);  // 16 bytes each, the last chunk's slack
  CHECK(many.at(3 * 123'456).value == 123'456);
}

TEST_CASE("a table's strings stay where they are as they grow past 2 MiB chunks, short and long") {
  StableStrings strings;
  constexpr size_t kCount = 200'000;  // past 65,536 a chunk of 2 MiB
  std::vector<const std::string*> where;
  size_t long_bytes = 0;
  for (size_t i = 0; i < kCount; ++i) {
    REQUIRE(strings.emplace_back() == i);
    std::string& s = strings[i];
    CHECK(s.empty());
    s = i % 1000 == 0 ? std::string(100, char('a' + i % 26)) : "text " + std::to_string(i);
    if (s.size() > 15) long_bytes += s.capacity();
    where.push_back(&s);
  }
  for (size_t i = 0; i < kCount; ++i) {
    REQUIRE(&strings[i] == where[i]);
    CHECK(strings[i] == (i % 1000 == 0 ? std::string(100, char('a' + i % 26)) : "text " + std::to_string(i)));
  }
  CHECK(strings.capacity_bytes() >= kCount * sizeof(std::string) + long_bytes);
  CHECK(strings.capacity_bytes() <= 2 * kCount * sizeof(std::string) + long_bytes);
}

TEST_CASE("zone attributes in any order are what a map of them holds") {
  // Zones touched at random, most of them new: runs, later runs and the hash table.
  std::mt19937_64 rng(11);
  ZoneAttributeTable table;
  std::map<uint64_t, uint64_t> reference;  // zone -> value
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t zone = i % 7 == 0 ? uint64_t(i) : rng() % 5'000;
    const uint64_t value = rng();
    table.Touch(Kind::kValue, zone, reference.contains(zone)) = value;
    reference[zone] = value;
  }
  CHECK(table.size() == reference.size());
  ZoneAttributeTable sorted;  // the same, in order: one run
  for (const auto& [zone, value] : reference) {
    REQUIRE(table.find(zone));
    CHECK(table.at(zone).value == value);
    sorted.Touch(Kind::kValue, zone, false) = value;
  }
  for (uint64_t zone = 0; zone < 20'000; ++zone)
    CHECK(table.find(zone).has_value() == reference.contains(zone));
  CHECK(table == sorted);
  CHECK(sorted == table);
}

TEST_CASE("zone attributes given back their slack take more and find them all") {
  ZoneAttributeTable t;
  for (uint64_t zone : {10, 20, 30, 5, 25, 1}) t.Touch(Kind::kValue, zone, false) = zone;  // three runs
  t.ShrinkToFit();
  t.Touch(Kind::kValue, 5, true) = 5;  // in the second run, moved back to its full size below
  t.Touch(Kind::kValue, 7, false) = 7;
  t.Touch(Kind::kColor, 5, true) = 5;
  t.Touch(Kind::kValue, 40, false) = 40;
  t.Touch(Kind::kColor, 25, true) = 25;
  t.Touch(Kind::kValue, 2, false) = 2;
  CHECK(t.size() == 9);
  for (uint64_t zone : {1, 2, 5, 7, 10, 20, 25, 30, 40}) CHECK(t.at(zone).value == zone);
  CHECK(t.at(5).color == 5);
  CHECK(t.at(25).color == 25);
}

TEST_CASE("the builder gives a zone the attributes that came while it was innermost, late or again") {
  StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "Outer", "f", "a.cpp", 10).SourceLocation(2, "Inner", "g", "a.cpp", 20);
  w.ThreadContext(7);
  w.ZoneBegin(1, 100).ZoneValue(1);                                      // zone 0
  w.ZoneBegin(2, 110).ZoneValue(2).ZoneEnd(120);                         // zone 1
  w.ZoneText("outer").ZoneBegin(2, 130).ZoneText("inner").ZoneEnd(140);  // zone 2
  w.ZoneName("renamed").ZoneValue(3).ZoneEnd(200);                       // zone 0 again
  w.ZoneBegin(2, 210).ZoneEnd(220);                                      // zone 3: none
  const auto m = gnomon::test::BuildWholeModel(w);
  REQUIRE(m.threads.size() == 1);
  const auto& t = m.threads[0];
  REQUIRE(t.zones.size() == 4);
  CHECK(t.attributes.size() == 3);
  CHECK(t.attributes.at(0).value == 3);
  CHECK(t.attributes.at(0).text == "outer");
  CHECK(m.ZoneName(t, 0) == "renamed");
  CHECK(t.attributes.at(1).value == 2);
  CHECK(t.attributes.at(2).text == "inner");
  CHECK(!t.attributes.at(2).has_value);
  CHECK(!t.attributes.find(3));
  CHECK((t.zones[3].flags & gnomon::server::kZoneHasAttributes) == 0);
}

TEST_CASE("attributes after the goodbye (which gives back the model's slack) go where they belong") {
  StreamWriter w;
  w.AppInfo("app").SourceLocation(1, "A", "f", "a.cpp", 10);
  w.ThreadContext(1).ZoneBegin(1, 100).ZoneBegin(1, 110).ZoneValue(1).ZoneEnd(120).ZoneValue(
      2);  // zone 0 late
  w.End(130);
  w.ZoneValue(3).ZoneBegin(1, 140).ZoneValue(4).ZoneEnd(150).ZoneEnd(160);
  const auto m = gnomon::test::BuildWholeModel(w);
  REQUIRE(m.threads.size() == 1);
  const auto& t = m.threads[0];
  REQUIRE(t.zones.size() == 3);
  CHECK(t.attributes.at(0).value == 3);
  CHECK(t.attributes.at(1).value == 1);
  CHECK(t.attributes.at(2).value == 4);
}
