/* glibc headers that Swift's Glibc module does not bring in. */
#include <shadow.h>
