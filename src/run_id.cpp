#include "run_id.hpp"

#include <cstddef>

namespace treeguard {

namespace {

bool is_lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

bool is_valid_boot_id(std::string_view id) {
  // 8-4-4-4-12 lowercase hex, as the kernel prints it.
  if (id.size() != 36) {
    return false;
  }
  for (std::size_t i = 0; i < id.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? id[i] != '-' : !is_lower_hex(id[i])) {
      return false;
    }
  }
  return true;
}

bool is_valid_machine_id(std::string_view id) {
  if (id.empty() || id.size() > 64) {
    return false;
  }
  for (char c : id) {
    if (c != '-' && !is_lower_hex(c)) {
      return false;
    }
  }
  return true;
}

bool is_valid_run_id(std::string_view run_id) {
  // YYYYMMDD T HHMMSS - pid{1,10} - hex{4}
  if (run_id.size() < 8 + 1 + 6 + 1 + 1 + 1 + 4) {
    return false;
  }
  for (std::size_t i = 0; i < 15; ++i) {
    if (i == 8 ? run_id[i] != 'T' : !is_digit(run_id[i])) {
      return false;
    }
  }
  if (run_id[15] != '-') {
    return false;
  }
  std::size_t i = 16;
  while (i < run_id.size() && is_digit(run_id[i])) {
    ++i;
  }
  const std::size_t digits = i - 16;
  if (digits < 1 || digits > 10 || i >= run_id.size() || run_id[i] != '-') {
    return false;
  }
  ++i;
  if (run_id.size() - i != 4) {
    return false;
  }
  for (; i < run_id.size(); ++i) {
    if (!is_lower_hex(run_id[i])) {
      return false;
    }
  }
  return true;
}

std::optional<long> run_id_pid(std::string_view run_id) {
  if (!is_valid_run_id(run_id)) {
    return std::nullopt;
  }
  long long pid = 0;
  for (std::size_t i = 16; is_digit(run_id[i]); ++i) {
    pid = pid * 10 + (run_id[i] - '0');
  }
  if (pid <= 0 || pid > 2147483647LL) {
    return std::nullopt;
  }
  return static_cast<long>(pid);
}

}  // namespace treeguard
