#include "greet.h"

#include <stdio.h>
int main(void) {
  puts(greeting());
  return 0;
}
