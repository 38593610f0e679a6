# uidgen.scope = 'server': one generator per database in shared memory, its
# worker claimed by the database's keeper (a background worker started by
# the first uid_next()), IDs taken by backends in chunks from a shared
# cursor.  The view, the keeper, uid_current_worker(), read-only
# transactions, DISCARD ALL, chunks that grow with a backend's rate, IDs of
# sessions taking turns in one global order, borrowing bounded by
# uidgen.max_borrow, one generator per database, and PostgreSQL 15 without
# shared_preload_libraries.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('server_scope', scope => 'server', conf => ["uidgen.max_borrow = '2s'"]);
is($node->safe_psql('postgres', 'SHOW uidgen.scope'), 'server', 'uidgen.scope is server');

# ---- the view and the keeper ----------------------------------------------

is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '0',
	'no generator row before the first uid_next()');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'uidgen keeper%'}),
	'0', 'no keeper before the first uid_next()');

# The very first ID of the database, in a read-only transaction: the worker
# is claimed by the keeper in a transaction of its own.
my $s = $node->background_psql('postgres');
is($s->query_safe('SELECT uid_current_worker() IS NULL'), 't', 'uid_current_worker() is NULL before the first ID');
my $first = $s->query_safe('BEGIN READ ONLY; SELECT uid_next(); COMMIT;');
like($first, qr/^\d+$/, "the first ID ($first) in a read-only transaction");
cmp_ok($first, '>', 0, 'and it is positive');

my $g = server_generator($node);
ok(defined $g, 'one generator row after the first uid_next()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '1', 'exactly one');
is($s->query_safe('SELECT uid_current_worker()'), $g->{worker}, "uid_current_worker() is the server's worker $g->{worker}");
is($s->query_safe("SELECT uid_worker_id($first)"), $g->{worker}, 'and the first ID carries it');
is($node->safe_psql('postgres', "SELECT status FROM uidgen.worker_node WHERE id = $g->{worker}"), 'active',
	'the server\'s worker is an active row of uidgen.worker_node');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM pg_stat_activity WHERE pid = $g->{keeper_pid} AND backend_type LIKE 'uidgen keeper%'}),
	'1', "the keeper (pid $g->{keeper_pid}) is a running background worker");
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'uidgen keeper%'}), '1',
	'one keeper for the database');
is($node->safe_psql('postgres', "SELECT '$g->{started_at}'::timestamptz <= now()"), 't', 'started_at is in the past');
cmp_ok($g->{ids_issued}, '>=', 1, "ids_issued counts the first ID ($g->{ids_issued})");
cmp_ok($g->{chunks}, '>=', 1, "chunks counts its chunk ($g->{chunks})");

# A read-only session, and a repeatable-read one, generate too.
is($s->query_safe(qq{
	SET default_transaction_read_only = on;
	SELECT uid_next() > $first;
	RESET default_transaction_read_only;}), 't', 'uid_next() in a read-only session, above the first ID');
is($s->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT uid_next() > 0; COMMIT;'),
	't', 'and in a read-only repeatable-read transaction');

# One session: strictly increasing, through DISCARD ALL (what a pooler sends).
my $increasing = q{
	SELECT bool_and(id > prev) FROM (
		SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM (SELECT n, uid_next() AS id FROM generate_series(1, 1000) n) a) b
	 WHERE prev IS NOT NULL};
is($s->query_safe($increasing), 't', '1,000 IDs of one statement increase');
my $last = $s->query_safe('SELECT uid_lastval()');
$s->query_safe('DISCARD ALL');
is($s->query_safe("SELECT uid_next() > $last"), 't', 'the first ID after DISCARD ALL is above the last one before');
is($s->query_safe('SELECT uid_current_worker()'), $g->{worker}, 'after DISCARD ALL the session still uses the server\'s worker');
is($s->query_safe($increasing), 't', 'and IDs go on increasing');
is($s->query_safe('SELECT uid_worker_id(uid_lastval()) = uid_current_worker()'), 't',
	'uid_current_worker() is the worker of the last ID');
$s->quit;

# ---- sessions do not register, chunks grow -------------------------------

my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node');
$node->pgbench('--no-vacuum --connect --client=4 --transactions=50', 0, [qr{processed: 200/200}], [],
	'200 new sessions take IDs', { 'c' => 'SELECT uid_next() FROM generate_series(1, 5);' });
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), $rows,
	'200 sessions registered no worker of their own');

my $before = server_generator($node);
$node->safe_psql('postgres', 'CREATE TABLE bulk AS SELECT uid_next() AS id FROM generate_series(1, 100000)');
my $after = server_generator($node);
my $shared = $node->safe_psql('postgres', "SELECT count(*) FROM bulk WHERE uid_worker_id(id) = $g->{worker}");
my $chunks = $after->{chunks} - $before->{chunks};
cmp_ok($after->{ids_issued} - $before->{ids_issued}, '>=', $shared,
	"ids_issued grew by at least the $shared IDs of the server's worker in one bulk statement");
# Chunks start at one ID and grow to uidgen.max_chunk (8): a mean of at least 4.
# (The cursor runs less than a second ahead here, so it lends no private worker.)
cmp_ok($chunks, '<=', $shared / 4,
	"one session taking 100,000 IDs at once took the cursor's $shared in $chunks chunks: chunks grow");
is($node->safe_psql('postgres', q{
	SELECT count(*) = count(DISTINCT id) AND bool_and(id > 0) FROM bulk}), 't', 'the bulk IDs are unique');

# ---- one global order ------------------------------------------------------

# Four sessions take one ID each in turn, newest registered first, a round
# every 3 ms: each session asks less than once a unit, so it takes one ID
# at a time and the IDs come out in the order they were asked for.  With
# per-backend workers, IDs of one millisecond sort by worker instead.
$node->safe_psql('postgres', 'CREATE EXTENSION dblink');
sub take_turns
{
	my ($table, $db) = @_;
	$db //= 'postgres';
	my $connstr = $node->connstr($db) =~ s/'/''/gr;
	$node->safe_psql($db, qq{
		CREATE TABLE $table (n int PRIMARY KEY, session int, id bigint UNIQUE);
		DO \$\$
		DECLARE
			n int := 0;
		BEGIN
			FOR s IN 1..4 LOOP
				PERFORM dblink_connect('turn' || s, '$connstr');
				PERFORM * FROM dblink('turn' || s, 'SELECT uid_next()') AS t(id bigint);
			END LOOP;
			FOR r IN 1..200 LOOP
				FOR s IN REVERSE 4..1 LOOP
					n := n + 1;
					INSERT INTO $table SELECT n, s, id FROM dblink('turn' || s, 'SELECT uid_next()') AS t(id bigint);
				END LOOP;
				PERFORM pg_sleep(0.003);
			END LOOP;
			FOR s IN 1..4 LOOP
				PERFORM dblink_disconnect('turn' || s);
			END LOOP;
		END
		\$\$});
	return $node->safe_psql($db, qq{
		SELECT count(*) FILTER (WHERE id < prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM $table) x
		 WHERE prev IS NOT NULL});
}
my $inversions = take_turns('turns_server');
cmp_ok($inversions, '<=', 8, "sessions taking turns: $inversions of 799 neighbours out of order (at most 1 %)");

# ---- many sessions at once ---------------------------------------------------

$node->safe_psql('postgres', 'CREATE TABLE load_t (id bigint PRIMARY KEY DEFAULT uid_next())');
# One ID a round trip keeps the rate moderate on any machine: eight sessions of
# two cores make far fewer round trips a millisecond than the worker's 512 IDs.
# (Ten a round trip outran the cursor on a fast idle machine, which lends
# private workers by design.)
my ($code, $f) = run_load($node, '--mode', 'steady', '--method', 'mixed', '--connections', '8', '--ids', '20000',
	'--fetch', '1', '--table', 'load_t');
is($code, 0, 'mixed methods: the client found nothing wrong');
is($f->{duplicates}, '0', "mixed methods: no duplicate among $f->{ids} IDs");
is($f->{non_increasing}, '0', 'mixed methods: strictly increasing in each session');
is($f->{distinct_workers}, '1', '8 sessions at a moderate rate all issued under the server\'s one worker');

# ---- borrowing bounded by uidgen.max_borrow ----------------------------------

# Bulk load from 4 sessions while a fifth samples the view every 5 ms.
$node->safe_psql('postgres', 'CREATE TABLE samples (ahead_ms bigint, reserved_ahead_ms bigint)');
my $sampler = start_sql_loop($node, q{
	DO $$ BEGIN FOR i IN 1..4000 LOOP
		INSERT INTO samples SELECT ahead_ms, reserved_ahead_ms FROM uidgen.server_generator;
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP; END $$}, until => 'SELECT count(*) > 10 FROM samples');
($code, $f) = run_load($node, '--mode', 'steady', '--method', 'batch', '--connections', '4', '--ids', '500000',
	'--fetch', '100000');
is($code, 0, 'bulk: the client found nothing wrong');
is($f->{duplicates}, '0', "bulk: no duplicate among $f->{ids} IDs");
$node->safe_psql('postgres', q{
	SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%INSERT INTO samples%' AND pid <> pg_backend_pid()});
finish_sql_loops($sampler);
my ($max_ahead, $n_samples, $unreserved) = split /\|/, $node->safe_psql('postgres', q{
	SELECT max(ahead_ms), count(*), count(*) FILTER (WHERE reserved_ahead_ms < ahead_ms) FROM samples});
cmp_ok($max_ahead, '<=', 2000, "the cursor ran at most $max_ahead ms ahead of the clock (max_borrow 2 s; $n_samples samples)");
is($unreserved, '0', 'the time reservation was ahead of the cursor in every sample');
is($node->safe_psql('postgres', q{
	SELECT bool_and(uid_timestamp(u) <= clock_timestamp() + interval '2001 ms') FROM uid_next_batch(300000) u}),
	't', 'each ID of a burst within max_borrow of the clock when issued');
my $g_end = server_generator($node);
is($g_end->{worker}, $g->{worker}, 'the server kept its one worker');
is($g_end->{keeper_pid}, $g->{keeper_pid}, 'and its keeper');
note('generator: ' . join(', ', map { "$_ = $g_end->{$_}" } sort keys %$g_end));

# ---- one generator per database ------------------------------------------

$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION uidgen');
is($node->safe_psql('other', 'SELECT count(*) FROM uidgen.server_generator'), '0',
	'another database has no generator before its first uid_next()');
$node->safe_psql('other', 'SELECT uid_next()');
my $o = server_generator($node, 'other');
ok(defined $o, 'and one after it');
isnt($o->{keeper_pid}, $g->{keeper_pid}, "with a keeper of its own (pid $o->{keeper_pid})");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'uidgen keeper%'}),
	'2', 'two databases, two keepers');
is($node->safe_psql('other', "SELECT uid_worker_id(uid_next()) = $o->{worker}"), 't',
	'its IDs carry its own worker');

# ---- the same turns with per-backend workers -------------------------------

# Shows that take_turns can tell: per-backend workers sort IDs of one
# time unit by worker, against the order they were asked for.  In a
# database whose unit is a second, so that the turns of a round share a
# unit however slowly a busy machine runs them (with milliseconds, how many
# do depends on the machine's speed).
set_scope($node, 'backend');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '0',
	'scope backend: the view has no row');
$node->safe_psql('postgres', 'CREATE DATABASE turns');
$node->safe_psql('turns', q{CREATE EXTENSION uidgen; CREATE EXTENSION dblink;
	SELECT uid_configure(31, 20, 12, '2020-01-01+00', 'second')});
my $backend_inversions = take_turns('turns_backend', 'turns');
cmp_ok($backend_inversions, '>', 4 * $inversions + 20,
	"scope backend: the same turns give $backend_inversions neighbours out of order, against $inversions");
$node->stop;

# ---- without shared_preload_libraries ----------------------------------------

my $bare = new_uidgen_node('server_scope_bare', scope => 'server', preload => 0);
if ($bare->safe_psql('postgres', 'SHOW server_version_num') < 170000)
{
	my $err = psql_error($bare, 'postgres', 'SELECT uid_next()');
	like($err, qr/ERROR:\s+\w{5}:/, 'PostgreSQL 15 without preload: uid_next() fails');
	like($err, qr/^HINT:.*shared_preload_libraries/m, 'with a hint naming shared_preload_libraries');
	is($bare->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), '0', 'and registers nothing');
}
else
{
	like($bare->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'PostgreSQL 17+ without preload: uid_next() works');
	is($bare->safe_psql('postgres', 'SELECT count(*) FROM uidgen.server_generator'), '1',
		'through a generator in a named DSM segment');
}
$bare->stop;

done_testing();
