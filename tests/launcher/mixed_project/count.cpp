#include "mixed.h"

#include <sstream>
#include <string>
int count_words(const char* text) {
  std::istringstream in{std::string(text)};
  int n = 0;
  for (std::string word; in >> word;) {
    ++n;
  }
  return n;
}
