/*
 * resolver.cpp
 *	  Resolving a host name in a thread of its own (resolver.hpp).
 */
#include "core/resolver.hpp"

#include "core/cpp_only.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <type_traits>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uidgen {

constexpr size_t addresses_size = 1024;

struct Resolution
{
	char *host;
	int pipe_fds[2];			/* the thread writes a byte to [1] when it ends */
	std::atomic<bool> done;
	std::atomic<int> holders;	/* the caller and the thread */
	int error;
	int count;
	char addresses[addresses_size];
};
static_assert(std::is_trivially_destructible_v<Resolution>);

namespace {

void
free_resolution(Resolution *r)
{
	close(r->pipe_fds[0]);
	close(r->pipe_fds[1]);
	free(r->host);
	r->~Resolution();
	free(r);
}

/* Appends address to r's list unless it is there already or the list is full. */
void
note_address(Resolution *r, const char *address)
{
	size_t used = strlen(r->addresses);
	size_t len = strlen(address);

	for (const char *at = r->addresses; (at = strstr(at, address)) != nullptr; at += len)
	{
		if ((at == r->addresses || at[-1] == ',') && (at[len] == ',' || at[len] == '\0'))
			return;
	}
	if (used + len + 2 > addresses_size)
		return;
	if (used > 0)
		r->addresses[used++] = ',';
	memcpy(r->addresses + used, address, len + 1);
	r->count++;
}

void *
resolve(void *arg)
{
	Resolution *r = static_cast<Resolution *>(arg);
	struct addrinfo hints;
	struct addrinfo *found = nullptr;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r->error = getaddrinfo(r->host, nullptr, &hints, &found);
	if (r->error == 0)
	{
		for (struct addrinfo *a = found; a != nullptr; a = a->ai_next)
		{
			char address[NI_MAXHOST];

			if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
				getnameinfo(a->ai_addr, a->ai_addrlen, address, sizeof(address), nullptr, 0, NI_NUMERICHOST) == 0)
				note_address(r, address);
		}
		freeaddrinfo(found);
		if (r->count == 0)
			r->error = EAI_NONAME;
	}
	r->done.store(true, std::memory_order_release);
	char byte = 1;
	ssize_t written;
	do
		written = write(r->pipe_fds[1], &byte, 1);
	while (written < 0 && errno == EINTR);
	if (r->holders.fetch_sub(1) == 1)
		free_resolution(r);
	return nullptr;
}

} // namespace

Resolution *
resolution_start(const char *host)
{
	void *memory = calloc(1, sizeof(Resolution));

	if (memory == nullptr)
		return nullptr;
	Resolution *r = new (memory) Resolution();
	r->host = strdup(host);
	if (r->host == nullptr || pipe2(r->pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0)
	{
		free(r->host);
		r->~Resolution();
		free(r);
		return nullptr;
	}
	r->done.store(false);
	r->holders.store(2);

	/* The thread takes every signal blocked: the process's handlers never run in it. */
	sigset_t all;
	sigset_t previous;
	pthread_attr_t attr;
	pthread_t thread;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &previous);
	int failed = pthread_attr_init(&attr);
	if (failed == 0)
	{
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		failed = pthread_create(&thread, &attr, resolve, r);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &previous, nullptr);
	if (failed != 0)
	{
		free_resolution(r);
		return nullptr;
	}
	return r;
}

const char *
resolution_host(const Resolution *r)
{
	return r->host;
}

int
resolution_fd(const Resolution *r)
{
	return r->pipe_fds[0];
}

bool
resolution_done(const Resolution *r)
{
	return r->done.load(std::memory_order_acquire);
}

int
resolution_error(const Resolution *r)
{
	return r->error;
}

const char *
resolution_addresses(const Resolution *r)
{
	return r->addresses;
}

int
resolution_count(const Resolution *r)
{
	return r->count;
}

void
resolution_release(Resolution *r)
{
	if (r->holders.fetch_sub(1) == 1)
		free_resolution(r);
}

} // namespace uidgen
