#include "words.hpp"

std::string join_words(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& word : words) {
    out += (out.empty() ? "" : separator) + word;
  }
  return out;
}
