// Which of `run`'s options a command line names (cli.cpp declares only
// those). CLI11 builds each option it is given (some 14,000 instructions
// apiece), and a launcher parses one command line per compile: a `run`
// command line that asks for no help names only the options its words
// before "--" name (CLI11 sees no word after it), counting every letter of
// a short word ("-vq", "-t5") and the name of a long one ("--timeout=5").
// An option no word names parses nothing: declaring only the named ones
// gives the same result. Anything else (--help, which lists every option;
// a command other than `run`) names them all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

class NamedOptions {
public:
  // `args` is argv (argv[0] included); it must outlive this.
  explicit NamedOptions(const std::vector<std::string>& args);

  // `names` as CLI11 takes them ("-t,--timeout"): one of them is named.
  bool operator()(std::string_view names) const;

  // Every option is (help, or not a `run` command line).
  bool all() const { return m_all; }

private:
  bool m_all = true;
  std::vector<std::string_view> m_long;  // "--timeout" (of "--timeout=5")
  std::string m_short;                   // every letter of every short word
};

}  // namespace treeguard
