# The claim pool (issue 36, item 1): a background worker per database
# claims released workers and commits their claims ahead of demand, so that
# a session that reuses a worker starts no claim committer of its own.
#
# What must hold: a session takes a pooled worker only when the pool hands
# it over (its mark held until then); a session that issued under a pooled
# worker and died without releasing it leaves a leak, released above the
# time reservation, never the old floor; a terminated pool leaves its
# workers as leaks; the pool never holds its database open (DROP DATABASE
# without FORCE), and claim_pool_size = 0 sends it away with its workers
# given back as released.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $dir = PostgreSQL::Test::Utils::tempdir();

# IDs one session issues in one transaction, ahead of the clock (a layout
# of 2^6 IDs per millisecond a worker: 200,000 IDs borrow about 3 s).
my $count = 200000;

my $node = new_uidgen_node('pool',
	conf => ["uidgen.max_borrow = '60s'", 'restart_after_crash = on', 'max_worker_processes = 16']);

# A database with the pool's small layout and n released workers whose last
# units have passed.
sub new_database
{
	my ($db, $n) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION uidgen');
	$node->safe_psql($db, 'SELECT uid_configure(41, 16, 6)');
	my @s = map { $node->background_psql($db) } 1 .. $n;
	$_->query_safe('SELECT uid_next()') for @s;
	$_->quit for @s;
	$node->poll_query_until($db,
		"SELECT count(*) = $n FROM uidgen.worker_node WHERE status = 'released' AND released_at < now() - interval '20 ms'")
	  or die "the sessions of $db did not release their workers";
	wait_for_clock_past($node, $node->safe_psql($db, 'SELECT max(released_at) FROM uidgen.worker_node'), '50 ms');
}

sub pool_pid
{
	my ($db) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool' AND datname = '$db'");
}

sub pooled_rows
{
	my ($db) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'");
}

# ---- a session reuses a pooled worker ---------------------------------------

new_database('churn', 6);
# The first reuse needs a committer, and starts the pool.
is($node->safe_psql('churn', "SELECT uid_next() > 0;
	SELECT pid = pg_backend_pid() FROM uidgen.worker_node WHERE id = uid_current_worker()"), "t\nt",
	'the first session that reuses a worker had its claim committed for it, naming it');
ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool' "
	  . "AND datname = 'churn')"), 'that session started the database\'s claim pool');
ok($node->poll_query_until('churn',
		"SELECT count(*) >= 3 FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'"),
	'the pool claimed released workers ahead, committed in its name');
my $pool = pool_pid('churn');
my %pooled = map { $_ => 1 } split /\n/, $node->safe_psql('churn',
	"SELECT id FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'");

my $s = $node->background_psql('churn');
$s->query_safe('BEGIN');
my $worker = $s->query_safe('SELECT uid_current_worker() FROM (SELECT uid_next()) x');
ok($pooled{$worker}, "the next session took pooled worker $worker");
is($node->safe_psql('churn', "SELECT status, pid = $pool FROM uidgen.worker_node WHERE id = $worker"), 'active|t',
	'its row is the pool\'s committed claim while the session\'s transaction is open');
$s->query_safe('COMMIT');
is($node->safe_psql('churn', "SELECT status, pid = " . $s->query_safe('SELECT pg_backend_pid()')
	  . " FROM uidgen.worker_node WHERE id = $worker"), 'active|t',
	'once the session committed, the row names it');
is($node->safe_psql('churn', "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 6 "
	  . "AND objid = $worker AND granted"), 0, 'the pool let go of the worker\'s mark when it handed it over');
$s->quit;
$node->poll_query_until('churn', "SELECT status = 'released' FROM uidgen.worker_node WHERE id = $worker")
  or die "worker $worker was not released";
pass('the session released the pooled worker at its exit, like any other');

# Many short sessions: every one gets an ID, none twice (database postgres,
# where pgbench runs; its first reuse starts its pool).
$node->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
my $job = start_pgbench($node, 'INSERT INTO ids SELECT uid_next()', '-C', '-c', '4', '-t', '100');
finish_pgbench($job);
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM ids'), '400|400',
	'400 short sessions each issued an ID, none twice');
ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool' "
	  . "AND datname = 'postgres')"), 'the churn started the claim pool of database postgres');

# ---- a session that dies under a pooled worker without releasing ----------

new_database('leak', 4);
$node->safe_psql('leak', 'SELECT uid_next()');    # starts the pool
$node->poll_query_until('leak',
	"SELECT count(*) >= 2 FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'")
  or die 'no pool in database leak';

# Session A takes a pooled worker and issues ahead of the clock in a
# transaction it never commits.
my $a_file = "$dir/leak-a.txt";
my $a = $node->background_psql('leak');
$a->query_safe('BEGIN');
$a->query_safe("COPY (SELECT uid_next() FROM generate_series(1, $count)) TO '$a_file'");
my $a_worker = $a->query_safe('SELECT uid_current_worker()');
my $a_pid = $a->query_safe('SELECT pg_backend_pid()');
is($node->safe_psql('leak', "SELECT application_name FROM uidgen.worker_node WHERE id = $a_worker"),
	'uidgen claim pool', "session A issues under pooled worker $a_worker");

# A dies without its exit release: a session waits to lock the worker table
# (SHARE, which the release's RowExclusiveLock conflicts with) behind A's
# transaction, and gets it as A's exit aborts that transaction, before the
# release tries, without waiting, to lock the table.
my ($lock_out, $lock_err) = ('', '');
open my $lock_sql, '>', "$dir/locker.sql" or die "cannot write $dir/locker.sql: $!";
print $lock_sql "BEGIN;\nLOCK TABLE uidgen.worker_node IN SHARE MODE;\nSELECT pg_sleep(600);\n";
close $lock_sql;
my $locker = IPC::Run::start(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('leak'), '-f', "$dir/locker.sql" ],
	'>', \$lock_out, '2>', \$lock_err);
$node->poll_query_until('leak', "SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'uidgen.worker_node'::regclass "
	  . "AND mode = 'ShareLock' AND NOT granted)")
  or die "the locker did not queue: $lock_err";
$node->safe_psql('postgres', "SELECT pg_terminate_backend($a_pid)");
$node->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $a_pid)")
  or die 'session A did not end';
$node->safe_psql('postgres', "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600);'");
$locker->finish;
eval { $a->quit };
# A's exit wrote nothing: the row is the pool's claim, active, or already
# released as a leak (the pool's refill releases leaks when it finds no
# released worker), never released by A at a unit of its own.
like($node->safe_psql('leak', "SELECT status, application_name FROM uidgen.worker_node WHERE id = $a_worker"),
	qr/^(active|released)\|uidgen claim pool$/, 'A left its worker as the pool claimed it: a leak');

# Every worker is reclaimed now: A's above everything A issued.  Once the
# clock has passed its floor, sessions reuse it; none issues A's IDs again.
$node->safe_psql('leak', "SELECT uid_reclaim_workers('0')");
$node->safe_psql('leak', 'CREATE TABLE a (id bigint); CREATE TABLE b (id bigint)');
$node->safe_psql('leak', "COPY a FROM '$a_file'");
is($node->safe_psql('leak', "SELECT status, last_time >= (SELECT max(id) >> 22 FROM a) "
	  . "FROM uidgen.worker_node WHERE id = $a_worker"), 'released|t',
	"worker $a_worker is released no lower than the last unit A issued");
$node->poll_query_until('leak', "SELECT uid_timestamp((SELECT last_time FROM uidgen.worker_node "
	  . "WHERE id = $a_worker) << 22) < clock_timestamp() - interval '50 ms'")
  or die "the clock did not pass the floor of worker $a_worker";
my $reused = 0;
for my $i (1 .. 40)
{
	my $b = $node->background_psql('leak');
	$b->query_safe("INSERT INTO b SELECT uid_next() FROM generate_series(1, 5000)");
	$reused = 1 if $b->query_safe('SELECT uid_current_worker()') == $a_worker;
	$b->quit;
	last if $reused;
}
ok($reused, "a later session reused worker $a_worker");
is($node->safe_psql('leak', 'SELECT count(*) FROM a JOIN b USING (id)'), 0,
	'no later session issued an ID that A issued under the pooled worker');

# ---- the pool terminated, then a crash ---------------------------------------

my $leak_pool = pool_pid('leak');
$node->poll_query_until('leak',
	"SELECT count(*) >= 1 FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'")
  or die 'the pool of database leak has no worker';
$node->safe_psql('postgres', "SELECT pg_terminate_backend($leak_pool)");
$node->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $leak_pool)")
  or die 'the pool did not end';
is($node->safe_psql('leak', "SELECT count(*) FROM pg_locks WHERE pid = $leak_pool"), 0,
	'a terminated pool holds no lock: its workers are leaks');
my $b = $node->background_psql('leak');
$b->query_safe("INSERT INTO b SELECT uid_next() FROM generate_series(1, 20000)");
$b->quit;
is($node->safe_psql('leak', 'SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM a UNION ALL SELECT id FROM b) u'),
	0, 'after the pool was terminated, sessions issue no ID twice');

# ---- the pool never holds its database open ---------------------------------

new_database('doomed', 3);
$node->safe_psql('doomed', 'SELECT uid_next()');
ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool' "
	  . "AND datname = 'doomed')"), 'database doomed has a claim pool');
my ($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE copy_of_doomed TEMPLATE doomed');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of a database with a claim pool succeeds') or diag($err);
$node->safe_psql('doomed', 'SELECT uid_next()');
ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool' "
	  . "AND datname = 'doomed')"), 'database doomed has a claim pool again');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE doomed');
is($ret, 0, 'DROP DATABASE (without FORCE) of a database with a claim pool succeeds') or diag($err);

# ---- claim_pool_size = 0 -------------------------------------------------------

$node->safe_psql('churn', 'SELECT uid_next()');
$node->poll_query_until('churn',
	"SELECT count(*) >= 1 FROM uidgen.worker_node WHERE status = 'active' AND application_name = 'uidgen claim pool'")
  or die 'the pool of database churn has no worker';
$node->append_conf('postgresql.conf', "uidgen.claim_pool_size = 0\n");
$node->reload;
ok(poll_for($node, 60, "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen claim pool')"),
	'with claim_pool_size = 0 the pools leave');
is(pooled_rows('churn'), 0, 'the pool of churn gave its workers back as released');
is($node->safe_psql('churn', 'SELECT uid_next() > 0'), 't', 'sessions register without a pool');

# Session locks of the default lock method outlive their process unless it
# releases them at exit: a pool that kept its database lock or a worker's
# object lock would fail the next process on its PGPROC.
ok(!$node->log_contains(qr/is already held/), 'no process inherited a lock from a pool that exited');

done_testing();
