// The nested-run protocol: what a run nested in a cgroup leaf says to the
// guardian of the run whose leaf holds it, and what that guardian answers
// (DESIGN.md [nested]). The guardian listens on a unix socket,
// nested_runs_socket(); the nested controller connects, says its
// announcement line and reads the answer; taken, it holds the connection
// for the run. Who announced is the socket's peer (its credentials and
// pidfd), never a word of the line: the line says which run, and the
// guardian acts for it only on that peer's death. Only the words are here;
// the sockets are the platform's (platform/linux/guardian_nested.cpp).
//
// Words are separated by one space; each is percent-encoded (every byte
// that is not a printable ASCII character other than '%' becomes %XX), so
// that a path or an argument holding spaces or newlines is one word.
#pragma once

#include "identity.hpp"
#include "record.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// Where a cgroup run's guardian listens for the runs nested in its leaf (a
// unix socket in the state directory's "nested" directory). Listened on
// while that guardian guards (from before the run's COMMAND starts until it
// is dismissed): what the run advertises; nobody listening, a nested run
// guards itself.
inline std::filesystem::path nested_runs_socket(const std::filesystem::path& state_dir,
                                                const std::string& run_id) {
  return state_dir / "nested" / run_id;
}

// A line longer than this is not one of the protocol's: the guardian stops
// reading that connection and never acts on it.
inline constexpr std::size_t k_max_protocol_line = 16 * 1024;

// What a nested controller says first: its run id, itself as it sees
// itself (pid and start time: the guardian takes it only from a peer in its
// own pid namespace, where they are the same), the leaf it will make (once
// taken), the innermost run it runs inside (the one its leftovers go to with
// --leftovers outer; "-" for none), how the run drains after its
// controller's death (its signal and --kill-after in ns, "TERM/10000000000";
// "-": the defaults), its working directory and COMMAND:
//   "A RUN-ID PID START LEAF INNERMOST DRAIN CWD ARG...\n"
// COMMAND's words are cut so that the line stays well within
// k_max_protocol_line (the last word then says how much was left out).
struct Announcement {
  std::string run_id;
  ProcessIdentity controller;
  std::string leaf;
  std::string innermost;
  RecordedDrain drain;
  std::string cwd;
  std::vector<std::string> command;
};

std::string announcement_line(const Announcement& announcement);

// The announcement in `line` (without its newline); nullopt when it is not
// one: another word first, a field missing, a run id that is not one.
std::optional<Announcement> parse_announcement(std::string_view line);

// The guardian's answer to an announcement, one line:
//   "G PID START LEAF\n"  taken: the guardian (its identity) holds the
//                         run's record and guards the run; LEAF is the leaf
//                         of the innermost run the announcement named, when
//                         the guardian knows it ("-" when not);
//   "R CODE LINE...\n"    refused by the dispatch gate, which the guardian
//                         answers for the runs it holds: nothing is to be
//                         launched; exit CODE, each LINE a finding;
//   "N WHY\n"             not taken (WHY: the reason, for -v): the run
//                         guards itself, as a run that is not nested does.
struct Answer {
  enum class Kind { taken, refused, not_taken };
  Kind kind = Kind::not_taken;
  ProcessIdentity guardian;
  std::string innermost_leaf;  // taken: "" when not known
  int exit_code = 0;           // refused
  std::vector<std::string> lines;
  std::string why;  // not taken
};

std::string answer_line(const Answer& answer);
std::optional<Answer> parse_answer(std::string_view line);

// What a run taken says later, on the same connection: its record as it
// stands, for what evidence needs of it (a forced kill's authority, an
// ambiguous or failed end, a hand-over), to be written into the enclosing
// run's record, durably or not:
//   "E DURABLE RECORD\n"  (DURABLE: 1 or 0; RECORD: the record's JSON)
// answered "K\n" once written (durably, when asked), or "X WHY\n". A
// record is longer than other lines: up to k_max_evidence_line.
inline constexpr std::size_t k_max_evidence_line = 512 * 1024;
std::string evidence_line(std::string_view record_json, bool durable);
struct Evidence {
  bool durable = false;
  std::string record_json;
};
std::optional<Evidence> parse_evidence(std::string_view line);
std::string evidence_answer(const std::optional<std::string>& why_not);
// nullopt: written; else why not.
std::optional<std::optional<std::string>> parse_evidence_answer(std::string_view line);

// What `treeguard status` asks a guardian on a connection of its own:
//   "Q\n", answered with one "H RECORD\n" per run it holds, then ".\n".
inline constexpr std::string_view k_query_line = "Q\n";
std::string held_line(std::string_view record_json);
inline constexpr std::string_view k_end_of_held = ".\n";
// The record's JSON of a held line; nullopt when `line` is not one.
std::optional<std::string> parse_held(std::string_view line);

}  // namespace treeguard
