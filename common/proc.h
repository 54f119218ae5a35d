/*
 * The process framework.  mcvmd is the parent; it fork+execs each child
 * with its end of a socketpair on PROC_PARENT_SOCK_FILENO.  The topology is
 * a star: a child has one peer, mcvmd.
 */
#ifndef MCVM_PROC_H
#define MCVM_PROC_H

#include <sys/types.h>
#include <event.h>

#include "imsg.h"

enum proc_id {
	PROC_PARENT = 0,
	PROC_FRONTD,
	PROC_NETD,
	PROC_STORED,
	PROC_MAX,
};

/* One static table of the suite's long-lived processes. */
struct proc_desc {
	enum proc_id	 id;
	const char	*title;		/* for logs and status */
	const char	*binary;	/* file name next to mcvmd */
};
extern const struct proc_desc proc_table[PROC_MAX];

/* An imsg channel driven by libevent. */
struct imsgev {
	struct imsgbuf	 ibuf;
	struct event	 ev;
	short		 events;
	void		(*handler)(int, short, void *);
	void		*data;
	const char	*peer;		/* name for logs */
};

/* Flags shared by every mcvm daemon: -d -v -n -f -D -S. */
struct proc_opts {
	int		 foreground;	/* -d */
	int		 verbose;	/* -v, repeatable */
	int		 noaction;	/* -n */
	int		 sandbox_debug;	/* -S */
	const char	*conffile;	/* -f */
	const char	*defines[32];	/* -D name=value */
	size_t		 ndefines;
};

int	 proc_getopt(int, char **, struct proc_opts *, const char *);
int	 proc_getopt_ext(int, char **, struct proc_opts *, const char *,
	    const char *, int (*)(int, const char *, void *), void *);
int	 proc_apply_defines(const struct proc_opts *);

int	 imsgev_init(struct imsgev *, int, const char *,
	    void (*)(int, short, void *), void *);
void	 imsgev_add(struct imsgev *);
void	 imsgev_clear(struct imsgev *);
int	 imsgev_compose(struct imsgev *, uint32_t, uint32_t, uint32_t, int,
	    const void *, size_t);
int	 imsgev_close(struct imsgev *, struct ibuf *);
int	 imsgev_read(struct imsgev *, short);

struct mcvm_config;
void	 proc_child_setup(int, char **, const char *, const char *,
	    struct proc_opts *, struct mcvm_config *);
void	 proc_child_setup_ext(int, char **, const char *, const char *,
	    struct proc_opts *, struct mcvm_config *, const char *,
	    int (*)(int, const char *, void *), void *);
void	 proc_child_check_socket(void);
void	 proc_child_run(struct imsgev *, void (*)(int, short, void *));
void	 proc_child_hello(struct imsgev *);
void	 proc_child_dispatch(struct imsgev *, short,
	    void (*)(struct imsg *));
void	 imsgev_send_fd(struct imsgev *, uint32_t, uint32_t, uint32_t, int);

#endif
