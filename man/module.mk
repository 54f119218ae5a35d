MANPAGES := $(wildcard man/*.[1-9])
