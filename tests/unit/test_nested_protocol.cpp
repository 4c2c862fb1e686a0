// The words a nested run and the enclosing run's guardian say
// (nested_protocol.hpp): every field survives spaces, newlines and '%';
// the old three-word announcement, a line of another kind and a bad run id
// are no announcement; answers read back as written.
#include "nested_protocol.hpp"

#include <doctest/doctest.h>

using namespace treeguard;

TEST_SUITE_BEGIN("treeguard::nested_protocol");

namespace {

Announcement sample() {
  return Announcement{"20261206T000000-42-abcd",
                      {4242, 987654321},
                      "/sys/fs/cgroup/a b/treeguard-20261206T000000-42-abcd",
                      "20261206T000000-41-abcd",
                      {"USR1", 3000000000},
                      "/home/u/with space/%20",
                      {"cc", "-DX=\"a b\"", "line\nbreak", "", "caf\xc3\xa9"}};
}

std::string without_newline(const std::string& line) {
  REQUIRE(!line.empty());
  CHECK(line.back() == '\n');
  return line.substr(0, line.size() - 1);
}

}  // namespace

TEST_CASE("nested protocol: an announcement reads back as written, on one line") {
  const Announcement said = sample();
  const std::string line = announcement_line(said);
  CHECK(line.find('\n') == line.size() - 1);
  const auto read = parse_announcement(without_newline(line));
  REQUIRE(read);
  CHECK(read->run_id == said.run_id);
  CHECK(read->controller == said.controller);
  CHECK(read->leaf == said.leaf);
  CHECK(read->innermost == said.innermost);
  CHECK(read->drain.signal == said.drain.signal);
  CHECK(read->drain.kill_after_ns == said.drain.kill_after_ns);
  CHECK(read->cwd == said.cwd);
  CHECK(read->command == said.command);
}

TEST_CASE("nested protocol: what is not an announcement") {
  const std::string id = "20261206T000000-42-abcd";
  // The line earlier versions said: no leaf, no command.
  CHECK_FALSE(parse_announcement("A " + id + " 4242 987654321"));
  CHECK(parse_announcement("A " + id + " 4242 9 /l - - / cc"));
  CHECK(parse_announcement("A " + id + " 4242 9 /l - - / cc")->innermost.empty());
  // No drain said: the defaults'.
  CHECK(parse_announcement("A " + id + " 4242 9 /l - - / cc")->drain.signal == "TERM");
  CHECK(parse_announcement("A " + id + " 4242 9 /l - KILL/0 / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l - TERM / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l - TERM/-1 / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l - /5 / cc"));
  CHECK_FALSE(parse_announcement("B " + id + " 4242 9 /l - - / cc"));
  CHECK_FALSE(parse_announcement("A not-a-run 4242 9 /l - - / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " -1 9 /l - - / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 x /l - - / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l%2 - - / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l - - /"));
  CHECK_FALSE(parse_announcement(""));
}

TEST_CASE("nested protocol: a long COMMAND is cut, and says so") {
  Announcement said = sample();
  said.command = {"cc"};
  for (int i = 0; i < 100; ++i) {
    said.command.push_back(std::string(100, 'x'));
  }
  const std::string line = announcement_line(said);
  CHECK(line.size() < k_max_protocol_line);
  const auto read = parse_announcement(without_newline(line));
  REQUIRE(read);
  CHECK(read->command.size() < said.command.size());
  CHECK(read->command.back().find("more argument(s) not announced") != std::string::npos);
}

TEST_CASE("nested protocol: answers read back as written") {
  const auto taken = parse_answer(without_newline(
      answer_line(Answer{Answer::Kind::taken, {77, 88}, "/sys/fs/cgroup/x y", 0, {}, {}})));
  REQUIRE(taken);
  CHECK(taken->kind == Answer::Kind::taken);
  CHECK(taken->guardian == ProcessIdentity{77, 88});
  CHECK(taken->innermost_leaf == "/sys/fs/cgroup/x y");
  const auto unknown = parse_answer(
      without_newline(answer_line(Answer{Answer::Kind::taken, {77, 88}, "", 0, {}, {}})));
  REQUIRE(unknown);
  CHECK(unknown->innermost_leaf.empty());
  const auto refused = parse_answer(without_newline(answer_line(
      Answer{Answer::Kind::refused, {}, {}, 121, {"dispatch refused: run X failed", "b"}, {}})));
  REQUIRE(refused);
  CHECK(refused->kind == Answer::Kind::refused);
  CHECK(refused->exit_code == 121);
  CHECK(refused->lines == std::vector<std::string>{"dispatch refused: run X failed", "b"});
  const auto not_taken = parse_answer(without_newline(
      answer_line(Answer{Answer::Kind::not_taken, {}, {}, 0, {}, "busy: 3 nested runs"})));
  REQUIRE(not_taken);
  CHECK(not_taken->kind == Answer::Kind::not_taken);
  CHECK(not_taken->why == "busy: 3 nested runs");
  CHECK_FALSE(parse_answer("G 77 88"));
  CHECK_FALSE(parse_answer("G 0 88 -"));
  CHECK_FALSE(parse_answer("R 0"));
  CHECK_FALSE(parse_answer("X"));
}

TEST_CASE("nested protocol: evidence and what status is told read back as written") {
  const std::string json = "{\"format\":\"treeguard-record/1\"}\n";
  const auto durable = parse_evidence(without_newline(evidence_line(json, true)));
  REQUIRE(durable);
  CHECK(durable->durable);
  CHECK(durable->record_json + "\n" == json);
  const auto lazy = parse_evidence(without_newline(evidence_line(json, false)));
  REQUIRE(lazy);
  CHECK_FALSE(lazy->durable);
  CHECK_FALSE(parse_evidence("E 2 {}"));
  CHECK_FALSE(parse_evidence("A 1 {}"));
  const auto written = parse_evidence_answer(without_newline(evidence_answer(std::nullopt)));
  REQUIRE(written);
  CHECK_FALSE(*written);
  const auto refused =
      parse_evidence_answer(without_newline(evidence_answer(std::string("read-only file system"))));
  REQUIRE(refused);
  REQUIRE(*refused);
  CHECK(**refused == "read-only file system");
  CHECK_FALSE(parse_evidence_answer("Y"));
  CHECK(parse_held(without_newline(held_line(json)))
        == std::optional<std::string>(json.substr(0, json.size() - 1)));
  CHECK_FALSE(parse_held("."));
}

TEST_SUITE_END();
