// Checks of single record fields, shared by validate_record() and the JSON
// reader (record_json.cpp), so that a value is judged by one rule whichever
// way it arrives. Internal to the record's implementation files.
#pragma once

#include "result.hpp"

#include <cstdint>
#include <string>

namespace treeguard {

// Largest pid accepted anywhere: pid_t and a Windows process id both fit.
inline constexpr long long k_max_record_pid = 2147483647;

// An error naming the field: "field controller.pid: must be ...".
Error record_error(const std::string& field, const std::string& what);

// A pid between 1 and k_max_record_pid.
Result<void> validate_pid(long long pid, const std::string& field);

// A time (ns since the Unix epoch) that is not negative.
Result<void> validate_time(std::int64_t at, const std::string& field);

}  // namespace treeguard
