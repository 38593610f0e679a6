# The worker table survives what sessions do to it (INV-8, INV-10; the hazards of src/worker_table/README.md):
# termination inside an open or failed transaction, a dropped database,
# and many backends registering at once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('hazards');

# Terminates the backend of a background session and waits for it to go.
sub terminate
{
	my ($session, $pid) = @_;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	$node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)")
	  or die "backend $pid did not exit";
	eval { $session->quit };
}

# A worker committed, then terminated: released with the last time unit it issued.
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my $worker = $s->query_safe('SELECT uid_next() IS NOT NULL; SELECT uid_current_worker()');
	$worker = (split /\n/, $worker)[-1];
	my $last = $s->query_safe('SELECT uid_timestamp(max(u)) FROM uid_next_batch(5000) u');
	my $last_delta = $s->query_safe(
		"SELECT (uid_lastval() >> (worker_bits + seq_bits)) FROM uid_layout()");
	terminate($s, $pid);
	my $row = $node->safe_psql('postgres',
		"SELECT status, last_time >= $last_delta, released_at IS NOT NULL FROM uidgen.worker_node WHERE id = $worker");
	is($row, 'released|t|t', 'terminated backend released its worker with its last time unit');
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_locks WHERE locktype IN ('object', 'advisory') AND objid = $worker AND classid = 'uidgen.worker_node'::regclass"),
		'0', 'and its session locks are gone');
}

# Terminated inside an open transaction that registered: nothing is left
# active, and the worker is not handed out before its last time.
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('BEGIN');
	$s->query_safe('SELECT count(*) FROM uid_next_batch(100)');
	my $worker = $s->query_safe('SELECT uid_current_worker()');
	my $last_delta = $s->query_safe(
		"SELECT (uid_lastval() >> (worker_bits + seq_bits)) FROM uid_layout()");
	terminate($s, $pid);
	# (Released, the worker may be claimed again at once by the database's
	# claim pool, above the same last_time.)
	my $row = $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(CASE WHEN application_name = 'uidgen claim pool' THEN 'pooled' ELSE status END "
		  . "|| ':' || (last_time >= $last_delta)::text, ','), 'none') FROM uidgen.worker_node WHERE id = $worker");
	ok($row eq 'none' || $row eq 'released:true' || $row eq 'pooled:true',
		"open transaction: worker $worker is absent (fresh id) or released after its last time ($row)");
}

# Terminated inside a failed transaction.
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('SELECT uid_next()');	# committed claim
	my $worker = $s->query_safe('SELECT uid_current_worker()');
	my $last_delta = $s->query_safe("SELECT (uid_lastval() >> (worker_bits + seq_bits)) FROM uid_layout()");
	$s->query('BEGIN; SELECT uid_next(); SELECT 1/0;');
	terminate($s, $pid);
	is($node->safe_psql('postgres', "SELECT CASE WHEN application_name = 'uidgen claim pool' THEN 'released' "
		  . "ELSE status END, last_time >= $last_delta FROM uidgen.worker_node WHERE id = $worker"),
		'released|t', 'failed transaction: worker released at exit above its IDs (or claimed again since by the claim pool)');
}

# No worker row is left active without a living holder.
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM uidgen.worker_node w
	 WHERE status = 'active' AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = w.pid)}),
	'0', 'no active worker without a living backend');

# A database dropped while one of its sessions holds a worker.
{
	$node->safe_psql('postgres', 'CREATE DATABASE doomed');
	$node->safe_psql('doomed', 'CREATE EXTENSION uidgen');
	my $s = $node->background_psql('doomed', on_error_stop => 0);
	$s->query_safe('SELECT uid_next()');
	$node->safe_psql('postgres', 'DROP DATABASE doomed WITH (FORCE)');
	eval { $s->quit };
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'doomed'"),
		'0', 'database with a registered session dropped');
	ok($node->safe_psql('postgres', 'SELECT uid_next() > 0') eq 't', 'server still generates');
}

# Many backends registering at once, each on a new connection, inserting
# through DEFAULT uid_next() into a primary key.
{
	$node->safe_psql('postgres',
		'CREATE TABLE burst (id bigint PRIMARY KEY DEFAULT uid_next(), client int)');
	$node->pgbench(
		'--no-vacuum --connect --client=16 --transactions=40',
		0, [qr{processed: 640/640}], [],
		'16 clients, a new backend per transaction',
		{ 'burst' => 'INSERT INTO burst (client) VALUES (:client_id);' });
	is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM burst'),
		'640|640', 'every row has its own ID');
	my $workers = $node->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node');
	cmp_ok($workers, '<=', 64, "640 connections reused workers: $workers rows");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM uidgen.worker_node WHERE status = 'active'
		AND pid NOT IN (SELECT pid FROM pg_stat_activity)}), '0', 'all released');
}


# A claim that never committed: the exit release still records the worker,
# so that its id is reused only after what it issued.
{
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('BEGIN');
	$s->query_safe('SELECT count(*) FROM uid_next_batch(1000)');
	my $worker = $s->query_safe('SELECT uid_current_worker()');
	my $last_delta = $s->query_safe("SELECT uid_lastval() >> (worker_bits + seq_bits) FROM uid_layout()");
	$s->query_safe('ROLLBACK');
	$s->quit;
	$node->poll_query_until('postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)");
	is($node->safe_psql('postgres', "SELECT status, last_time >= $last_delta FROM uidgen.worker_node WHERE id = $worker"),
		'released|t', 'a rolled-back claim is released at exit with its last time unit');
}

# A session whose transactions default to read-only still releases at exit.
{
	my $s = $node->background_psql('postgres');
	$s->query_safe('SELECT uid_next()');
	my $worker = $s->query_safe('SELECT uid_current_worker()');
	$s->query_safe('SET default_transaction_read_only = on');
	$s->quit;
	$node->poll_query_until('postgres', "SELECT status = 'released' FROM uidgen.worker_node WHERE id = $worker")
	  or diag('not released');
	is($node->safe_psql('postgres', "SELECT status FROM uidgen.worker_node WHERE id = $worker"), 'released',
		'released at exit despite default_transaction_read_only');
}

# An exiting backend never waits for a lock on the worker table: with it
# locked, it leaves its worker to be found leaked instead.
{
	my $locker = $node->background_psql('postgres');
	my $s = $node->background_psql('postgres');
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$s->query_safe('SELECT uid_next()');
	$locker->query_safe('BEGIN; LOCK TABLE uidgen.worker_node IN ACCESS EXCLUSIVE MODE');
	$s->quit;
	my $gone = $node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)");
	ok($gone, 'a backend exits at once while the worker table is locked');
	$locker->query_safe('COMMIT');
	$locker->quit;
}

# Registration in a REPEATABLE READ transaction whose snapshot predates
# other sessions' releases.
{
	my $rr = $node->background_psql('postgres', on_error_stop => 0);
	$rr->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
	$rr->query_safe('SELECT count(*) FROM uidgen.worker_node');
	$node->pgbench('--no-vacuum --connect --client=2 --transactions=5', 0, [qr{processed: 10/10}], [],
		'other sessions come and go', { 'churn' => 'SELECT uid_next();' });
	my ($out, $ret) = $rr->query('SELECT uid_next() > 0');
	is($out, 't', 'registration works in a REPEATABLE READ transaction');
	is($rr->{stderr}, '', 'without a serialization failure');
	$rr->query_safe('COMMIT');
	$rr->quit;
}

# DROP and CREATE EXTENSION under a live session: its worker belonged to the
# old worker table, so it registers again instead of sharing an id.
{
	$node->safe_psql('postgres', 'CREATE DATABASE recreated');
	$node->safe_psql('recreated', 'CREATE EXTENSION uidgen');
	my $old = $node->background_psql('recreated');
	$old->query_safe('SELECT uid_next()');
	$node->safe_psql('recreated', 'DROP EXTENSION uidgen; CREATE EXTENSION uidgen');
	my $new = $node->background_psql('recreated');
	$new->query_safe('SELECT uid_next()');
	my $new_worker = $new->query_safe('SELECT uid_current_worker()');
	$old->query_safe('SELECT uid_next()');
	my $old_worker = $old->query_safe('SELECT uid_current_worker()');
	isnt($old_worker, $new_worker, "after DROP/CREATE EXTENSION the old session took worker $old_worker, not $new_worker");
	is($node->safe_psql('recreated', q{SELECT count(*) FROM uidgen.worker_node WHERE status = 'active'}), '2',
		'both hold their own row in the new worker table');
	$old->quit;
	$new->quit;
}

$node->stop;
done_testing();
