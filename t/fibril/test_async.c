/* placeholder: being written */
#include "first.h"
int main(void) { return 77; }
