#ifndef MCVM_NETD_H
#define MCVM_NETD_H

void	 netd_sandbox(int);

#endif
