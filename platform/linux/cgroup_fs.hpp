// Finding and handling the cgroup v2 hierarchy: from /proc/self/mountinfo,
// never assumed at /sys/fs/cgroup (hybrid hosts mount it elsewhere).
#pragma once

#include "result.hpp"

#include <optional>
#include <string>

namespace treeguard::platform {

// The cgroup2 mount point, e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified.
Result<std::string> cgroup2_mount();

// Parse mountinfo text for the first cgroup2 mount point (unit tested).
std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo);

// treeguard's own cgroup v2 directory (mount + the "0::" line of
// /proc/self/cgroup).
Result<std::string> own_cgroup_dir();

// Resolve --cgroup-parent: an absolute path under the mount, or a path
// inside the hierarchy ("/tg-tests"). Refuses anything outside the mount.
Result<std::string> resolve_cgroup_parent(const std::string& requested);

// Read a cgroup file whole (cgroup.events, cgroup.procs).
Result<std::string> read_cgroup_file(const std::string& path);

// The process's cgroup v2 path relative to the mount ("0::" line of
// /proc/PID/cgroup), nullopt if it is gone.
std::optional<std::string> process_cgroup(int pid);

// `path` (absolute, under the mount) as /proc/PID/cgroup shows it.
std::string cgroup_relative(const std::string& mount, const std::string& path);

// "populated 1" -> true. nullopt when the text has no populated line.
std::optional<bool> parse_populated(const std::string& events);

}  // namespace treeguard::platform
