/*
 * resolver.hpp
 *	  Resolving a host name apart, so that whoever waits for it can stop
 *	  waiting.
 *
 * getaddrinfo() blocks for as long as the resolver takes, and a resolver
 * that does not answer takes its own timeouts (30 s and more), during which
 * a process that called it can neither give up nor end.  Here a detached
 * thread calls getaddrinfo() and getnameinfo(NI_NUMERICHOST), and nothing
 * else: no PostgreSQL code, every signal blocked.  The caller waits for
 * fd() to become readable with its own bound, and may give up at any time:
 * the thread frees the resolution when it ends, if it ever does.  Nothing
 * here throws.
 */
#pragma once

namespace uidgen {

struct Resolution;

/*
 * Starts resolving host (a name, not a list) in a thread of its own;
 * nullptr when no thread or memory could be had.
 */
Resolution *resolution_start(const char *host);

/* The host it resolves. */
const char *resolution_host(const Resolution *r);

/* A descriptor that becomes readable once the resolution has ended. */
int resolution_fd(const Resolution *r);

/* Whether it has ended. */
bool resolution_done(const Resolution *r);

/*
 * Once it has ended: 0 and the numeric addresses of the host, comma
 * separated, in getaddrinfo()'s order without repeats; or getaddrinfo()'s
 * error code (gai_strerror()) and an empty list.
 */
int resolution_error(const Resolution *r);
const char *resolution_addresses(const Resolution *r);
/* How many addresses resolution_addresses() lists. */
int resolution_count(const Resolution *r);

/* Lets go of r, ended or not: the last of the caller and the thread frees it. */
void resolution_release(Resolution *r);

} // namespace uidgen
