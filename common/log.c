/*
 * Logging: stderr when running in the foreground, syslog(3) otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int	 log_foreground = 1;
static int	 log_verbose;
static const char *log_procname = "mcvm";
static void	(*log_on_fatal)(void);

void
log_init(int foreground, int facility)
{
	log_foreground = foreground;
	if (!foreground)
		openlog(log_procname, LOG_PID | LOG_NDELAY, facility);
	tzset();
}

void
log_procinit(const char *name)
{
	if (name != NULL)
		log_procname = name;
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

int
log_getverbose(void)
{
	return log_verbose;
}

void
vlog(int pri, const char *fmt, va_list ap)
{
	char	 buf[1024];
	int	 saved_errno = errno;

	if (log_foreground) {
		(void)vsnprintf(buf, sizeof(buf), fmt, ap);
		(void)fprintf(stderr, "%s[%d]: %s\n", log_procname,
		    (int)getpid(), buf);
		(void)fflush(stderr);
	} else
		vsyslog(pri, fmt, ap);
	errno = saved_errno;
}

static void
vlog_errno(int pri, const char *fmt, va_list ap)
{
	char	 buf[1024];
	int	 saved_errno = errno;

	if (fmt == NULL) {
		log_foreground ? (void)fprintf(stderr, "%s[%d]: %s\n",
		    log_procname, (int)getpid(), strerror(saved_errno)) :
		    syslog(pri, "%s", strerror(saved_errno));
		errno = saved_errno;
		return;
	}
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	if (log_foreground)
		(void)fprintf(stderr, "%s[%d]: %s: %s\n", log_procname,
		    (int)getpid(), buf, strerror(saved_errno));
	else
		syslog(pri, "%s: %s", buf, strerror(saved_errno));
	errno = saved_errno;
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog_errno(LOG_ERR, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_ERR, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

/*
 * What a process must do before it exits on a fatal error (mcvmd stops
 * its VMs as on SIGTERM).  The hook runs once: a fatal error inside it
 * exits plainly.
 */
void
log_fatal_hook(void (*hook)(void))
{
	log_on_fatal = hook;
}

static void __attribute__((noreturn))
fatal_exit(void)
{
	void	(*hook)(void) = log_on_fatal;

	log_on_fatal = NULL;
	if (hook != NULL)
		hook();
	exit(1);
}

void
fatal(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog_errno(LOG_CRIT, fmt, ap);
	va_end(ap);
	fatal_exit();
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap);
	va_end(ap);
	fatal_exit();
}
