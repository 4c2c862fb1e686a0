#include "printable.hpp"

#include "identity.hpp"

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

std::string escaped(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string name_text(std::string_view text, std::size_t limit) {
  std::string out;
  for (char c : text) {
    if (out.size() >= limit) {
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte > 0x7e || c == '"' || c == '\\') ? '?' : c;
  }
  return out;
}

std::string describe_member(const MemberInfo& member) {
  const std::string pid = "pid " + std::to_string(member.pid);
  // A record is untrusted: its names are shown as name_text() keeps them.
  const std::string comm = name_text(member.comm, k_max_comm);
  return comm.empty() ? pid : comm + " (" + pid + ")";
}

std::string describe_members(const std::vector<MemberInfo>& members, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < members.size() && i < shown; ++i) {
    out += (i == 0 ? "" : ", ") + describe_member(members[i]);
  }
  if (members.size() > shown) {
    out += " and " + std::to_string(members.size() - shown) + " more";
  }
  return out;
}

std::string shell_quoted(std::string_view word) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || std::string_view("_-./:@%+,=").find(c) != std::string_view::npos;
  };
  // A word starting with '=' is zsh's =command expansion: quoted.
  bool all_plain = !word.empty() && word.front() != '=';
  for (char c : word) {
    all_plain = all_plain && plain(c);
  }
  if (all_plain) {
    return std::string(word);
  }
  std::string out = "'";
  for (char c : word) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

}  // namespace treeguard
