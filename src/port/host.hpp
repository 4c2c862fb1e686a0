// The few things main needs from the platform before anything else runs.
#pragma once

#include "signal_name.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace treeguard {

// First thing in main: block the signals treeguard forwards, so none is
// lost or acted on by default before the loop reads it. On Windows, a
// treeguard.exe its controller started as a run's guardian (DESIGN.md
// [guardian]) does its work here and exits.
void host_init();

// Whether `signal` was ignored when treeguard started (host_init took the
// inherited dispositions). Such a signal stays ignored, in treeguard and in
// COMMAND: it is neither passed on nor a stop request (TERM and ALRM
// excepted, which treeguard always handles). POSIX; false on Windows.
bool ignored_at_start(Signal signal);

// COMMAND starts with `signal` at its default even if it was ignored at
// start: timeout(1)'s grammar, for its deadline signal and ALRM (timeout
// handles those itself, so an inherited ignore of them never reaches its
// COMMAND). Call before the run starts COMMAND. No-op on Windows.
void default_in_command(Signal signal);

// The command line as UTF-8 strings. POSIX: argv as given (bytes), but for
// argv[0] of a treeguard re-executed in a systemd scope: the name the user
// called it by (a link named timeout), not its executable's path. Windows:
// the UTF-16 command line, converted; argv there is in the ANSI code page
// and loses every character the code page cannot represent, which would
// then reach COMMAND as '?'.
std::vector<std::string> host_arguments(int argc, char** argv);

// How wide --help may be: the terminal's columns when standard output is
// one, else 80.
std::size_t terminal_columns();

// The last step of `treeguard run` when COMMAND died of signal `number`
// (the platform's N of 128+N), or that signal made treeguard end the run:
// end by that same signal, as timeout(1) does, so that the caller sees what
// it would see without treeguard (a shell loop stops on Ctrl-C, make says
// "Segmentation fault"). Called after the teardown, the record and the
// report. Returns where it does not end the process: as PID 1 (a pid
// namespace's init is not killed by its own signals), on Windows (exit codes
// are kept), or when core dumps cannot be turned off; the caller then exits
// 128+N.
void end_by_signal(int number);

// The command line of the build this treeguard was started from, for
// advice a person pastes (`treeguard run -- ninja`): walking up from its
// parent, past the shells a build tool runs each step with (`sh -c ...`),
// the topmost of the processes that are not shells (ninja; cmake above
// the ninja of `cmake --build`) below the first shell that is not such a
// step's (the person's, a CI script's). Empty when there is none (started
// by a shell itself), when an ancestor cannot be read, and on Windows.
std::vector<std::string> build_command();

// A new run id, "YYYYMMDDTHHMMSS-<pid>-<4 hex>": sortable, unique per host.
std::string new_run_id();

}  // namespace treeguard
