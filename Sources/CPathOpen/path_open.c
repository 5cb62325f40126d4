/* See include/path_open.h. */
#include "path_open.h"

#include <fcntl.h>

int la_open_path_nofollow(const char *path)
{
    return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}
