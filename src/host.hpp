// The few things main needs from the platform before anything else runs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace treeguard {

// First thing in main: block the signals treeguard forwards, so none is
// lost or acted on by default before the loop reads it.
void host_init();

// The command line as UTF-8 strings. POSIX: argv as given (bytes). Windows:
// the UTF-16 command line, converted; argv there is in the ANSI code page
// and loses every character the code page cannot represent, which would
// then reach COMMAND as '?'.
std::vector<std::string> host_arguments(int argc, char** argv);

// How wide --help may be: the terminal's columns when standard output is
// one, else 80.
std::size_t terminal_columns();

// A new run id, "YYYYMMDDTHHMMSS-<pid>-<4 hex>": sortable, unique per host.
std::string new_run_id();

}  // namespace treeguard
