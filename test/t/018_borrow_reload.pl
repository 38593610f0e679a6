# uidgen.max_borrow lowered by a reload while a backend has borrowed far
# ahead, then that backend crashes: its worker must still be reused only
# above what it issued.  The floor of a leaked worker comes from the time
# reservation, so the margin the setting gives no longer decides it.  And
# the reservation is on disk before an ID under it leaves the server, even
# when nothing else would flush the WAL.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# The WAL writer flushes only every 10 s, so that in a transaction that does
# not flush at commit only the reservation itself can have flushed.
my $node = new_uidgen_node('borrow_reload', conf => ["uidgen.max_borrow = '1h'", 'restart_after_crash = on',
	"wal_writer_delay = '10s'"]);


# Two IDs a millisecond: 600,000 IDs borrow about 300 s ahead of the clock.
$node->safe_psql('postgres', "SELECT uid_configure(41, 13, 1, '2026-01-01+00', 'millisecond')");
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY)');

# A raise (the mark set back first, so that the first ID must raise it) is flushed before uid_next() returns.
$node->safe_psql('postgres', "SELECT setval('uidgen.reserved_until', -1)");
is($node->safe_psql('postgres', q{
	BEGIN;
	SET LOCAL synchronous_commit = off;
	SELECT uid_next() > 0;
	SELECT pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn() AS flushed;
	COMMIT}), "t\nt", 'the raised reservation is on disk before the ID is returned');

my $s = $node->background_psql('postgres');
$s->query_safe('INSERT INTO t SELECT uid_next() FROM generate_series(1, 600000)');
my $worker = $s->query_safe('SELECT uid_current_worker()');
my $pid = $s->query_safe('SELECT pg_backend_pid()');
my $ahead = $node->safe_psql('postgres',
	'SELECT extract(epoch FROM max(uid_timestamp(id)) - clock_timestamp())::int FROM t');
cmp_ok($ahead, '>', 200, "worker $worker borrowed $ahead s ahead of the clock");

$node->safe_psql('postgres', "ALTER SYSTEM SET uidgen.max_borrow = '0'; SELECT pg_reload_conf()");
$node->poll_query_until('postgres', "SELECT current_setting('uidgen.max_borrow') = '0'")
  or die 'the reload did not take';
kill_and_wait_for_restart($node, $pid);
eval { $s->quit };

my $max_delta = $node->safe_psql('postgres', 'SELECT max(id) >> 14 FROM t');
$node->safe_psql('postgres', "SELECT uid_reclaim_workers('0')");
my $last_time = $node->safe_psql('postgres', "SELECT last_time FROM uidgen.worker_node WHERE id = $worker");
cmp_ok($last_time, '>=', $max_delta,
	"worker $worker is released at $last_time, not below the $max_delta it issued up to, with max_borrow now 0");

# New sessions take other workers, and every ID stays unique.
my $after = $node->safe_psql('postgres',
	'INSERT INTO t SELECT uid_next() FROM generate_series(1, 1000); SELECT uid_current_worker()');
isnt($after, $worker, 'a new session does not reuse the worker that borrowed ahead');
is($node->safe_psql('postgres', 'SELECT count(*) = 601000 FROM t'), 't', 'every ID stored once');

$node->stop;
done_testing();
