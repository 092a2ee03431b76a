/* compile_fail_disabled.c - must NOT compile: with STEPSCOPE_DISABLE the
 * macros still type-check, so a string is not accepted as a value. */
#define STEPSCOPE_DISABLE 1
#include "stepscope.h"

int main(void) {
    SPS_VALUE("loss", "not a number");
    return 0;
}
