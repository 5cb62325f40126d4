/* libaudit (Debian: libaudit-dev): the records pam_faillock writes, written the same way. */
#include <libaudit.h>
