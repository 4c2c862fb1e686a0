// How recorded text is shown: a record is untrusted input, and what it
// holds may reach a terminal or an error message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace treeguard {

// Recorded text as it may reach a terminal or a message: control bytes
// become '?' (a hostile record must not drive the terminal), and text past
// `limit` characters is cut with "...".
std::string printable(std::string_view text, std::size_t limit = 60);

// Text for a one-line message, nothing lost: control bytes are written as
// \n, \r, \t or \xHH, so a value holding a newline (an environment
// variable, a file name) still gives one line that says what it was.
std::string escaped(std::string_view text);

// `word` as one shell word, for a command printed to be pasted: as it is
// when it holds only characters no shell treats specially in an argument
// ('=' is plain there, except first: zsh's =command), else in single
// quotes (a ' inside becomes '\'').
std::string shell_quoted(std::string_view word);

}  // namespace treeguard
