// Finding and handling the cgroup v2 hierarchy: from /proc/self/mountinfo,
// never assumed at /sys/fs/cgroup (hybrid hosts mount it elsewhere).
#pragma once

#include "result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace treeguard::platform {

// The cgroup2 mount point, e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified.
Result<std::string> cgroup2_mount();

// Parse mountinfo text for the first cgroup2 mount point (unit tested).
std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo);

// treeguard's own cgroup v2 directory (mount + the "0::" line of
// /proc/self/cgroup).
Result<std::string> own_cgroup_dir();

// The same from `relative`, this process's process_cgroup() as the caller
// read it already (a run reads its own cgroup once for its plan).
Result<std::string> own_cgroup_dir(const std::optional<std::string>& relative);

// Resolve --cgroup-parent: an absolute path under the mount, or a path
// inside the hierarchy ("/tg-tests"). Refuses anything outside the mount.
Result<std::string> resolve_cgroup_parent(const std::string& requested);

// Read a cgroup file whole (cgroup.events, cgroup.procs).
Result<std::string> read_cgroup_file(const std::string& path);

// Write `text` to the cgroup file `path` in one write (cgroup.kill,
// cgroup.freeze, cgroup.subtree_control, cgroup.procs); never through a
// symlink.
Result<void> write_cgroup_file(const std::string& path, const std::string& text);

// The process's cgroup v2 path relative to the mount ("0::" line of
// /proc/PID/cgroup), nullopt if it is gone.
std::optional<std::string> process_cgroup(int pid);

// `path` is the cgroup `top` or a cgroup below it (both as the same kind of
// path: absolute under the mount, or relative to it).
bool cgroup_within(const std::string& path, const std::string& top);

// `path` (absolute, under the mount) as /proc/PID/cgroup shows it.
std::string cgroup_relative(const std::string& mount, const std::string& path);

// "populated 1" -> true. nullopt when the text has no populated line.
std::optional<bool> parse_populated(const std::string& events);

// The value of `key` in a flat-keyed cgroup file ("usage_usec 1234" lines of
// cpu.stat, "oom_kill 2" of memory.events); nullopt without that line.
std::optional<std::uint64_t> parse_flat_key(const std::string& text, const std::string& key);

// `name` is one of the space-separated words of `list` (cgroup.controllers,
// cgroup.subtree_control).
bool has_word(const std::string& list, const std::string& name);

// The words of `list`, one space between them, or "none" when it has none.
std::string words_or_none(const std::string& list);

// Make `parent` give its child cgroups each of `controllers` (its
// cgroup.subtree_control), as the kernel's and systemd's delegation rules
// allow: a controller must be given to `parent` from above (its
// cgroup.controllers; nothing above `parent` is touched), and a non-root
// cgroup that holds processes may not give controllers (the no-internal-
// processes rule) -- when the only process it holds is treeguard itself,
// treeguard first moves itself into a sub-cgroup of its own
// (k_controller_cgroup). The error names what is missing.
Result<void> give_controllers(const std::string& parent,
                              const std::vector<std::string>& controllers);

// Whether give_controllers could: its checks, with nothing written.
Result<void> check_controllers(const std::string& parent,
                               const std::vector<std::string>& controllers);

// Where treeguard moves itself below its own cgroup to let that cgroup give
// controllers to its leaves; shared by the runs of one cgroup, never removed
// by treeguard (it is in it), removed with the unit that holds it.
inline constexpr const char* k_controller_cgroup = "treeguard-controller";

}  // namespace treeguard::platform
