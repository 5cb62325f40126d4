/* A GNU extension Swift cannot reach: Swift's Glibc module is built without _GNU_SOURCE,
 * so O_PATH is not visible there. */
#ifndef LA_PATH_OPEN_H
#define LA_PATH_OPEN_H

/* open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC): a descriptor that names the file without
 * opening it, so a device's own open routine does not run. -1 with errno on failure. */
int la_open_path_nofollow(const char *path);

#endif
