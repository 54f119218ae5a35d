/*
 * Logging for mcvm daemons: stderr in the foreground, syslog otherwise.
 * Callers prefix messages with __func__ where the origin matters.
 * Never log a secret (token, file contents).
 */
#ifndef MCVM_LOG_H
#define MCVM_LOG_H

#include <stdarg.h>

void	log_init(int foreground, int facility);
void	log_procinit(const char *name);
void	log_setverbose(int verbose);
int	log_getverbose(void);
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	vlog(int, const char *, va_list) __attribute__((format(printf, 2, 0)));
void	log_fatal_hook(void (*)(void));
void	fatal(const char *, ...)
	    __attribute__((noreturn, format(printf, 1, 2)));
void	fatalx(const char *, ...)
	    __attribute__((noreturn, format(printf, 1, 2)));

#endif
