# uidgen: Baidu's UidGenerator as a PostgreSQL extension, in C++17.
#
#   make && make install    build and install into the PostgreSQL that
#                           PG_CONFIG names (pg_config on the PATH by default)
#   make installcheck       pg_regress, isolation and TAP tests against it
#   make test               everything, on throwaway clusters (see README);
#                           PostgreSQL 15, or PG_CONFIG's server if given;
#                           TESTS='032 regress' runs only the named jobs,
#                           REPEAT=20 each TAP file 20 times, in parallel
#   make test-stress        make test with one core kept busy by a loop
#   make test-churn         1,000 databases created, used and dropped in
#                           turn, in scope server and under a registry
#   make test-all PG_SOURCES=DIR [CITUS_SOURCE=DIR] [PARTMAN_SOURCE=DIR]
#                           make test on 15 and on each PostgreSQL source
#                           tarball in DIR (17, 18), built once per machine;
#                           on 17 with Citus, if given its source tarball
#   make nemesis            seeded random faults against a fleet on
#                           loopback, every ID checked (docs/nemesis.md);
#                           SEED=n MINUTES=m FAULTS=kind,...|all
#   make demo               a short demo on a throwaway cluster
#   make bench              benchmarks, written to test/bench/results
#   make cursor-bench       the shared cursor word against a ring buffer
#                           (no PostgreSQL needed; see test/bench/README.md)
#   make bench-scope        the server-wide generator's targets (uidgen.scope)
#   make bench-registry     what a registry (uidgen.registry) costs a member
#   make bench-lives        one registry serving 1,000 simulated server lives
#   make bench-durable      inserts with fsync, full-page writes and checkpoints
#                           on, ID schemes side by side (SNOWFLAKE_TARBALL)
#   make deb                the Debian packages postgresql-VERSION-uidgen,
#                           into build/deb (docs/install.md)
#   make dist               the PGXN release build/uidgen-VERSION.zip of HEAD
#   make check-meta         META.json against the PGXN spec and uidgen.control
#   make test-packages      as root: the .deb and the PGXN release installed
#                           into the system's PostgreSQL 15 and tested
#   make model-check        the fleet protocol's SPIN models and their mutants
#                           (no PostgreSQL needed; see model/README.md)

EXTENSION = uidgen
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" uidgen.control)

MODULE_big = $(EXTENSION)
# The subsystems, each depending only on those before it (docs/design.md,
# the subsystems; scripts/check-layering.sh, run by make test, enforces it), and
# src/module.cpp on top.  registry/membership, the member side's high layer, is
# a layer of its own inside the registry's folder, above worker_table.
LAYERS = core pg layout registry worker_table registry/membership claim server_scope backend_scope
OBJS = $(patsubst %.cpp,%.o,$(sort $(foreach layer,$(LAYERS),$(wildcard src/$(layer)/*.cpp)) src/module.cpp))
DATA = $(wildcard sql/$(EXTENSION)--*.sql)

REGRESS = $(shell cat test/regress_schedule 2>/dev/null)
REGRESS_OPTS = --inputdir=test --outputdir=build/regress

ISOLATION = $(shell cat test/isolation_schedule 2>/dev/null)
ISOLATION_OPTS = --inputdir=test --outputdir=build/isolation --load-extension=$(EXTENSION)

TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

EXTRA_CLEAN = build tmp_check
# pg_regress does not create its output directories.
REGRESS_PREP = build/regress build/isolation

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)

# PostgreSQL's headers are not C++17-clean (e.g. "register"): include them as
# system headers so that our warnings stay meaningful.
override PG_CPPFLAGS += -Isrc -isystem $(shell $(PG_CONFIG) --includedir-server 2>/dev/null)
override PG_CXXFLAGS += -std=c++17 -Wall -Wextra -Wno-register -fno-strict-aliasing
# make WERROR=1 (what make test does) turns every warning into an error.
WARNINGS_AS_ERRORS = $(if $(WERROR),-Werror)
override PG_CXXFLAGS += $(WARNINGS_AS_ERRORS)
# make MEMBER_PROTOCOL=2: a test build whose member speaks protocol version
# 2 (src/registry/protocol.hpp), which test/t/100_registry_protocol_versions.pl
# runs against registries of versions 1 to 3.
ifdef MEMBER_PROTOCOL
override PG_CPPFLAGS += -DUIDGEN_MEMBER_PROTOCOL=$(MEMBER_PROTOCOL)
endif
SHLIB_LINK += -lstdc++ -pthread
# The registry agent (src/registry/registry_connection.cpp) reaches the registry with
# libpq, as dblink and postgres_fdw do.
override PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir 2>/dev/null)
SHLIB_LINK_INTERNAL += $(libpq)

include $(PGXS)

# With LLVM (Debian builds PostgreSQL --with-llvm) PGXS also compiles every
# .cpp to bitcode for JIT inlining, but with clang and without PG_CXXFLAGS,
# which fails on C++17.  Give the bitcode step the same flags.
COMPILE.cxx.bc += $(PG_CXXFLAGS)

# Makefile.global sets PROVE_FLAGS: add our shared Perl module after it.
PROVE_FLAGS += -I ./test/perl

# PGXS tracks no header dependencies; the project is small enough for every
# object to depend on every header.
$(OBJS): $(wildcard src/*/*.hpp src/*/*/*.hpp)

# ---- the project's own targets ------------------------------------------

GTEST_CXXFLAGS = -std=c++17 -Wall -Wextra $(WARNINGS_AS_ERRORS) -O1 -g -Isrc -Itest/bench
UNIT_SOURCES = $(sort $(wildcard test/unit/*.cpp))
CORE_SOURCES = $(sort $(wildcard src/core/*.cpp))
# UidGenerator's ring buffer, measured against the shared cursor (make
# cursor-bench) and unit-tested, but never part of the module.
RING_SOURCES = $(sort $(wildcard test/bench/ring/*.cpp))

build/unit_tests: $(UNIT_SOURCES) $(CORE_SOURCES) $(RING_SOURCES) $(wildcard src/core/*.hpp test/bench/ring/*.hpp)
	@mkdir -p build
	$(CXX) $(GTEST_CXXFLAGS) -o $@ $(UNIT_SOURCES) $(CORE_SOURCES) $(RING_SOURCES) -lgtest -lgtest_main -lpthread

unit: build/unit_tests
	build/unit_tests

LOAD_SOURCES = $(sort $(wildcard test/load/*.cpp))
# Against the libpq of the server's own installation, whose headers it uses.
LOAD_LIBDIR = $(shell $(PG_CONFIG) --libdir 2>/dev/null)
build/uidgen_load: $(LOAD_SOURCES) $(wildcard test/load/*.hpp)
	@mkdir -p build
	$(CXX) -std=c++17 -Wall -Wextra $(WARNINGS_AS_ERRORS) -O2 -g -I$(shell $(PG_CONFIG) --includedir 2>/dev/null) -o $@ $(LOAD_SOURCES) \
		-L$(LOAD_LIBDIR) -Wl,-rpath,$(LOAD_LIBDIR) -lpq -lpthread

# A getaddrinfo() that never answers for one name, preloaded into a server
# by test 077 (test/shim/stall_getaddrinfo.c).
build/stall_getaddrinfo.so: test/shim/stall_getaddrinfo.c
	@mkdir -p build
	$(CC) -std=gnu99 -Wall -Wextra $(WARNINGS_AS_ERRORS) -O2 -shared -fPIC -o $@ $< -ldl

# The nemesis' load client (docs/nemesis.md), against the same libpq.
build/nemesis_client: test/nemesis/client.cpp
	@mkdir -p build
	$(CXX) -std=c++17 -Wall -Wextra $(WARNINGS_AS_ERRORS) -O2 -g -I$(shell $(PG_CONFIG) --includedir 2>/dev/null) -o $@ $< \
		-L$(LOAD_LIBDIR) -Wl,-rpath,$(LOAD_LIBDIR) -lpq

# The server-wide generator's cursor word against UidGenerator's ring
# buffer, in threads of one process; not part of make test.
build/cursor_bench: test/bench/cursor_bench.cpp $(CORE_SOURCES) $(RING_SOURCES) $(wildcard src/core/*.hpp test/bench/ring/*.hpp)
	@mkdir -p build
	$(CXX) -std=c++17 -Wall -Wextra $(WARNINGS_AS_ERRORS) -O2 -g -Isrc -Itest/bench -pthread -o $@ test/bench/cursor_bench.cpp $(CORE_SOURCES) $(RING_SOURCES)

cursor-bench: build/cursor_bench
	build/cursor_bench $(CURSOR_BENCH_ARGS)

build/regress build/isolation:
	@mkdir -p $@

# PG_CONFIG goes to the script only if the user gave it: the default above
# is for PGXS, and the script's default is Debian's PostgreSQL 15.
USER_PG_CONFIG = $(if $(filter command line environment%,$(origin PG_CONFIG)),$(PG_CONFIG))

# The extension's scripts that are assembled from subsystems' SQL
# (scripts/assemble-sql.pl; make test checks that they are up to date).
sql:
	@perl scripts/assemble-sql.pl

test:
	@PG_CONFIG='$(USER_PG_CONFIG)' TESTS='$(TESTS)' TEST_JOBS='$(TEST_JOBS)' REPEAT='$(REPEAT)' scripts/test.sh

test-long:
	@PG_CONFIG='$(USER_PG_CONFIG)' TEST_JOBS='$(TEST_JOBS)' REPEAT='$(REPEAT)' UIDGEN_LONG=only scripts/test.sh

test-stress:
	@PG_CONFIG='$(USER_PG_CONFIG)' TESTS='$(TESTS)' TEST_JOBS='$(TEST_JOBS)' REPEAT='$(REPEAT)' UIDGEN_STRESS=1 scripts/test.sh

# Database churn at scale: 1,000 databases created, used and dropped in
# turn, in scope server (027) and under a registry (078), at the default
# limits; about half an hour on two cores, so not part of CI.
test-churn:
	@PG_CONFIG='$(USER_PG_CONFIG)' TESTS='027 078' UIDGEN_CHURN='$(or $(CHURN),1000)' scripts/test.sh

test-all:
	@PG_CONFIG= CITUS_SOURCE='$(CITUS_SOURCE)' PARTMAN_SOURCE='$(PARTMAN_SOURCE)' scripts/test-all.sh '$(PG_SOURCES)'

# Seeded random faults against a fleet on loopback, every ID checked
# (docs/nemesis.md): SEED=n, MINUTES=m, FAULTS=kind,... or all.
nemesis:
	@PG_CONFIG='$(USER_PG_CONFIG)' scripts/nemesis.sh --seed '$(or $(SEED),1)' --minutes '$(or $(MINUTES),3)' \
		--faults '$(or $(FAULTS),default)'

# The routine operations alone (registry migration, credential rotation,
# reinstall, ...), each at least once, for two minutes.
nemesis-operations:
	@PG_CONFIG='$(USER_PG_CONFIG)' scripts/nemesis.sh --seed '$(or $(SEED),1)' --minutes '$(or $(MINUTES),2)' \
		--faults operations

demo:
	@PG_CONFIG='$(USER_PG_CONFIG)' scripts/demo.sh

# Benchmarks against nextval(), identity and UUIDs; see test/bench/README.md.
bench:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/run.sh

# The targets of the server-wide generator, scope server and backend against
# identity (test/bench/README.md); ROUNDS=N sets the rounds.  Not part of test.
bench-scope:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/scope.sh

# What a new connection that inserts one row costs with the defaults, against
# identity, split into library load, catalog, claim and exit
# (test/bench/README.md); ROUNDS=N sets the rounds.  Not part of test.
bench-churn:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/churn.sh

# What a registry costs a member's sessions, against a server without one
# (test/bench/README.md); ROUNDS=N sets the rounds.  Not part of test.
bench-registry:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/registry.sh

# One registry serving LIVES (1,000) simulated server lives: claim and renew
# latency and CPU against registry_rules() (test/bench/README.md).
bench-lives:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/lives.sh

# Inserts with durability on (fsync, full_page_writes, synchronous_commit,
# checkpoints in every window, tables larger than shared_buffers): identity,
# both scopes, UUIDs and pgEdge snowflake from SNOWFLAKE_TARBALL if given
# (test/bench/README.md); ROUNDS=N sets the rounds.  Not part of test.
bench-durable:
	@PG_CONFIG='$(USER_PG_CONFIG)' test/bench/durable.sh

.PHONY: unit sql test test-long test-stress test-churn test-all nemesis nemesis-operations demo bench bench-scope bench-churn bench-registry bench-lives bench-durable cursor-bench

# ---- packaging (docs/install.md) ----------------------------------------

deb:
	@scripts/build-deb.sh

dist: check-meta
	@scripts/dist.sh

check-meta:
	@perl scripts/check-meta.pl META.json $(EXTENSION).control

test-packages:
	@scripts/test-packages.sh

model-check:
	@scripts/model-check.sh

.PHONY: deb dist check-meta test-packages model-check

# PGXS runs TAP tests from t/; ours are in test/t (PROVE_TESTS above).
prove_installcheck:
	$(prove_installcheck)

# One TAP file (PROVE_TESTS), for scripts/test.sh's parallel jobs:
# prove_installcheck without its "rm -rf tmp_check", which would pull the
# ground from under the files running beside it.  TESTLOGDIR and
# TESTDATADIR are where 17 and later put logs and data (15 derives them
# from TESTDIR); TAP_DIR, another directory for them, lets copies of one
# file run at once (make test REPEAT=N).
TAP_DIR ?= $(CURDIR)
prove-one:
	TESTDIR='$(TAP_DIR)' TESTLOGDIR='$(TAP_DIR)/tmp_check/log' TESTDATADIR='$(TAP_DIR)/tmp_check' \
	PATH="$(bindir):$(CURDIR):$$PATH" \
	PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
	$(PROVE) $(PG_PROVE_FLAGS) $(PROVE_FLAGS) $(PROVE_TESTS)

.PHONY: prove_installcheck prove-one
