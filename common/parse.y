/*
 * mcvm.conf grammar.  The shape follows OpenBSD's vm.conf: macros
 * (name = value, expanded as $name), top-level settings, and blocks per
 * daemon.  See mcvm.conf(5).
 */
%{
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "validate.h"

#define MACRO_MAX	64
#define LINE_MAX_LEN	4096
#define PUSHBACK_MAX	4096

struct macro {
	char	*name;
	char	*value;
	int	 persist;	/* from -D: the file cannot override it */
};

static struct macro	 macros[MACRO_MAX];
static size_t		 nmacros;

#define FILE_DEPTH_MAX	4	/* nested includes */

static struct conf_file {
	FILE		*fp;
	char		 name[PATH_MAX];
	int		 lineno;
} files[FILE_DEPTH_MAX];
static int		 nfiles;
static int		 errors;
#define file		(files[nfiles - 1])

static struct mcvm_config	*conf;
static struct image_conf	*cur_image;
static struct limits		*cur_limits;
static char			 limit_err[128];	/* limit_check()'s */
static char			 lasterror[PATH_MAX + 512];
static char			 pushback[PUSHBACK_MAX];
static size_t			 npushback;

int		 yylex(void);
int		 yyparse(void);
static void	 yyerror(const char *, ...)
		    __attribute__((format(printf, 1, 2)));
static int	 macro_set(const char *, const char *, int);
static const char *macro_get(const char *);
static int	 set_string(char *, size_t, const char *, const char *);
static int	 set_path(char *, size_t, const char *, const char *);
static int	 set_sha256(char *, const char *);
static int	 file_push(const char *);

typedef struct {
	union {
		int64_t	 number;
		char	*string;
	} v;
	int lineno;
} YYSTYPE;
#define YYSTYPE_IS_DECLARED 1
%}

%token	ACCEL ALLOW AUTO BIND BLOCK BODY BURST CERTIFICATE CONNECTIONS
%token	CONTROL DEFAULTS DIRECTORY DISK FORWARD FRONTD GROUP HEADER HIBERNATE
%token	HOST IDLE IMAGE IMAGES INITRD KERNEL KEY KVM LIMIT LIMITS LISTEN MEMORY NETD
%token	ON ORIGIN PAUSE PEER POOL RATE REQUEST RESOLVER RUN SHA256 SOCKET STATE
%token	STORAGE STORED TCG TEMPLATES TIMEOUT TLS TO UIDS UNAUTHENTICATED UPLINK
%token	USER SHARED STREAM WARM
%token	VCPUS VM VMS WORKSPACE INCLUDE ERROR
%token	<v.string>	STRING
%token	<v.number>	NUMBER
%type	<v.string>	string
%type	<v.number>	number size seconds
%destructor	{ free($$); } <v.string>

%%

grammar		: %empty
		| grammar '\n'
		| grammar varset '\n'
		| grammar main '\n'
		| grammar section '\n'
		| grammar include
		| grammar error '\n'		{ errors++; }
		;

optnl		: %empty
		| optnl '\n'
		;

nl		: '\n' optnl
		;

string		: STRING
		;

number		: NUMBER {
			if ($1 < 0) {
				yyerror("negative number");
				YYERROR;
			}
			$$ = $1;
		}
		;

size		: NUMBER {
			if ($1 < 0) {
				yyerror("negative size");
				YYERROR;
			}
			$$ = $1;
		}
		| STRING {
			uint64_t v;

			if (size_parse($1, &v) == -1 || v > INT64_MAX) {
				yyerror("invalid size: %s", $1);
				free($1);
				YYERROR;
			}
			free($1);
			$$ = (int64_t)v;
		}
		;

seconds		: number
		;

varset		: STRING '=' string {
			char *s;

			for (s = $1; *s != '\0'; s++) {
				if (!isalnum((unsigned char)*s) && *s != '_') {
					yyerror("macro name may only hold "
					    "letters, digits and _");
					free($1);
					free($3);
					YYERROR;
				}
			}
			if (macro_set($1, $3, 0) == -1) {
				yyerror("cannot set macro %s", $1);
				free($1);
				free($3);
				YYERROR;
			}
			free($1);
			free($3);
		}
		;

include		: INCLUDE string '\n' {
			/* After the newline: the next token is the file's. */
			if (file_push($2) == -1) {
				free($2);
				YYERROR;
			}
			free($2);
		}
		;

main		: STATE DIRECTORY string {
			if (set_path(conf->statedir, sizeof(conf->statedir),
			    $3, "state directory") == -1) {
				free($3);
				YYERROR;
			}
			free($3);
		}
		| RUN DIRECTORY string {
			if (set_path(conf->rundir, sizeof(conf->rundir), $3,
			    "run directory") == -1) {
				free($3);
				YYERROR;
			}
			free($3);
		}
		| CONTROL SOCKET string optgroup {
			if (set_path(conf->control_sock,
			    sizeof(conf->control_sock), $3,
			    "control socket") == -1) {
				free($3);
				YYERROR;
			}
			free($3);
		}
		| ACCEL AUTO		{ conf->accel = ACCEL_AUTO; }
		| ACCEL KVM		{ conf->accel = ACCEL_KVM; }
		| ACCEL TCG		{ conf->accel = ACCEL_TCG; }
		| TEMPLATES SHARED	{ conf->shared_templates = 1; }
		| TEMPLATES STREAM	{ conf->shared_templates = 0; }
		| WARM number {
			if ($2 > WARM_CLONES_MAX) {
				yyerror("warm: at most %d clones per template",
				    WARM_CLONES_MAX);
				YYERROR;
			}
			conf->warm_clones = (uint32_t)$2;
		}
		| VM UIDS number TO number {
			if ($3 < 1000 || $5 < $3 || $5 > UINT32_MAX - 1 ||
			    $5 - $3 >= 65536) {
				yyerror("vm uids: need 1000 <= first <= last "
				    "and at most 65536 uids");
				YYERROR;
			}
			conf->vm_uid_first = (uint32_t)$3;
			conf->vm_uid_last = (uint32_t)$5;
		}
		;

optgroup	: %empty		{ conf->control_group[0] = '\0'; }
		| GROUP string {
			if (set_string(conf->control_group,
			    sizeof(conf->control_group), $2, "group") == -1) {
				free($2);
				YYERROR;
			}
			free($2);
		}
		;

section		: FRONTD '{' optnl frontopts '}'
		| STORED '{' optnl storedopts '}'
		| NETD '{' optnl netdopts '}'
		| LIMITS '{' optnl {
			cur_limits = &conf->host_limits;
		} limitopts '}'
		| WORKSPACE LIMITS '{' optnl {
			cur_limits = &conf->ws_limits;
		} limitopts '}'
		| VM DEFAULTS '{' optnl vmdefopts '}'
		| IMAGE string {
			size_t i;

			if (!valid_object_name($2)) {
				yyerror("invalid image name: %s", $2);
				free($2);
				$2 = NULL;
				YYERROR;
			}
			for (i = 0; i < conf->nimages; i++) {
				if (strcmp(conf->images[i].name, $2) == 0) {
					yyerror("image %s defined twice", $2);
					free($2);
					$2 = NULL;
					YYERROR;
				}
			}
			if (conf->nimages == CONF_MAX_IMAGES) {
				yyerror("too many images");
				free($2);
				$2 = NULL;
				YYERROR;
			}
			cur_image = &conf->images[conf->nimages++];
			memset(cur_image, 0, sizeof(*cur_image));
			(void)snprintf(cur_image->name, sizeof(cur_image->name),
			    "%s", $2);
			/* Still on the stack: error recovery frees it. */
			free($2);
			$2 = NULL;
		} '{' optnl imageopts '}' {
			if (cur_image->kernel[0] == '\0' ||
			    cur_image->disk[0] == '\0') {
				yyerror("image %s needs a kernel and a disk",
				    cur_image->name);
				YYERROR;
			}
		}
		;

frontopts	: %empty
		| frontopts frontopt nl
		;

frontopt	: USER string {
			if (set_string(conf->frontd_user,
			    sizeof(conf->frontd_user), $2, "user") == -1) {
				free($2);
				YYERROR;
			}
			free($2);
		}
		| LISTEN ON string {
			struct listen_addr *la;

			if (conf->nlisten == CONF_MAX_LISTEN) {
				yyerror("too many listen addresses");
				free($3);
				YYERROR;
			}
			la = &conf->listen[conf->nlisten];
			if (listen_addr_parse($3, la) == -1) {
				yyerror("invalid listen address: %s", $3);
				free($3);
				YYERROR;
			}
			conf->nlisten++;
			free($3);
		}
		| TLS CERTIFICATE string KEY string {
			if (set_path(conf->tls_cert, sizeof(conf->tls_cert),
			    $3, "tls certificate") == -1 ||
			    set_path(conf->tls_key, sizeof(conf->tls_key), $5,
			    "tls key") == -1) {
				free($3);
				free($5);
				YYERROR;
			}
			free($3);
			free($5);
		}
		| BODY LIMIT size {
			if ($3 < 1024 || $3 > 64 * 1024 * 1024) {
				yyerror("body limit must be 1K to 64M");
				YYERROR;
			}
			conf->body_limit = (uint64_t)$3;
		}
		| HEADER LIMIT size {
			if ($3 < 1024 || $3 > 1024 * 1024) {
				yyerror("header limit must be 1K to 1M");
				YYERROR;
			}
			conf->header_limit = (uint64_t)$3;
		}
		| CONNECTIONS number {
			if ($2 < 1 || $2 > 65536) {
				yyerror("connections must be 1 to 65536");
				YYERROR;
			}
			conf->max_connections = (uint32_t)$2;
		}
		| PEER CONNECTIONS number {
			if ($3 < 1 || $3 > 65536) {
				yyerror("peer connections must be 1 to 65536");
				YYERROR;
			}
			conf->peer_connections = (uint32_t)$3;
		}
		| HEADER TIMEOUT seconds {
			if ($3 < 1 || $3 > 86400) {
				yyerror("header timeout must be 1 to 86400");
				YYERROR;
			}
			conf->header_timeout = (uint32_t)$3;
		}
		| UNAUTHENTICATED RATE number BURST number {
			if ($3 < 1 || $3 > 1000000 || $5 < $3 ||
			    $5 > 1000000) {
				yyerror("unauthenticated rate: need 1 <= rate "
				    "<= burst <= 1000000");
				YYERROR;
			}
			conf->unauth_rate = (uint32_t)$3;
			conf->unauth_burst = (uint32_t)$5;
		}
		| IDLE TIMEOUT seconds {
			if ($3 < 1 || $3 > 86400) {
				yyerror("idle timeout must be 1 to 86400");
				YYERROR;
			}
			conf->idle_timeout = (uint32_t)$3;
		}
		| REQUEST TIMEOUT seconds {
			if ($3 < 1 || $3 > 86400) {
				yyerror("request timeout must be 1 to 86400");
				YYERROR;
			}
			conf->request_timeout = (uint32_t)$3;
		}
		| RATE number BURST number {
			if ($2 < 1 || $2 > 1000000 || $4 < $2 ||
			    $4 > 1000000) {
				yyerror("rate: need 1 <= rate <= burst "
				    "<= 1000000");
				YYERROR;
			}
			conf->rate = (uint32_t)$2;
			conf->rate_burst = (uint32_t)$4;
		}
		| ALLOW HOST string {
			if (conf->nallow_host == CONF_MAX_ALLOW ||
			    set_string(conf->allow_host[conf->nallow_host],
			    CONF_STR_MAX, $3, "host") == -1) {
				yyerror("cannot allow host %s", $3);
				free($3);
				YYERROR;
			}
			conf->nallow_host++;
			free($3);
		}
		| ALLOW ORIGIN string {
			if (conf->nallow_origin == CONF_MAX_ALLOW ||
			    set_string(conf->allow_origin[conf->nallow_origin],
			    CONF_STR_MAX, $3, "origin") == -1) {
				yyerror("cannot allow origin %s", $3);
				free($3);
				YYERROR;
			}
			conf->nallow_origin++;
			free($3);
		}
		;

storedopts	: %empty
		| storedopts storedopt nl
		;

storedopt	: USER string {
			if (set_string(conf->stored_user,
			    sizeof(conf->stored_user), $2, "user") == -1) {
				free($2);
				YYERROR;
			}
			free($2);
		}
		;

netdopts	: %empty
		| netdopts netdopt nl
		;

netdopt		: UPLINK string {
			if (set_string(conf->uplink, sizeof(conf->uplink), $2,
			    "uplink") == -1) {
				free($2);
				YYERROR;
			}
			free($2);
		}
		| POOL string {
			if (cidr_parse($2, &conf->pool) == -1 ||
			    conf->pool.family != AF_INET ||
			    conf->pool.prefixlen > 24) {
				yyerror("pool must be an IPv4 prefix of /24 "
				    "or larger: %s", $2);
				free($2);
				YYERROR;
			}
			conf->pool_set = 1;
			free($2);
		}
		| RESOLVER string {
			if (cidr_parse($2, &conf->resolver) == -1 ||
			    conf->resolver.prefixlen !=
			    (conf->resolver.family == AF_INET ? 32u : 128u)) {
				yyerror("resolver must be an address: %s", $2);
				free($2);
				YYERROR;
			}
			conf->resolver_set = 1;
			free($2);
		}
		| BLOCK string {
			if (conf->nblocked == CONF_MAX_BLOCKED ||
			    cidr_parse($2,
			    &conf->blocked[conf->nblocked]) == -1) {
				yyerror("cannot block %s", $2);
				free($2);
				YYERROR;
			}
			conf->nblocked++;
			free($2);
		}
		| FORWARD BIND string {
			if (conf->nforward_bind == CONF_MAX_BIND ||
			    cidr_parse($3,
			    &conf->forward_bind[conf->nforward_bind]) == -1) {
				yyerror("cannot bind forwards to %s", $3);
				free($3);
				YYERROR;
			}
			conf->nforward_bind++;
			free($3);
		}
		;

limitopts	: %empty
		| limitopts limitopt nl
		;

limitopt	: VMS number {
			if (limit_check(LIMIT_VMS, (uint64_t)$2, limit_err,
			    sizeof(limit_err)) == -1) {
				yyerror("%s", limit_err);
				YYERROR;
			}
			cur_limits->max_vms = (uint32_t)$2;
		}
		| MEMORY size {
			if (limit_check(LIMIT_MEMORY, (uint64_t)$2, limit_err,
			    sizeof(limit_err)) == -1) {
				yyerror("%s", limit_err);
				YYERROR;
			}
			cur_limits->max_memory = (uint64_t)$2;
		}
		| STORAGE size {
			if (limit_check(LIMIT_STORAGE, (uint64_t)$2, limit_err,
			    sizeof(limit_err)) == -1) {
				yyerror("%s", limit_err);
				YYERROR;
			}
			cur_limits->max_storage = (uint64_t)$2;
		}
		| IMAGES number {
			if ($2 < 0 || $2 > LIMIT_IMAGES_MAX) {
				yyerror("images must be 0 to %d",
				    LIMIT_IMAGES_MAX);
				YYERROR;
			}
			cur_limits->max_images = (uint32_t)$2;
		}
		| VCPUS number {
			if (limit_check(LIMIT_VCPUS, (uint64_t)$2, limit_err,
			    sizeof(limit_err)) == -1) {
				yyerror("%s", limit_err);
				YYERROR;
			}
			cur_limits->max_vcpus = (uint32_t)$2;
		}
		;

vmdefopts	: %empty
		| vmdefopts vmdefopt nl
		;

vmdefopt	: MEMORY size {
			if ($2 < (int64_t)VM_MEMORY_MIN_MIB << 20 ||
			    $2 > (int64_t)VM_MEMORY_MAX_MIB << 20) {
				yyerror("vm memory must be %dM to %dM",
				    VM_MEMORY_MIN_MIB, VM_MEMORY_MAX_MIB);
				YYERROR;
			}
			conf->vm_memory = (uint64_t)$2;
		}
		| VCPUS number {
			if ($2 < 1 || $2 > VM_VCPUS_MAX) {
				yyerror("vcpus must be 1 to %d", VM_VCPUS_MAX);
				YYERROR;
			}
			conf->vm_vcpus = (uint32_t)$2;
		}
		| VCPUS LIMIT number {
			if ($3 < 1 || $3 > VM_VCPUS_MAX) {
				yyerror("vcpus limit must be 1 to %d",
				    VM_VCPUS_MAX);
				YYERROR;
			}
			conf->vm_vcpus_limit = (uint32_t)$3;
		}
		| IDLE seconds idlemode {
			if ($2 > 7 * 86400) {
				yyerror("idle must be at most a week");
				YYERROR;
			}
			conf->vm_idle_seconds = (uint32_t)$2;
		}
		;

idlemode	: %empty		{ conf->vm_idle_mode = IDLE_HIBERNATE; }
		| HIBERNATE		{ conf->vm_idle_mode = IDLE_HIBERNATE; }
		| PAUSE			{ conf->vm_idle_mode = IDLE_PAUSE; }
		;

imageopts	: %empty
		| imageopts imageopt nl
		;

imageopt	: KERNEL string SHA256 string {
			if (set_path(cur_image->kernel,
			    sizeof(cur_image->kernel), $2, "kernel") == -1 ||
			    set_sha256(cur_image->kernel_sha256, $4) == -1) {
				free($2);
				free($4);
				YYERROR;
			}
			free($2);
			free($4);
		}
		| INITRD string SHA256 string {
			if (set_path(cur_image->initrd,
			    sizeof(cur_image->initrd), $2, "initrd") == -1 ||
			    set_sha256(cur_image->initrd_sha256, $4) == -1) {
				free($2);
				free($4);
				YYERROR;
			}
			free($2);
			free($4);
		}
		| DISK string SHA256 string {
			if (set_path(cur_image->disk, sizeof(cur_image->disk),
			    $2, "disk") == -1 ||
			    set_sha256(cur_image->disk_sha256, $4) == -1) {
				free($2);
				free($4);
				YYERROR;
			}
			free($2);
			free($4);
		}
		;

%%

struct keyword {
	const char	*name;
	int		 token;
};

static void
yyerror(const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[384];

	char	 where[PATH_MAX + 16];

	errors++;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* After the last file (the checks across settings): no line. */
	if (nfiles > 0)
		(void)snprintf(where, sizeof(where), "%s:%d", file.name,
		    yylval.lineno);
	else
		(void)snprintf(where, sizeof(where), "%s", conf->conffile);
	/* Keep the first error: later ones often follow from it. */
	if (lasterror[0] == '\0')
		(void)snprintf(lasterror, sizeof(lasterror), "%s: %s", where,
		    msg);
	log_warnx("%s: %s", where, msg);
}

static int
kw_cmp(const void *k, const void *e)
{
	return strcmp(k, ((const struct keyword *)e)->name);
}

static int
lookup(const char *s)
{
	/* Sorted for bsearch. */
	static const struct keyword keywords[] = {
		{ "accel",		ACCEL },
		{ "allow",		ALLOW },
		{ "auto",		AUTO },
		{ "bind",		BIND },
		{ "block",		BLOCK },
		{ "body",		BODY },
		{ "burst",		BURST },
		{ "certificate",	CERTIFICATE },
		{ "connections",	CONNECTIONS },
		{ "control",		CONTROL },
		{ "defaults",		DEFAULTS },
		{ "directory",		DIRECTORY },
		{ "disk",		DISK },
		{ "forward",		FORWARD },
		{ "frontd",		FRONTD },
		{ "group",		GROUP },
		{ "header",		HEADER },
		{ "hibernate",		HIBERNATE },
		{ "host",		HOST },
		{ "idle",		IDLE },
		{ "image",		IMAGE },
		{ "images",		IMAGES },
		{ "include",		INCLUDE },
		{ "initrd",		INITRD },
		{ "kernel",		KERNEL },
		{ "key",		KEY },
		{ "kvm",		KVM },
		{ "limit",		LIMIT },
		{ "limits",		LIMITS },
		{ "listen",		LISTEN },
		{ "memory",		MEMORY },
		{ "netd",		NETD },
		{ "on",			ON },
		{ "origin",		ORIGIN },
		{ "pause",		PAUSE },
		{ "peer",		PEER },
		{ "pool",		POOL },
		{ "rate",		RATE },
		{ "request",		REQUEST },
		{ "resolver",		RESOLVER },
		{ "run",		RUN },
		{ "sha256",		SHA256 },
		{ "shared",		SHARED },
		{ "socket",		SOCKET },
		{ "state",		STATE },
		{ "storage",		STORAGE },
		{ "stored",		STORED },
		{ "stream",		STREAM },
		{ "tcg",		TCG },
		{ "templates",		TEMPLATES },
		{ "timeout",		TIMEOUT },
		{ "tls",		TLS },
		{ "to",			TO },
		{ "uids",		UIDS },
		{ "unauthenticated",	UNAUTHENTICATED },
		{ "uplink",		UPLINK },
		{ "user",		USER },
		{ "vcpus",		VCPUS },
		{ "vm",			VM },
		{ "vms",		VMS },
		{ "warm",		WARM },
		{ "workspace",		WORKSPACE },
	};
	const struct keyword *k;

	k = bsearch(s, keywords, sizeof(keywords) / sizeof(keywords[0]),
	    sizeof(keywords[0]), kw_cmp);
	return k != NULL ? k->token : STRING;
}

static int
lgetc(void)
{
	int	 c, next;

	if (npushback > 0)
		return (unsigned char)pushback[--npushback];
	c = getc(file.fp);
	if (c == EOF && nfiles > 1) {
		/* The end of an include: go on in the file that named it. */
		(void)fclose(file.fp);
		nfiles--;
		return '\n';
	}
	if (c == '\\') {
		next = getc(file.fp);
		if (next == '\n') {
			file.lineno++;
			return lgetc();
		}
		if (next != EOF)
			(void)ungetc(next, file.fp);
	}
	if (c == '\t')
		c = ' ';
	return c;
}

static int
lungetc(int c)
{
	if (c == EOF)
		return EOF;
	if (npushback == PUSHBACK_MAX)
		return EOF;
	pushback[npushback++] = (char)c;
	return c;
}

/* Pushes text back so that it is read next, as if it were in the file. */
static int
lpush(const char *s)
{
	size_t	 len = strlen(s);

	if (len > PUSHBACK_MAX - npushback)
		return -1;
	while (len > 0)
		pushback[npushback++] = s[--len];
	return 0;
}

static int
next_is_assign(void)
{
	int	 c, spaces = 0, assign;

	while ((c = lgetc()) == ' ')
		spaces++;
	assign = c == '=';
	lungetc(c);
	while (spaces-- > 0)
		lungetc(' ');
	return assign;
}

static int
allowed_in_word(int c)
{
	return isalnum(c) || (c != EOF && strchr("-_./:[]@+,%~", c) != NULL);
}

int
yylex(void)
{
	char		 buf[LINE_MAX_LEN], *p;
	const char	*val;
	int		 c, quote, token;
	long long	 n;
	char		*ep;

top:
	p = buf;
	while ((c = lgetc()) == ' ')
		;
	yylval.lineno = file.lineno;
	if (c == '#')
		while ((c = lgetc()) != '\n' && c != EOF)
			;
	if (c == '$') {
		while ((c = lgetc()) != EOF && (isalnum(c) || c == '_')) {
			if (p - buf >= (ptrdiff_t)sizeof(buf) - 1) {
				yyerror("macro name too long");
				return ERROR;
			}
			*p++ = (char)c;
		}
		*p = '\0';
		lungetc(c);
		if (p == buf) {
			yyerror("$ without a macro name");
			return ERROR;
		}
		if ((val = macro_get(buf)) == NULL) {
			yyerror("macro '%s' not defined", buf);
			return ERROR;
		}
		if (strpbrk(val, "\"\\\n") != NULL) {
			yyerror("macro '%s' holds a quote, backslash or "
			    "newline", buf);
			return ERROR;
		}
		/*
		 * A number stays a number; anything else is quoted so that it
		 * stays one word.  The closing quote is pushed first.
		 */
		quote = val[0] != '\0' && strspn(val, "0123456789") ==
		    strlen(val) ? 0 : '"';
		if ((quote && lungetc(quote) == EOF) || lpush(val) == -1 ||
		    (quote && lungetc(quote) == EOF)) {
			yyerror("macro '%s' too long", buf);
			return ERROR;
		}
		goto top;
	}
	switch (c) {
	case '\'':
	case '"':
		quote = c;
		for (;;) {
			if ((c = lgetc()) == EOF || c == '\n') {
				yyerror("unterminated quoted string");
				if (c == '\n')
					lungetc(c);
				return ERROR;
			}
			if (c == quote)
				break;
			if (c == '\\') {
				if ((c = lgetc()) == EOF || c == '\n') {
					yyerror("unterminated quoted string");
					return ERROR;
				}
			}
			if (c == '\0' || p - buf >= (ptrdiff_t)sizeof(buf) - 1) {
				yyerror("string too long or has a NUL");
				return ERROR;
			}
			*p++ = (char)c;
		}
		*p = '\0';
		if ((yylval.v.string = strdup(buf)) == NULL)
			fatal("%s", __func__);
		return STRING;
	case EOF:
		return 0;
	case '\n':
		file.lineno++;
		yylval.lineno = file.lineno - 1;
		return '\n';
	case '=':
	case '{':
	case '}':
		return c;
	}
	if (!allowed_in_word(c)) {
		yyerror("unexpected character '%c'", isprint(c) ? c : '?');
		/* Skip to the end of the line and report it there. */
		while ((c = lgetc()) != '\n' && c != EOF)
			;
		lungetc(c);
		return ERROR;
	}
	do {
		if (p - buf >= (ptrdiff_t)sizeof(buf) - 1) {
			yyerror("word too long");
			return ERROR;
		}
		*p++ = (char)c;
	} while ((c = lgetc()) != EOF && allowed_in_word(c));
	lungetc(c);
	*p = '\0';
	if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
		errno = 0;
		n = strtoll(buf, &ep, 10);
		if (*ep == '\0') {
			if (errno == ERANGE) {
				yyerror("number out of range: %s", buf);
				return ERROR;
			}
			yylval.v.number = n;
			return NUMBER;
		}
	}
	/* A word before '=' names a macro, even if it is a keyword. */
	token = next_is_assign() ? STRING : lookup(buf);
	if (token == STRING) {
		if ((yylval.v.string = strdup(buf)) == NULL)
			fatal("%s", __func__);
	}
	return token;
}

static int
macro_set(const char *name, const char *value, int persist)
{
	size_t	 i;
	char	*n, *v;

	for (i = 0; i < nmacros; i++) {
		if (strcmp(macros[i].name, name) != 0)
			continue;
		if (macros[i].persist && !persist)
			return 0;
		if ((v = strdup(value)) == NULL)
			return -1;
		free(macros[i].value);
		macros[i].value = v;
		macros[i].persist = persist;
		return 0;
	}
	if (nmacros == MACRO_MAX)
		return -1;
	if ((n = strdup(name)) == NULL)
		return -1;
	if ((v = strdup(value)) == NULL) {
		free(n);
		return -1;
	}
	macros[nmacros].name = n;
	macros[nmacros].value = v;
	macros[nmacros].persist = persist;
	nmacros++;
	return 0;
}

static const char *
macro_get(const char *name)
{
	size_t	 i;

	for (i = 0; i < nmacros; i++)
		if (strcmp(macros[i].name, name) == 0)
			return macros[i].value;
	return NULL;
}

/* "name=value" from the command line; it wins over the file. */
int
config_define(const char *s)
{
	char		 name[128];
	const char	*eq;
	size_t		 i, len;

	if ((eq = strchr(s, '=')) == NULL || eq == s ||
	    (len = (size_t)(eq - s)) >= sizeof(name))
		return -1;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return -1;
	memcpy(name, s, len);
	name[len] = '\0';
	return macro_set(name, eq + 1, 1);
}

void
config_clear_macros(void)
{
	size_t	 i;

	for (i = 0; i < nmacros; i++) {
		free(macros[i].name);
		free(macros[i].value);
	}
	nmacros = 0;
}

const char *
config_lasterror(void)
{
	return lasterror;
}

static int
set_string(char *dst, size_t size, const char *s, const char *what)
{
	if (*s == '\0' || strlen(s) >= size) {
		yyerror("%s is empty or too long", what);
		return -1;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int
set_path(char *dst, size_t size, const char *s, const char *what)
{
	if (s[0] != '/') {
		yyerror("%s must be an absolute path: %s", what, s);
		return -1;
	}
	return set_string(dst, size, s, what);
}

static int
set_sha256(char *dst, const char *s)
{
	size_t	 i;

	if (strlen(s) != 64) {
		yyerror("sha256 must be 64 hex digits");
		return -1;
	}
	for (i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[i])) {
			yyerror("sha256 must be 64 hex digits");
			return -1;
		}
		dst[i] = (char)tolower((unsigned char)s[i]);
	}
	dst[64] = '\0';
	return 0;
}

/* Checks across settings, once the whole file is read. */
static void
config_finish(void)
{
	struct listen_addr	*la;
	int			 n;

	if (conf->nlisten == 0) {
		la = &conf->listen[conf->nlisten++];
		if (listen_addr_parse(LISTEN_DEFAULT, la) == -1)
			fatalx("%s: bad default listen address", __func__);
	}
	if (conf->control_sock[0] == '\0') {
		n = snprintf(conf->control_sock, sizeof(conf->control_sock),
		    "%s/%s", conf->rundir, MCVM_CONTROL_SOCK);
		if (n < 0 || (size_t)n >= sizeof(conf->control_sock)) {
			yyerror("run directory too long for the control "
			    "socket path");
			conf->control_sock[0] = '\0';
		}
	}
	if (strcmp(conf->statedir, "/") == 0 ||
	    strcmp(conf->rundir, "/") == 0)
		yyerror("state and run directories cannot be /");
	if (strcmp(conf->frontd_user, conf->stored_user) == 0)
		yyerror("frontd and stored need different users");
}

/*
 * Starts reading another file.  A relative path is taken from the
 * directory of the file that names it.
 */
static int
file_push(const char *path)
{
	char		 full[PATH_MAX], dir[PATH_MAX], *slash;
	FILE		*fp;
	int		 n;

	if (nfiles == FILE_DEPTH_MAX) {
		yyerror("includes nested too deep");
		return -1;
	}
	if (path[0] != '/' && nfiles > 0) {
		(void)snprintf(dir, sizeof(dir), "%s", file.name);
		if ((slash = strrchr(dir, '/')) != NULL)
			*slash = '\0';
		else
			(void)snprintf(dir, sizeof(dir), ".");
		n = snprintf(full, sizeof(full), "%s/%s", dir, path);
	} else
		n = snprintf(full, sizeof(full), "%s", path);
	if (n < 0 || (size_t)n >= sizeof(full)) {
		yyerror("path too long: %s", path);
		return -1;
	}
	if ((fp = fopen(full, "r")) == NULL) {
		if (nfiles > 0)
			yyerror("%s: %s", full, strerror(errno));
		else {
			(void)snprintf(lasterror, sizeof(lasterror), "%s: %s",
			    full, strerror(errno));
			log_warnx("%s", lasterror);
		}
		return -1;
	}
	nfiles++;
	file.fp = fp;
	file.lineno = 1;
	memcpy(file.name, full, strlen(full) + 1);
	return 0;
}

int
config_parse(const char *path, struct mcvm_config *c)
{
	int	 rv;

	lasterror[0] = '\0';
	npushback = 0;
	errors = 0;
	nfiles = 0;
	conf = c;
	(void)snprintf(c->conffile, sizeof(c->conffile), "%s", path);
	yylval.lineno = 0;
	if (file_push(path) == -1)
		return -1;
	rv = yyparse();
	while (nfiles > 0) {
		(void)fclose(file.fp);
		nfiles--;
	}
	if (rv == 0 && errors == 0)
		config_finish();
	conf = NULL;
	return (rv != 0 || errors != 0) ? -1 : 0;
}
