#include "words.hpp"

#include <sstream>

std::size_t count_words(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string word; in >> word;) {
    ++n;
  }
  return n;
}
