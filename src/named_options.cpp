#include "named_options.hpp"

#include <algorithm>

namespace treeguard {

NamedOptions::NamedOptions(const std::vector<std::string>& args) {
  m_all = args.size() < 2 || args[1] != "run";
  for (std::size_t i = 2; i < args.size() && !m_all && args[i] != "--"; ++i) {
    const std::string& word = args[i];
    if (word.rfind("--", 0) == 0) {
      m_long.push_back(std::string_view(word).substr(0, word.find('=')));
      m_all = m_long.back() == "--help" || m_long.back() == "--help-all";
    } else if (word.size() > 1 && word.front() == '-') {
      m_short.append(word, 1);
      m_all = word.find('h') != std::string::npos;
    }
  }
}

bool NamedOptions::operator()(std::string_view names) const {
  if (m_all) {
    return true;
  }
  for (std::size_t start = 0; start < names.size();) {
    const std::size_t end = std::min(names.find(',', start), names.size());
    const std::string_view name = names.substr(start, end - start);
    if (name.size() == 2 && name[0] == '-'
            ? m_short.find(name[1]) != std::string::npos
            : std::find(m_long.begin(), m_long.end(), name) != m_long.end()) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace treeguard
