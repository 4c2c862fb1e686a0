#include "mixed.h"

#include <iostream>
#include <string>
int main() {
  std::string text = greeting();
  shout(text.data());
  std::cout << text << " (" << count_words(text.c_str()) << " words)\n";
}
