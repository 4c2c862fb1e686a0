#ifndef MIXED_H
#define MIXED_H
#ifdef __cplusplus
extern "C" {
#endif
const char* greeting(void);
void shout(char* text);
#ifdef __cplusplus
}
int count_words(const char* text);
#endif
#endif
