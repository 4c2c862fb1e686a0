// `treeguard probe`: what this host allows, and why not (DESIGN.md [plan]).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace treeguard {

struct ProbeItem {
  std::string name;  // "cgroup v2 writable", "cgroup.kill", "pidfd", ...
  bool available = false;
  std::string detail;  // where, or why not
  // False where the question does not arise (cgroup.kill without a
  // writable cgroup): printed "n/a", "available": null in JSON.
  bool applicable = true;
};

struct BoundaryPlan;

struct ProbeReport {
  std::vector<ProbeItem> items;
  // --boundary auto's plan (plan_boundary), strongest first: each candidate,
  // whether it may be formed, and where or why not.
  std::vector<ProbeItem> plan;
  std::string auto_boundary;  // what --boundary auto would form here: the plan's first
  std::string auto_detail;
  // With the process-group fallback: what it loses against a cgroup, and how
  // to get a stronger boundary on this host.
  std::vector<std::string> fallback_notes;
};

// Look at the host. Defined per platform; creates and removes at most one
// empty probe cgroup.
ProbeReport probe_host();

// With the process-group fallback: what it loses against a cgroup, and which
// stronger boundary this host offers and how to get it. `probe` prints
// these under its "boundary auto" line, `run -v` after its fallback line.
// Defined per platform (Windows: none, its job is always there).
std::vector<std::string> fallback_advice();

// Fill plan, auto_boundary and auto_detail from `plan`.
void set_plan(ProbeReport& report, const BoundaryPlan& plan);

// Print as aligned text, or as one JSON object.
void print_probe(const ProbeReport& report, bool json, std::FILE* out);

}  // namespace treeguard
