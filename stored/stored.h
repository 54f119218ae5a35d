#ifndef MCVM_STORED_H
#define MCVM_STORED_H

void	 stored_sandbox(int);
void	 stored_helper_sandbox(void);

#endif
