const char* greeting(void);
