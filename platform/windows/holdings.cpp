// What a process holds, on Windows (port/holdings.hpp): the TCP sockets it
// listens on and the UDP sockets it has bound, from the owner tables
// (GetExtendedTcpTable, GetExtendedUdpTable), IPv4 and IPv6. Windows shows
// no other process's files, locks, devices, working directory or standard
// handles without reading its memory, which treeguard does not do: the man
// page says so.
#include "port/holdings.hpp"

#include <fmt/format.h>

#include <winsock2.h>
#include <ws2tcpip.h>
// (after winsock2.h, which it needs)
#include <iphlpapi.h>

#include <vector>

namespace treeguard {

namespace {

// One owner table; empty when the system gives none (Wine may not).
std::vector<unsigned char> owner_table(bool tcp, ULONG family) {
  std::vector<unsigned char> buffer(16 * 1024);
  for (int attempt = 0; attempt < 4; ++attempt) {
    DWORD size = static_cast<DWORD>(buffer.size());
    const DWORD result =
        tcp ? ::GetExtendedTcpTable(buffer.data(), &size, FALSE, family,
                                    TCP_TABLE_OWNER_PID_LISTENER, 0)
            : ::GetExtendedUdpTable(buffer.data(), &size, FALSE, family, UDP_TABLE_OWNER_PID, 0);
    if (result == NO_ERROR) {
      return buffer;
    }
    if (result != ERROR_INSUFFICIENT_BUFFER) {
      return {};
    }
    buffer.resize(size + 4096);  // it may grow between the two calls
  }
  return {};
}

std::string address_text(ULONG family, const void* address, DWORD port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(static_cast<int>(family), address, text, sizeof text) == nullptr) {
    return {};
  }
  const unsigned port_number = ::ntohs(static_cast<u_short>(port));
  return family == AF_INET6 ? fmt::format("[{}]:{}", text, port_number)
                            : fmt::format("{}:{}", text, port_number);
}

// Every socket of the owner tables, as (owner pid, holding).
std::vector<std::pair<DWORD, Holding>> listening_sockets() {
  std::vector<std::pair<DWORD, Holding>> out;
  const auto add = [&](DWORD pid, const char* protocol, const std::string& address) {
    if (!address.empty()) {
      out.emplace_back(pid,
                       Holding{HoldingKind::listening, fmt::format("{} {}", protocol, address)});
    }
  };
  for (bool tcp : {true, false}) {
    const char* protocol = tcp ? "tcp" : "udp";
    if (auto table = owner_table(tcp, AF_INET); !table.empty()) {
      if (tcp) {
        const auto* rows = reinterpret_cast<const MIB_TCPTABLE_OWNER_PID*>(table.data());
        for (DWORD i = 0; i < rows->dwNumEntries; ++i) {
          const auto& row = rows->table[i];
          add(row.dwOwningPid, protocol, address_text(AF_INET, &row.dwLocalAddr, row.dwLocalPort));
        }
      } else {
        const auto* rows = reinterpret_cast<const MIB_UDPTABLE_OWNER_PID*>(table.data());
        for (DWORD i = 0; i < rows->dwNumEntries; ++i) {
          const auto& row = rows->table[i];
          add(row.dwOwningPid, protocol, address_text(AF_INET, &row.dwLocalAddr, row.dwLocalPort));
        }
      }
    }
    if (auto table = owner_table(tcp, AF_INET6); !table.empty()) {
      if (tcp) {
        const auto* rows = reinterpret_cast<const MIB_TCP6TABLE_OWNER_PID*>(table.data());
        for (DWORD i = 0; i < rows->dwNumEntries; ++i) {
          const auto& row = rows->table[i];
          add(row.dwOwningPid, protocol, address_text(AF_INET6, row.ucLocalAddr, row.dwLocalPort));
        }
      } else {
        const auto* rows = reinterpret_cast<const MIB_UDP6TABLE_OWNER_PID*>(table.data());
        for (DWORD i = 0; i < rows->dwNumEntries; ++i) {
          const auto& row = rows->table[i];
          add(row.dwOwningPid, protocol, address_text(AF_INET6, row.ucLocalAddr, row.dwLocalPort));
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<ProcessHoldings> read_holdings(const std::vector<MemberInfo>& members) {
  std::vector<ProcessHoldings> out;
  if (members.empty()) {
    return out;
  }
  const auto sockets = listening_sockets();
  for (std::size_t i = 0; i < members.size() && i < k_holdings_processes; ++i) {
    ProcessHoldings process;
    process.who = members[i];
    for (const auto& [pid, holding] : sockets) {
      if (static_cast<long>(pid) == members[i].pid) {
        process.holds.push_back(holding);
      }
    }
    process.note = "on Windows only listening sockets are read";
    keep_most_telling(process);
    out.push_back(std::move(process));
  }
  return out;
}

}  // namespace treeguard
