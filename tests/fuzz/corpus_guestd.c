/*
 * Writes a seed corpus for fuzz-guestd in directory argv[1]: each seed
 * a few requests as raw frames (step 1 of the harness), with a process
 * exit and time passing between them.
 */
#include <err.h>
#include <stdio.h>
#include <string.h>

#include "agent_proto.h"

static uint8_t	 seed[8 * AGENT_FRAME_MAX];
static size_t	 seed_len;
static int	 nseeds;

static void
step_frame(struct agent_msg *m)
{
	int	 n;

	if ((n = agent_encode(m, seed + seed_len + 3,
	    sizeof(seed) - seed_len - 3)) == -1)
		err(1, "encode %s", agent_type_name(m->type));
	seed[seed_len] = 1;
	seed[seed_len + 1] = (uint8_t)n;
	seed[seed_len + 2] = (uint8_t)(n >> 8);
	seed_len += 3 + (size_t)n;
}

static void
step(uint8_t op, uint8_t arg)
{
	seed[seed_len++] = op;
	seed[seed_len++] = arg;
}

static void
emit(const char *dir)
{
	char	 path[512];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/seed-%02d", dir, nseeds++);
	if ((f = fopen(path, "w")) == NULL)
		err(1, "%s", path);
	if (fwrite(seed, 1, seed_len, f) != seed_len || fclose(f) != 0)
		err(1, "%s", path);
	seed_len = 0;
}

static void
req(struct agent_msg *m, uint16_t type, uint32_t id)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->id = id;
}

int
main(int argc, char *argv[])
{
	static const uint8_t data[] = "hello \xc3\xa9\n";
	static uint8_t rnd[AGENT_SEED_LEN] = { 1 };
	struct agent_msg	 m;
	uint16_t		 t;

	if (argc != 2)
		errx(2, "usage: fuzz-guestd-corpus dir");
	/* A job: started, read past its end and at it, cancelled. */
	req(&m, AGENT_EXEC, 2);
	m.u.exec.flags = AGENT_EXEC_SHELL;
	m.u.exec.timeout_ms = 1000;
	m.u.exec.cwd = "";
	m.u.exec.argc = 1;
	m.u.exec.argv[0] = "echo hi";
	m.u.exec.envc = 1;
	m.u.exec.env[0] = "A=b";
	m.u.exec.stdin_data = data;
	m.u.exec.stdin_len = sizeof(data) - 1;
	step_frame(&m);
	step(2, 0);
	req(&m, AGENT_JOB_READ, 3);
	m.u.job_read.job = 1;
	m.u.job_read.out_cursor = 1000;
	m.u.job_read.out_max = AGENT_PAGE_MAX;
	m.u.job_read.err_max = AGENT_PAGE_MAX;
	step_frame(&m);
	m.u.job_read.out_cursor = 2;
	m.u.job_read.wait_ms = 1000;
	step_frame(&m);
	req(&m, AGENT_JOB_CANCEL, 4);
	m.u.job.job = 1;
	step_frame(&m);
	req(&m, AGENT_JOB_STATUS, 5);
	m.u.job.job = 1;
	step_frame(&m);
	step(3, 10);
	emit(argv[1]);
	/* Files. */
	req(&m, AGENT_FILE_WRITE, 6);
	m.u.file_write.path = "d/\xc3\xa9";
	m.u.file_write.flags = AGENT_WRITE_MKDIRS;
	m.u.file_write.data = data;
	m.u.file_write.len = sizeof(data) - 1;
	step_frame(&m);
	req(&m, AGENT_FILE_READ, 7);
	m.u.file_read.path = "d/\xc3\xa9";
	m.u.file_read.length = 4;
	step_frame(&m);
	m.u.file_read.path = "../x";
	step_frame(&m);
	req(&m, AGENT_FILE_LIST, 8);
	m.u.file_list.path = "/workspace";
	m.u.file_list.depth = AGENT_LIST_DEPTH_MAX;
	m.u.file_list.max = AGENT_LIST_MAX;
	step_frame(&m);
	m.u.file_list.path = "d";
	m.u.file_list.max = 1;
	step_frame(&m);
	emit(argv[1]);
	/* Everything else, once. */
	for (t = AGENT_PING; t < AGENT_TYPE_MAX; t++) {
		req(&m, t, 10 + t);
		switch (t) {
		case AGENT_EXEC:
		case AGENT_JOB_READ:
		case AGENT_FILE_READ:
		case AGENT_FILE_WRITE:
		case AGENT_FILE_LIST:
		case AGENT_POWEROFF:
			continue;
		case AGENT_SET_TIME:
			m.u.set_time.sec = 1700000000;
			break;
		case AGENT_SEED:
			m.u.seed.data = rnd;
			break;
		case AGENT_NET_CONFIG:
			m.u.net_config.address = "10.0.0.2/24";
			m.u.net_config.gateway = "10.0.0.1";
			m.u.net_config.resolver = "";
			m.u.net_config.mac = "52:54:00:00:00:01";
			break;
		case AGENT_IDENTITY:
			m.u.identity.hostname = "build-1";
			m.u.identity.machine_id =
			    "0123456789abcdef0123456789abcdef";
			break;
		default:
			break;
		}
		step_frame(&m);
	}
	emit(argv[1]);
	return 0;
}
