// The /proc texts the Linux holdings reader (holdings.cpp) parses, apart so
// that the unit tests can feed them lines: the socket tables of a network
// namespace (/proc/PID/net/tcp, tcp6, udp, udp6, unix) and a descriptor's
// /proc/PID/fdinfo/N.
#pragma once

#include "port/holdings.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace treeguard::platform {

// The sockets of one network namespace worth naming, by inode.
using NamedSockets = std::unordered_map<unsigned long, Holding>;

// One line of /proc/PID/net/tcp or tcp6 (`protocol` "tcp") or udp, udp6
// ("udp"): a TCP socket listening (state 0A) or a UDP socket bound to a
// port and not connected (state 07) goes into `out` as a `listening`
// holding, "tcp 0.0.0.0:8000", "udp [::]:5353". Returns false for a TCP
// line past the listening ones: the kernel lists those first, so the rest
// of the table (every connection of the host) need not be read.
bool parse_inet_socket_line(std::string_view line, std::string_view protocol, NamedSockets& out);

// One line of /proc/PID/net/unix: a socket with a name (a path, or "@name"
// for the abstract namespace) goes into `out`, "(listening)" added for one
// that accepts connections. Unnamed ones (socketpairs, clients) are not
// telling and are left out.
void parse_unix_socket_line(std::string_view line, NamedSockets& out);

// "0100007F:1F90" -> "127.0.0.1:8080"; "00000000000000000000000000000000:1F90"
// -> "[::]:8080". nullopt when the text is not an address.
std::optional<std::string> inet_address(std::string_view hex);

// What /proc/PID/fdinfo/N says that matters here: the open flags (octal),
// and the locks held through that descriptor ("POSIX WRITE", "FLOCK READ").
struct FdInfo {
  int flags = 0;
  std::vector<std::string> locks;
};
FdInfo parse_fdinfo(std::string_view text);

// A device node that is a GPU or an accelerator, by its path.
bool is_accelerator_path(std::string_view path);

}  // namespace treeguard::platform
