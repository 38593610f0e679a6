/*
 * stall_getaddrinfo.c
 *	  A resolver that never answers, for one host name: preloaded
 *	  (LD_PRELOAD) into a server, its getaddrinfo() blocks for good when
 *	  asked for the name in UIDGEN_STALL_HOST, as a call to a dead DNS
 *	  server would for its timeouts; every other name goes to the C
 *	  library's.  Test 077 puts it into a member's postmaster.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
	static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
	const char *stall = getenv("UIDGEN_STALL_HOST");

	if (node != NULL && stall != NULL && strcmp(node, stall) == 0)
	{
		/* A signal handler may run, but the call never returns. */
		for (;;)
			pause();
	}
	if (real == NULL)
		real = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **)) dlsym(RTLD_NEXT,
																										 "getaddrinfo");
	return real(node, service, hints, res);
}
