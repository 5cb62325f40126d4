/* libpam's application side (Debian: libpam0g-dev), for localauthctl's password check. */
#include <security/pam_appl.h>
