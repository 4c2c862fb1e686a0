// libFuzzer target for parse_record(), the parser of untrusted record files.
// Properties checked on every input, beyond "no crash, no sanitizer report":
// whatever parses also validates, and serializing it parses back to the
// same record (so the writer and the reader agree on every accepted shape).
#include "record.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = treeguard::parse_record(text);
  if (!parsed) {
    // The reason is printed to users: it must never be empty.
    if (parsed.error().message().empty()) {
      __builtin_trap();
    }
    return 0;
  }
  if (!treeguard::validate_record(*parsed)) {
    __builtin_trap();
  }
  const std::string again = treeguard::serialize_record(*parsed);
  auto reparsed = treeguard::parse_record(again);
  if (!reparsed || *reparsed != *parsed || treeguard::serialize_record(*reparsed) != again) {
    __builtin_trap();
  }
  return 0;
}
