/*
 * registry_hosts.cpp
 *	  Resolving the registry's host names apart (registry_hosts.hpp).
 */
#include "registry/registry_hosts.hpp"

#include "core/resolver.hpp"
#include "pg/pg_clock.hpp"
#include "registry/lease_table.hpp"

extern "C" {
#include "libpq-fe.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
}

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <netdb.h>

namespace uidgen::pg {

namespace {

/*
 * The names being resolved, at most one resolution each: one that outlasts
 * an attempt stays here for the next, so that a resolver that never
 * answers holds a thread per name, not a thread per attempt.
 */
constexpr int max_resolutions = 8;
Resolution *resolutions[max_resolutions];

/* Appends the addresses of name to addresses (comma separated), counting them in count. */
bool
resolve_name(const char *name, int64_t deadline, StringInfo addresses, int *count, char *reason, size_t reason_size)
{
	int slot = -1;

	for (int i = 0; i < max_resolutions && slot < 0; i++)
	{
		if (resolutions[i] != nullptr && strcmp(resolution_host(resolutions[i]), name) == 0)
			slot = i;
	}
	if (slot < 0)
	{
		for (int i = 0; i < max_resolutions && slot < 0; i++)
		{
			if (resolutions[i] == nullptr)
				slot = i;
		}
		if (slot < 0)
		{
			snprintf(reason, reason_size, "could not resolve host name \"%s\": %d other names are being resolved",
					 name, max_resolutions);
			return false;
		}
		resolutions[slot] = resolution_start(name);
		if (resolutions[slot] == nullptr)
		{
			snprintf(reason, reason_size, "could not start resolving host name \"%s\"", name);
			return false;
		}
	}

	Resolution *r = resolutions[slot];
	while (!resolution_done(r))
	{
		if (!wait_for_fd(resolution_fd(r), WL_SOCKET_READABLE, deadline))
		{
			snprintf(reason, reason_size, "could not resolve host name \"%s\" in time (the resolver does not answer)",
					 name);
			return false;
		}
	}
	resolutions[slot] = nullptr;
	if (resolution_error(r) != 0)
	{
		snprintf(reason, reason_size, "could not translate host name \"%s\" to address: %s", name,
				 gai_strerror(resolution_error(r)));
		resolution_release(r);
		return false;
	}
	appendStringInfo(addresses, "%s%s", addresses->len > 0 ? "," : "", resolution_addresses(r));
	*count = resolution_count(r);
	resolution_release(r);
	return true;
}

/* The value of keyword in options, or nullptr when unset or empty. */
const char *
option_value(const PQconninfoOption *options, const char *keyword)
{
	for (const PQconninfoOption *o = options; o->keyword != nullptr; o++)
	{
		if (strcmp(o->keyword, keyword) == 0)
			return o->val != nullptr && o->val[0] != '\0' ? o->val : nullptr;
	}
	return nullptr;
}

/* The element at of a comma-separated list (palloc'd), as libpq splits it. */
char *
list_element(const char *list, int at)
{
	const char *start = list;

	for (int i = 0; i < at; i++)
		start = strchr(start, ',') + 1;
	const char *end = strchr(start, ',');
	return pnstrdup(start, end != nullptr ? end - start : strlen(start));
}

int
list_length(const char *list)
{
	int n = 1;

	for (const char *c = list; *c != '\0'; c++)
		n += *c == ',';
	return n;
}

/* Whether libpq would resolve host: not a socket, not a numeric address. */
bool
is_name(const char *host)
{
	unsigned char address[16];

	return host[0] != '\0' && host[0] != '/' && host[0] != '@' && inet_pton(AF_INET, host, address) != 1 &&
		   inet_pton(AF_INET6, host, address) != 1;
}

void
append_element(StringInfo list, bool first, const char *element)
{
	appendStringInfo(list, "%s%s", first ? "" : ",", element);
}

} // namespace

bool
wait_for_fd(int fd, int events, int64_t deadline)
{
	for (;;)
	{
		int64_t left = deadline - monotonic_ms();

		CHECK_FOR_INTERRUPTS();
		if (left <= 0)
			return false;
		int rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | events, fd, left,
								   PG_WAIT_EXTENSION);

		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if (rc & (WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE))
			return true;
	}
}

bool
resolve_registry_hosts(const char *conninfo, int64_t deadline, RegistryHosts *hosts, char *reason,
					   size_t reason_size)
{
	char *error = nullptr;
	PQconninfoOption *options = PQconninfoParse(conninfo, &error);

	hosts->host = hosts->hostaddr = hosts->port = nullptr;
	if (options == nullptr)
	{
		/* Refused where it is set (module.cpp): libpq says why at the connection. */
		if (error != nullptr)
			PQfreemem(error);
		return true;
	}

	const char *host = option_value(options, "host");
	const char *port = option_value(options, "port");
	bool given_addresses = option_value(options, "hostaddr") != nullptr;
	if (host == nullptr)
		host = getenv("PGHOST");
	if (port == nullptr)
		port = getenv("PGPORT");
	given_addresses = given_addresses || (option_value(options, "host") == nullptr && getenv("PGHOSTADDR") != nullptr &&
										  getenv("PGHOSTADDR")[0] != '\0');
	if (host == nullptr || host[0] == '\0' || given_addresses)
	{
		PQconninfoFree(options);
		return true;
	}

	/* One entry per address: libpq tries each in turn, as it does a name's addresses. */
	StringInfoData new_hosts, new_addresses, new_ports;
	initStringInfo(&new_hosts);
	initStringInfo(&new_addresses);
	initStringInfo(&new_ports);
	int nhosts = list_length(host);
	int nports = port != nullptr ? list_length(port) : 0;
	bool any_name = false;
	bool first = true;
	bool resolved = true;
	for (int i = 0; i < nhosts && resolved; i++)
	{
		char *name = list_element(host, i);
		char *its_port = nports > 1 && i < nports ? list_element(port, i) : nullptr;

		if (!is_name(name))
		{
			append_element(&new_hosts, first, name);
			append_element(&new_addresses, first, "");
			if (its_port != nullptr)
				append_element(&new_ports, first, its_port);
			first = false;
			continue;
		}
		any_name = true;

		StringInfoData addresses;
		int count = 0;
		initStringInfo(&addresses);
		resolved = resolve_name(name, deadline, &addresses, &count, reason, reason_size);
		for (int a = 0; resolved && a < count; a++)
		{
			append_element(&new_hosts, first, name);
			append_element(&new_addresses, first, list_element(addresses.data, a));
			if (its_port != nullptr)
				append_element(&new_ports, first, its_port);
			first = false;
		}
	}
	PQconninfoFree(options);
	if (!resolved)
		return false;
	if (any_name)
	{
		hosts->host = new_hosts.data;
		hosts->hostaddr = new_addresses.data;
		hosts->port = nports > 1 ? new_ports.data : nullptr;
	}
	return true;
}

} // namespace uidgen::pg
