/*
 * module.cpp
 *	  Module magic, _PG_init and the GUCs.
 */
#include "pg/guard.hpp"
#include "pg/backend.hpp"
#include "pg/settings.hpp"

extern "C" {
#include "utils/guc.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

namespace uidgen::pg {

int generator_setting = static_cast<int>(GeneratorKind::Cached);
int max_backwards_wait_ms = 1000;
int max_borrow_ms = 10000;
bool worker_reuse = true;

namespace {

const struct config_enum_entry generator_options[] = {
	{"cached", static_cast<int>(GeneratorKind::Cached), false},
	{"default", static_cast<int>(GeneratorKind::Default), false},
	{nullptr, 0, false},
};

} // namespace

void
define_settings()
{
	DefineCustomEnumVariable("uidgen.generator",
							 gettext_noop("Selects how uid_next() follows the clock."),
							 gettext_noop("\"cached\" borrows future time units when a unit's sequence "
										  "runs out; \"default\" waits for the next unit."),
							 &generator_setting, generator_setting, generator_options, PGC_USERSET, 0,
							 nullptr, nullptr, nullptr);

	DefineCustomIntVariable("uidgen.max_backwards_wait",
							gettext_noop("Longest wait of the default generator for a clock that moved "
										 "backwards; further back is an error."),
							nullptr, &max_backwards_wait_ms, max_backwards_wait_ms, 0, 3600 * 1000,
							PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);

	/*
	 * One bound for the server: it is also the least margin before a dead
	 * backend's worker is reused.  What makes that margin safe is the time
	 * reservation (reservation.hpp), which covers whatever the dead backend
	 * borrowed under any value this had.
	 */
	DefineCustomIntVariable("uidgen.max_borrow",
							gettext_noop("How far the cached generator may run ahead of the clock."),
							gettext_noop("Also the least margin before the worker id of a backend that died "
										 "without releasing it is reused; the time reservation keeps it safe."),
							&max_borrow_ms, max_borrow_ms, 0, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS,
							nullptr, nullptr, nullptr);

	DefineCustomBoolVariable("uidgen.worker_reuse",
							 gettext_noop("Reuses the worker ids of released workers before allocating "
										  "new ones."),
							 gettext_noop("Off allocates a new worker id for every backend, which uses up "
										  "the layout's worker ids faster."),
							 &worker_reuse, worker_reuse, PGC_SUSET, 0, nullptr, nullptr,
							 nullptr);

	MarkGUCPrefixReserved("uidgen");
}

} // namespace uidgen::pg

void
_PG_init(void)
{
	uidgen::pg::define_settings();
	uidgen::pg::register_backend_callbacks();
}
