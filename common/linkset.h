/*
 * Linker sets: tables whose rows live in the files that define them.
 *
 * LINKSET_ADD(set, type, row) puts a pointer to the object row in the ELF
 * section "linkset_<set>"; the linker gathers every such pointer of the
 * program into one array and defines __start_ and __stop_ symbols around
 * it.  LINKSET_FOREACH walks that array.  A row is a pointer, so the
 * array has no padding whatever the row's type.
 *
 * The order of the rows is the link order: a reader must not depend on
 * it, and must check what it needs (one row per key, say) when it builds
 * its index.  A set with no rows is empty (the symbols are weak).
 */
#ifndef MCVM_LINKSET_H
#define MCVM_LINKSET_H

#define LINKSET_ADD(set, type, row)					\
	static type *const linkset_##set##_##row			\
	    __attribute__((__used__, __section__("linkset_" #set),	\
	    __aligned__(sizeof(void *)))) = &(row)

#define LINKSET_DECLARE(set, type)					\
	extern type *const __start_linkset_##set[]			\
	    __attribute__((__weak__));					\
	extern type *const __stop_linkset_##set[]			\
	    __attribute__((__weak__))

#define LINKSET_FOREACH(set, p)						\
	for ((p) = __start_linkset_##set; (p) < __stop_linkset_##set; (p)++)

#endif
