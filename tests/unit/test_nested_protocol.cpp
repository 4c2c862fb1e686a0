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
  CHECK(read->cwd == said.cwd);
  CHECK(read->command == said.command);
}

TEST_CASE("nested protocol: what is not an announcement") {
  const std::string id = "20261206T000000-42-abcd";
  // The line earlier versions said: no leaf, no command.
  CHECK_FALSE(parse_announcement("A " + id + " 4242 987654321"));
  CHECK_FALSE(parse_announcement("B " + id + " 4242 9 /l / cc"));
  CHECK_FALSE(parse_announcement("A not-a-run 4242 9 /l / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " -1 9 /l / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 x /l / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l%2 / cc"));
  CHECK_FALSE(parse_announcement("A " + id + " 4242 9 /l /"));
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
  const auto taken = parse_answer(without_newline(answer_line(Answer{true, {77, 88}, {}})));
  REQUIRE(taken);
  CHECK(taken->taken);
  CHECK(taken->guardian == ProcessIdentity{77, 88});
  const auto refused =
      parse_answer(without_newline(answer_line(Answer{false, {}, "busy: 3 nested runs"})));
  REQUIRE(refused);
  CHECK_FALSE(refused->taken);
  CHECK(refused->why == "busy: 3 nested runs");
  CHECK_FALSE(parse_answer("G 77"));
  CHECK_FALSE(parse_answer("G 0 88"));
  CHECK_FALSE(parse_answer("X"));
}

TEST_SUITE_END();
