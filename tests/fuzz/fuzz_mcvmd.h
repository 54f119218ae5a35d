/*
 * What fuzz-mcvmd's input language and its seed corpus generator
 * (corpus_mcvmd.c) share: the long runs a str or bytes field may be, and
 * the shapes of the monitor's answers (u u32, U u64, s str, b bytes).
 */
#ifndef MCVM_FUZZ_MCVMD_H
#define MCVM_FUZZ_MCVMD_H

#define FZ_LONG_MAX	180000
/* 0x80 | pattern << 4 | length index: a run of one pattern. */
#define FZ_RUN_PATTERNS	{ "a", "\x01", "\xc3\xa9", "\"", "\xff", \
	"\xe2\x82", "\\u0000", "%s" }
#define FZ_RUN_LENGTHS	{ 63, 64, 255, 256, 1023, 1024, 4095, 4096, \
	16383, 16384, 49151, 49152, 65536, 131072, 131073, FZ_LONG_MAX }

#define FZ_STATUS_SHAPE	"uuuuuuUUUUUUU"
#define FZ_ANSWERS {							\
	{ IMSG_VMM_OK,			"u" },				\
	{ IMSG_VMM_ERROR,		"uus" },			\
	{ IMSG_VMM_QMP_STATE,		"su" },				\
	{ IMSG_VMM_JOB,			"u" },				\
	{ IMSG_VMM_JOB_STATE,		FZ_STATUS_SHAPE },		\
	{ IMSG_VMM_JOB_OUTPUT,		FZ_STATUS_SHAPE "UUsuUUsu" },	\
	{ IMSG_VMM_FILE_DATA,		"UUuub" },			\
	{ IMSG_VMM_FILE_ENTRIES,	"uusuuUU" },			\
	{ IMSG_VMM_FILE_WRITTEN,	"Uu" },				\
	{ IMSG_VMM_GUEST_INFO_RESULT,	"sssUuuuuuu" },			\
	{ IMSG_VMM_READY,		"sss" },			\
	{ IMSG_VMM_EVENT,		"us" },				\
	{ IMSG_HELLO,			"u" },				\
	{ IMSG_VMM_SNAPSHOT_DONE,	"Uu" },				\
}

#endif
