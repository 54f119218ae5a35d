/*
 * The keyboard, as mcvm's input tools name it: QEMU's key codes (QKeyCode,
 * the names QMP's input-send-event takes), a few aliases, chords such as
 * "ctrl-alt-f2", and the US layout that vm_type_text types with.  mcvmd
 * turns names into indexes of key_names[]; the monitor turns indexes back
 * into the names it sends QEMU.  Pure tables and lookups.
 */
#ifndef MCVM_KEYS_H
#define MCVM_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define KEY_CHORD_MAX	4	/* keys pressed together */

extern const char *const key_names[];	/* QKeyCode names, NULL-ended */
extern const size_t key_count;

/* The index of a key name or alias, or -1. */
int	 key_lookup(const char *);

/*
 * Parses a chord ("ret", "ctrl-alt-f2"): its keys in the order pressed, at
 * most KEY_CHORD_MAX, none twice.  Returns the count, or -1 with the part
 * that is not a key in bad (of badlen bytes).
 */
int	 key_chord(const char *, uint16_t *, char *, size_t);

/* The key and whether shift is held, for a US-layout character
 * (printable ASCII, tab, newline).  Returns 0, or -1 for any other. */
int	 key_of_char(int, uint16_t *, int *);

/* The valid names, aliases included, as "a, b, c" into buf. */
void	 key_list(char *, size_t);

#endif
