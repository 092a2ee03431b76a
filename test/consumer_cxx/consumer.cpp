// consumer.cpp - test/consumer/consumer.c compiled as C++: the header's
// macros and declarations as a C++ program (LibTorch's, say) uses them.
#include "../consumer/consumer.c"
