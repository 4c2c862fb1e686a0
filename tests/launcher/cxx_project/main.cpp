#include "words.hpp"

#include <iostream>

int main() {
  const std::string text = join_words({"built", "through", "a", "compiler", "cache"}, " ");
  std::cout << text << " (" << count_words(text) << " words)\n";
}
