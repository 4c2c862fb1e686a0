#include "printable.hpp"

namespace treeguard {

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (char c : text) {
    if (out.size() >= limit) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte == 0x7f) ? '?' : c;
  }
  return out;
}

}  // namespace treeguard
