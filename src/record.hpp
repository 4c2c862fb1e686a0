// The run record: what a run leaves in the state directory from spawn on
// (DESIGN.md [records]), so that a later run, `status`, `sweep` or `resolve`
// can tell whether the tree it owned is proven gone.
//
// A record is serialized as one JSON object marked
// "format": "treeguard-record/1". The file is written by treeguard, but it is
// read back as UNTRUSTED input: parse_record() accepts exactly the shape that
// serialize_record() writes, checks every value (run id, pids, paths,
// sizes), and returns an Error naming the first thing that is wrong. It
// never throws and never acts on a partial record.
#pragma once

#include "identity.hpp"  // ProcessIdentity, MemberInfo
#include "journal.hpp"
#include "port/boundary.hpp"  // BoundaryKind
#include "printable.hpp"      // how recorded text is shown
#include "result.hpp"
#include "run_id.hpp"      // is_valid_run_id, is_valid_boot_id
#include "wall_clock.hpp"  // unix_time_ns: the times a record holds

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// The format marker of every record this version writes and accepts.
inline constexpr std::string_view k_record_format = "treeguard-record/1";

// Largest record file parse_record() accepts, in bytes.
inline constexpr std::size_t k_max_record_bytes = 1024 * 1024;

// Largest number of members parse_record() accepts.
inline constexpr std::size_t k_max_record_members = 100000;

// How many members a record names, whoever writes it (the controller's
// journal, the guardian): enough for the trees people run, small enough
// that a record with them and a long command stays far below
// k_max_record_bytes (about 65 bytes a member). Beyond it the record says
// "members truncated": the boundary (the leaf, the groups the members
// made, the run's marker) still names the rest.
inline constexpr std::size_t k_max_recorded_members = 8000;

// Where the run's boundary is. `address` is the leaf cgroup's absolute path
// (its last component is "treeguard-<run_id>"), "pgid N" for a process
// group, or the job object's name. `pgid` is COMMAND's process group, when
// it leads one.
// The address of a process-group boundary before COMMAND leads its group.
inline constexpr const char* k_pgid_pending = "pgid pending";
// A pid-namespace boundary's address before its init exists; then
// "init pid N".
inline constexpr const char* k_init_pending = "init pending";

// The name of the run's job object (in the session's namespace), which is
// also a job boundary's address: "treeguard-<run_id>". A record naming any
// other job is refused, so sweep can never be pointed at a foreign job.
inline std::string job_object_name(const std::string& run_id) {
  return "treeguard-" + run_id;
}

struct BoundaryAddress {
  BoundaryKind kind = BoundaryKind::process_group;
  std::string address;
  std::optional<long> pgid;
};

// A lifecycle phase ("spawn", "running", "drain", "force", "verify") and
// when it began, in nanoseconds since the Unix epoch.
struct PhaseEntry {
  std::string name;
  std::int64_t at = 0;
};

// Write-ahead authority for a forced kill: made durable before the kill.
struct AuthorityEntry {
  std::int64_t at = 0;               // ns since the Unix epoch
  std::string action;                // "cgroup.kill", "SIGKILL"
  std::vector<std::string> targets;  // "/sys/fs/cgroup/.../treeguard-ID", "pid 12 (start 3456)"
  std::string reason;                // "deadline 2s passed"
  std::string by;                    // "controller pid 7", "guardian pid 9", "sweep uid 0"
};

// How the run drains (DESIGN.md [drain]): what whoever takes it down after
// its controller died does first, as the controller would have.
struct RecordedDrain {
  std::string signal = "TERM";     // --signal, as signal_name() names it
  std::int64_t kill_after_ns = 0;  // --kill-after; 0 under -k 0 (no forced kill asked for)
};

// A human's word that an unresolved run is dealt with (`treeguard resolve`).
struct Resolution {
  std::string why;
  std::int64_t at = 0;  // ns since the Unix epoch
  std::string by;       // "uid 1000"
};

struct RunRecord {
  std::string run_id;   // YYYYMMDDTHHMMSS-<pid>-<4 hex>; see is_valid_run_id()
  std::string boot_id;  // /proc/sys/kernel/random/boot_id: lowercase UUID
  // The machine's identity (/etc/machine-id; Windows: MachineGuid), so that
  // a record of another boot can be told to be of an earlier boot of this
  // machine (everything of it ended with that boot) or of another machine
  // sharing the directory (not judged here). Absent in records written
  // before it was recorded, or when the host has none: such a record of
  // another boot cannot be proven to be this machine's.
  std::optional<std::string> machine_id;
  // The controller's pid namespace (the inode of /proc/self/ns/pid): its
  // pids mean nothing in another one. Absent in records written before it
  // was recorded; they are judged as if from this namespace.
  std::optional<std::uint64_t> pid_ns;
  // When that namespace's init (its PID 1) started, in clock ticks since
  // boot, as start times are. An inode number is handed to a new namespace
  // once the old one is gone; the pair of both is never reused within a
  // boot. Absent in records written before it was recorded, or where the
  // controller could not see its namespace's init (a /proc of another
  // namespace); such a record is told apart by its inode only.
  std::optional<unsigned long long> pid_ns_init;
  ProcessIdentity controller;
  std::optional<ProcessIdentity> guardian;
  // The process the run's orphans are handed to once the controller is
  // gone (Linux: its nearest child subreaper above, or its namespace's
  // init): the guardian's parent when it started, since the guardian was
  // orphaned the same way. A process carrying the run's marker whose live
  // parent is neither the run's nor a reaper is someone else's (the census,
  // run_processes.hpp). Absent in records written before it was recorded,
  // or without a guardian: then only PID 1 is taken for a reaper.
  std::optional<ProcessIdentity> reaper;
  // The guardian's last look at the run's tree before the controller died,
  // in clock ticks since boot as start times count (census.hpp, Claim): a
  // process started before it that the guardian did not see as a member is
  // a stranger, whatever its environment says. Written by the guardian's
  // takedown when the record names every member it saw; absent otherwise
  // (then only a settler's own rules apply).
  std::optional<unsigned long long> last_look;
  BoundaryAddress boundary;
  // The run's drain. Absent in records written before it was recorded:
  // such a run is drained as the defaults say (RecordedDrain's).
  std::optional<RecordedDrain> drain;
  std::vector<std::string> command;  // never empty
  std::string cwd;
  std::vector<PhaseEntry> phases;
  std::vector<AuthorityEntry> authority;
  std::vector<MemberInfo> members;
  Disposition disposition = Disposition::pending;
  std::optional<int> exit_code;
  std::vector<std::string> notes;  // "controller lost", ...
  std::optional<Resolution> resolution;
  // The runs nested in this run's leaf whose records its guardian held
  // (their clean runs leave nothing here): each one's record as far as
  // evidence needs it, written by that guardian: a forced kill's authority
  // (durable before the kill), an ambiguous or failed end, a hand-over.
  // One level only (a nested record holds none), at most
  // k_max_nested_records of them. Absent in records that hold none.
  std::vector<RunRecord> nested;
};

// How many nested runs' records one record holds (RunRecord::nested).
inline constexpr std::size_t k_max_nested_records = 64;

// Whether `record` can never block dispatch again: pass or resolved, and
// so is every nested run's record it holds. Only such a record is kept
// among the finished ones (RecordStore::finish); one that holds an
// unresolved failed or ambiguous nested run stays open until that is
// resolved.
bool never_blocks_again(const RunRecord& record);

// The nested run's record `run_id` in `record`, or null.
const RunRecord* nested_record(const RunRecord& record, const std::string& run_id);

bool operator==(const BoundaryAddress& a, const BoundaryAddress& b);
bool operator==(const PhaseEntry& a, const PhaseEntry& b);
bool operator==(const AuthorityEntry& a, const AuthorityEntry& b);
bool operator==(const Resolution& a, const Resolution& b);
bool operator==(const RecordedDrain& a, const RecordedDrain& b);
bool operator==(const RunRecord& a, const RunRecord& b);
inline bool operator!=(const RunRecord& a, const RunRecord& b) {
  return !(a == b);
}

// THE cap on what a record names: `record.members` becomes the first
// k_max_recorded_members of `all` (every member seen, in the order seen),
// and the note "members truncated" is added once when some were left out.
void keep_members(RunRecord& record, const std::vector<MemberInfo>& all);

// The schema's pieces live in one file each: record.cpp (equality),
// record_validate.cpp (validate_record), record_json.cpp (serialize_record,
// parse_record); run_id.hpp, printable.hpp and wall_clock.hpp hold the
// identifier grammar, the scrubber and the clock records use.

// A cgroup leaf's path as records name it: absolute, no empty, "." or ".."
// component, and named after its run (its last component is
// "treeguard-<run_id>"), so that nothing can be pointed at another cgroup.
Result<void> validate_cgroup_address(std::string_view address, const std::string& run_id);

// Whether the cgroup path `leaf` is below the leaf `outer` (a path prefix
// ending at a '/'): the one test of a leaf's being inside another's.
bool leaf_within(const std::string& leaf, const std::string& outer);

// Check everything parse_record() checks beyond the JSON shape: run id, boot
// id, pids > 0, non-negative times, the boundary's address, sizes. The
// error's context names the field ("controller.pid: must be > 0").
Result<void> validate_record(const RunRecord& record);

// The record as one line of compact JSON plus "\n". Strings that are not
// valid UTF-8 have their bad bytes replaced by U+FFFD (JSON cannot carry
// them); for valid UTF-8, parse_record(serialize_record(r)) == r. Does not
// validate: call validate_record() first (RecordStore::save does).
std::string serialize_record(const RunRecord& record);

// Parse UNTRUSTED text. Accepts exactly what serialize_record() writes for a
// record that validate_record() accepts: every field present with its type,
// no unknown or duplicate keys, at most k_max_record_bytes. Never throws.
Result<RunRecord> parse_record(std::string_view text);

}  // namespace treeguard
