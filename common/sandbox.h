/*
 * seccomp filters built with libseccomp.  The default action kills the
 * process; in debug mode (-S) a forbidden call raises SIGSYS, whose handler
 * names the call with write(2) alone and exits.
 */
#ifndef MCVM_SANDBOX_H
#define MCVM_SANDBOX_H

#include <seccomp.h>
#include <stddef.h>

scmp_filter_ctx	 sandbox_new(int debug);
void		 sandbox_allow(scmp_filter_ctx, const char *const *, size_t);
void		 sandbox_errno(scmp_filter_ctx, const char *const *, size_t,
		    int);
void		 sandbox_rule(scmp_filter_ctx, const char *, unsigned int,
		    const struct scmp_arg_cmp *);
void		 sandbox_load(scmp_filter_ctx);
void		 sandbox_allow_common(scmp_filter_ctx);

#define SANDBOX_N(a)	(sizeof(a) / sizeof((a)[0]))

#endif
