// One I/O completion port carries everything the Windows controller waits
// for: the job's messages, COMMAND's exit (a thread-pool wait posts it) and
// the console's control events (Ctrl-C, Ctrl-Break, close), which the
// handler host_init() installs posts here instead of acting on them.
#pragma once

#include <windows.h>

namespace treeguard::platform {

// Completion keys: who posted a packet.
inline constexpr ULONG_PTR k_key_job = 1;      // JOB_OBJECT_MSG_* (bytes: the message)
inline constexpr ULONG_PTR k_key_child = 2;    // COMMAND's process handle was signalled
inline constexpr ULONG_PTR k_key_console = 3;  // bytes: CTRL_C_EVENT, CTRL_BREAK_EVENT...

// The port; created by host_init() (first thing in main).
HANDLE event_port();

// Create the port and install the console control handler. Idempotent.
void install_console_handler();

}  // namespace treeguard::platform
