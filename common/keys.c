/*
 * Key names (see keys.h).  key_names[] holds the QKeyCode names of QEMU's
 * QMP schema that a PC keyboard has; aliases name some of them as people
 * do.
 */
#include <stdio.h>
#include <string.h>

#include "keys.h"

const char *const key_names[] = {
	"shift", "shift_r", "alt", "alt_r", "ctrl", "ctrl_r", "meta_l",
	"meta_r", "menu", "esc", "1", "2", "3", "4", "5", "6", "7", "8", "9",
	"0", "minus", "equal", "backspace", "tab", "q", "w", "e", "r", "t",
	"y", "u", "i", "o", "p", "bracket_left", "bracket_right", "ret", "a",
	"s", "d", "f", "g", "h", "j", "k", "l", "semicolon", "apostrophe",
	"grave_accent", "backslash", "z", "x", "c", "v", "b", "n", "m",
	"comma", "dot", "slash", "spc", "caps_lock", "f1", "f2", "f3", "f4",
	"f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "num_lock",
	"scroll_lock", "kp_divide", "kp_multiply", "kp_subtract", "kp_add",
	"kp_enter", "kp_decimal", "kp_0", "kp_1", "kp_2", "kp_3", "kp_4",
	"kp_5", "kp_6", "kp_7", "kp_8", "kp_9", "less", "sysrq", "print",
	"pause", "home", "pgup", "pgdn", "end", "left", "up", "down", "right",
	"insert", "delete",
	NULL
};
const size_t key_count = sizeof(key_names) / sizeof(key_names[0]) - 1;

static const struct {
	const char	*alias;
	const char	*name;
} key_aliases[] = {
	{ "enter", "ret" },
	{ "return", "ret" },
	{ "space", "spc" },
	{ "escape", "esc" },
	{ "control", "ctrl" },
	{ "del", "delete" },
	{ "ins", "insert" },
	{ "pageup", "pgup" },
	{ "pagedown", "pgdn" },
	{ "super", "meta_l" },
};
#define KEY_ALIASES	(sizeof(key_aliases) / sizeof(key_aliases[0]))

static int
key_index(const char *name, size_t len)
{
	size_t	 i;

	for (i = 0; i < key_count; i++)
		if (strlen(key_names[i]) == len &&
		    memcmp(key_names[i], name, len) == 0)
			return (int)i;
	for (i = 0; i < KEY_ALIASES; i++)
		if (strlen(key_aliases[i].alias) == len &&
		    memcmp(key_aliases[i].alias, name, len) == 0)
			return key_index(key_aliases[i].name,
			    strlen(key_aliases[i].name));
	return -1;
}

int
key_lookup(const char *name)
{
	return key_index(name, strlen(name));
}

int
key_chord(const char *s, uint16_t *keys, char *bad, size_t badlen)
{
	const char	*dash;
	size_t		 len;
	int		 n = 0, i, k;

	for (;;) {
		dash = strchr(s, '-');
		len = dash != NULL ? (size_t)(dash - s) : strlen(s);
		if ((k = key_index(s, len)) == -1) {
			(void)snprintf(bad, badlen, "%.*s", (int)len, s);
			return -1;
		}
		for (i = 0; i < n; i++)
			if (keys[i] == k) {
				(void)snprintf(bad, badlen, "%.*s twice",
				    (int)len, s);
				return -1;
			}
		if (n == KEY_CHORD_MAX) {
			(void)snprintf(bad, badlen, "more than %d keys at "
			    "once", KEY_CHORD_MAX);
			return -1;
		}
		keys[n++] = (uint16_t)k;
		if (dash == NULL)
			return n;
		s = dash + 1;
	}
}

/* US layout: the unshifted and shifted character of each key that types. */
static const struct {
	char		 plain;
	char		 shifted;
	const char	*name;
} key_chars[] = {
	{ '1', '!', "1" }, { '2', '@', "2" }, { '3', '#', "3" },
	{ '4', '$', "4" }, { '5', '%', "5" }, { '6', '^', "6" },
	{ '7', '&', "7" }, { '8', '*', "8" }, { '9', '(', "9" },
	{ '0', ')', "0" }, { '-', '_', "minus" }, { '=', '+', "equal" },
	{ '[', '{', "bracket_left" }, { ']', '}', "bracket_right" },
	{ ';', ':', "semicolon" }, { '\'', '"', "apostrophe" },
	{ '`', '~', "grave_accent" }, { '\\', '|', "backslash" },
	{ ',', '<', "comma" }, { '.', '>', "dot" }, { '/', '?', "slash" },
	{ ' ', 0, "spc" }, { '\t', 0, "tab" }, { '\n', 0, "ret" },
};
#define KEY_CHARS	(sizeof(key_chars) / sizeof(key_chars[0]))

int
key_of_char(int c, uint16_t *key, int *shift)
{
	char	 name[2] = { 0, 0 };
	size_t	 i;
	int	 k;

	*shift = 0;
	if (c >= 'a' && c <= 'z')
		name[0] = (char)c;
	else if (c >= 'A' && c <= 'Z') {
		name[0] = (char)(c - 'A' + 'a');
		*shift = 1;
	}
	if (name[0] != '\0') {
		if ((k = key_index(name, 1)) == -1)
			return -1;
		*key = (uint16_t)k;
		return 0;
	}
	for (i = 0; i < KEY_CHARS; i++)
		if (c == key_chars[i].plain || (c != 0 &&
		    c == key_chars[i].shifted)) {
			*shift = c == key_chars[i].shifted;
			if ((k = key_lookup(key_chars[i].name)) == -1)
				return -1;
			*key = (uint16_t)k;
			return 0;
		}
	return -1;
}

void
key_list(char *buf, size_t len)
{
	size_t	 i, o = 0;
	int	 n;

	buf[0] = '\0';
	for (i = 0; i < key_count + KEY_ALIASES; i++) {
		n = snprintf(buf + o, len - o, "%s%s", i == 0 ? "" : ", ",
		    i < key_count ? key_names[i] :
		    key_aliases[i - key_count].alias);
		if (n < 0 || (size_t)n >= len - o)
			return;		/* cut: the caller's buffer */
		o += (size_t)n;
	}
}
