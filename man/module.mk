MANPAGES := $(wildcard man/*.[1-9])
CHECK_SUITES += manlint
