// The few things main needs from the platform before anything else runs.
#pragma once

#include <string>

namespace treeguard {

// First thing in main: block the signals treeguard forwards, so none is
// lost or acted on by default before the loop reads it.
void host_init();

// A new run id, "YYYYMMDDTHHMMSS-<pid>-<4 hex>": sortable, unique per host.
std::string new_run_id();

} // namespace treeguard
