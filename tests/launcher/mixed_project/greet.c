#include "mixed.h"
const char* greeting(void) {
  return "hello from c and c++ through a compiler cache";
}
