/*
 * Writes a seed corpus for fuzz-agent: one valid frame of every message
 * type, in directory argv[1].
 */
#include <err.h>
#include <stdio.h>
#include <string.h>

#include "agent_proto.h"

static uint8_t	 buf[AGENT_FRAME_MAX];

static void
emit(const char *dir, struct agent_msg *m)
{
	char	 path[512];
	FILE	*f;
	int	 n;

	if ((n = agent_encode(m, buf, sizeof(buf))) == -1)
		err(1, "encode %s", agent_type_name(m->type));
	snprintf(path, sizeof(path), "%s/seed-%04x", dir, m->type);
	if ((f = fopen(path, "w")) == NULL)
		err(1, "%s", path);
	if (fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
		err(1, "%s", path);
}

int
main(int argc, char *argv[])
{
	static const uint8_t page[] = "ok \xe2\x82\xac \xff \xe2\x82";
	static const uint8_t seed[AGENT_SEED_LEN] = { 1, 2, 3 };
	static uint8_t		 ents[256];
	struct agent_dirent	 d;
	struct agent_msg	 m;
	size_t			 elen = 0;
	uint16_t		 t;

	if (argc != 2)
		errx(2, "usage: fuzz-agent-corpus dir");
	for (t = 1; t < AGENT_TYPE_MAX; t++) {
		memset(&m, 0, sizeof(m));
		m.type = t;
		m.id = t;
		switch (t) {
		case AGENT_HELLO:
			m.u.hello.version = AGENT_PROTO_VERSION;
			break;
		case AGENT_EXEC:
			m.u.exec.cwd = "";
			m.u.exec.argc = 1;
			m.u.exec.argv[0] = "true";
			break;
		case AGENT_FILE_READ:
			m.u.file_read.path = "a";
			break;
		case AGENT_FILE_WRITE:
			m.u.file_write.path = "a";
			break;
		case AGENT_FILE_LIST:
			m.u.file_list.path = "a";
			m.u.file_list.depth = 2;
			m.u.file_list.max = AGENT_LIST_MAX;
			break;
		case AGENT_NET_CONFIG:
			m.u.net_config.address = "10.231.0.22/30";
			m.u.net_config.gateway = "10.231.0.21";
			m.u.net_config.resolver = "192.0.2.53";
			m.u.net_config.mac = "52:54:00:6d:00:05";
			break;
		case AGENT_SEED:
			m.u.seed.data = seed;
			break;
		case AGENT_IDENTITY:
			m.u.identity.hostname = "build-1";
			m.u.identity.machine_id =
			    "0123456789abcdef0123456789abcdef";
			break;
		}
		emit(argv[1], &m);
		memset(&m, 0, sizeof(m));
		m.type = AGENT_REPLY | t;
		m.id = t;
		switch (t) {
		case AGENT_HELLO:
			m.u.hello.agent_version = "0.1.0";
			break;
		case AGENT_INFO:
			m.u.info.os = m.u.info.kernel = "x";
			m.u.info.agent_version = "0.1.0";
			break;
		case AGENT_JOB_STATUS:
		case AGENT_JOB_CANCEL:
			m.u.status.st.state = AGENT_JOB_RUNNING;
			break;
		case AGENT_JOB_READ:
			m.u.output.st.state = AGENT_JOB_COMPLETED;
			m.u.output.st.out_total = sizeof(page) - 1;
			m.u.output.st.out_eof = 1;
			m.u.output.out = page;
			m.u.output.out_len = sizeof(page) - 1;
			break;
		case AGENT_FILE_READ:
			m.u.file_data.data = page;
			m.u.file_data.len = 4;
			break;
		case AGENT_FILE_LIST:
			d.name = "a/\xe2\x82\xac";
			d.type = AGENT_FTYPE_FILE;
			d.mode = 0644;
			d.size = 3;
			d.mtime = 1700000000;
			(void)agent_dirent_put(ents, sizeof(ents), &elen, &d);
			d.name = "a";
			d.type = AGENT_FTYPE_DIR;
			(void)agent_dirent_put(ents, sizeof(ents), &elen, &d);
			m.u.file_entries.count = 2;
			m.u.file_entries.entries = ents;
			m.u.file_entries.len = (uint32_t)elen;
			break;
		}
		emit(argv[1], &m);
	}
	memset(&m, 0, sizeof(m));
	m.type = AGENT_ERROR;
	m.u.error.code = AGENT_ERR_PATH;
	m.u.error.message = "x";
	emit(argv[1], &m);
	return 0;
}
