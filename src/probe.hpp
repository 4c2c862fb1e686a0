// `treeguard probe`: what this host allows, and why not (contract 2).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace treeguard {

struct ProbeItem {
  std::string name;      // "cgroup v2 writable", "cgroup.kill", "pidfd", ...
  bool available = false;
  std::string detail;    // where, or why not
};

struct ProbeReport {
  std::vector<ProbeItem> items;
  std::string auto_boundary; // what --boundary auto would form here
  std::string auto_detail;
};

// Look at the host. Defined per platform; creates and removes at most one
// empty probe cgroup.
ProbeReport probe_host();

// Print as aligned text, or as one JSON object.
void print_probe(const ProbeReport& report, bool json, std::FILE* out);

} // namespace treeguard
