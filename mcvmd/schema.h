#ifndef MCVMD_SCHEMA_H
#define MCVMD_SCHEMA_H

#include <sqlite3.h>

#define SCHEMA_VERSION	12

int	 schema_version(sqlite3 *);
int	 schema_migrate(sqlite3 *, int);

#endif
