// The grammar of the identifiers a record carries: its run id (which names
// files, so nothing else is ever accepted where one is expected) and the
// boot and machine ids it was written under.
#pragma once

#include <optional>
#include <string_view>

namespace treeguard {

// True when `run_id` matches ^[0-9]{8}T[0-9]{6}-[0-9]{1,10}-[0-9a-f]{4}$.
bool is_valid_run_id(std::string_view run_id);

// The pid a valid run id carries: its controller's when it was made (a
// guess at who runs it, never proof); nullopt for anything else.
std::optional<long> run_id_pid(std::string_view run_id);

// True when `id` is a boot id as the kernel prints it
// (/proc/sys/kernel/random/boot_id): a lowercase 8-4-4-4-12 hex UUID.
bool is_valid_boot_id(std::string_view id);

// True when `id` is a machine id as records carry it: 1 to 64 lowercase hex
// digits and dashes (/etc/machine-id's 32 digits; Windows' MachineGuid, a
// UUID).
bool is_valid_machine_id(std::string_view id);

}  // namespace treeguard
