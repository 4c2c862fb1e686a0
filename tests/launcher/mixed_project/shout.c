#include "mixed.h"

#include <ctype.h>
void shout(char* text) {
  for (; *text != '\0'; ++text) {
    *text = (char)toupper((unsigned char)*text);
  }
}
