# Review of issue 34's dropped-database marking (8b866a2, and the catalog
# look-up it keeps): take_granted_worker() first marks the grants of every
# database that pg_database "no longer has", by a syscache look-up in the
# backend that takes a worker.  In a REPEATABLE READ transaction the
# catalog snapshot (and a negative syscache entry) can be older than a
# database's creation: here X's own look-up of database e, made the same way,
# misses e while e issues.  Were mark_dropped_databases() to make that
# look-up before X accepts invalidations, e's grant would be marked dropped
# and its worker would go to X above the lease's floor only (e's holder,
# alive, noted nothing), while e still issues under it: duplicates.
#
# A registry that lets a system hold 1 block of 3 workers.  H in database a
# holds worker 1 (a has joined); X in a opens a REPEATABLE READ transaction
# and locks every relation a claim locks (so that nothing it does later
# accepts invalidations), then database e is created and a loop there issues
# under worker 2, database f takes worker 3 (the block is full), and X's
# first uid_next() needs a worker.  Expected: X fails (no worker left) or
# takes a worker e does not use; never e's worker, never a duplicate.  On
# 8b866a2 it holds (X fails, 08/54000): the claim accepts invalidations
# somewhere before the look-up; the test guards that it stays so.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0, lease_ttl => '20s');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(max_system_blocks => 1, block_size => 3)');
$registry->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$registry->reload;
wait_for_registry($registry);

$registry->safe_psql('postgres', 'CREATE DATABASE tenant_template');
$registry->safe_psql('tenant_template', 'CREATE EXTENSION uidgen; CREATE TABLE ids (id bigint); CREATE TABLE stop ()');
$registry->safe_psql('postgres', 'CREATE DATABASE a TEMPLATE tenant_template');

my $prelock = q{
DO $$
DECLARE r record; col name;
BEGIN
	FOR r IN SELECT c.oid::regclass AS rel, c.relkind, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	          WHERE n.nspname IN ('pg_catalog', 'uidgen', 'public') AND c.relkind IN ('r', 'S') LOOP
		IF r.relkind = 'S' THEN
			-- A sequence: read (AccessShareLock), and set to what it is (RowExclusiveLock).
			EXECUTE format('SELECT setval(%L::regclass, last_value, is_called) FROM %s', r.rel, r.rel);
			CONTINUE;
		END IF;
		BEGIN
			EXECUTE format('LOCK TABLE %s IN ACCESS SHARE MODE', r.rel);
			EXECUTE format('SELECT 1 FROM %s WHERE false', r.rel);
			IF r.nspname <> 'pg_catalog' THEN
				EXECUTE format('LOCK TABLE %s IN ROW SHARE MODE', r.rel);
				EXECUTE format('LOCK TABLE %s IN ROW EXCLUSIVE MODE', r.rel);
				IF r.relkind = 'r' THEN
					SELECT attname INTO col FROM pg_attribute WHERE attrelid = r.rel AND attnum > 0 AND NOT attisdropped LIMIT 1;
					IF col IS NOT NULL THEN
						EXECUTE format('UPDATE %s SET %I = %I WHERE false', r.rel, col, col);
					END IF;
					EXECUTE format('SELECT 1 FROM %s WHERE false FOR UPDATE', r.rel);
				END IF;
			END IF;
		EXCEPTION WHEN others THEN
			NULL;
		END;
	END LOOP;
END
$$};

# H, in database a, joins the registry and holds worker 1 while X runs:
# X's claim then neither joins nor reuses, but takes a worker of the blocks.
my $h = $registry->background_psql('a', on_error_stop => 0);
my $h_worker = $h->query_safe('SELECT uid_worker_id(uid_next())');

# X: the transaction's snapshot and catalog snapshot are taken now, and every
# relation a claim locks is locked already (so nothing accepts invalidations).
my $x = $registry->background_psql('a', on_error_stop => 0);
$x->query_safe('SET client_min_messages = warning');
$x->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$x->query_safe($prelock);
$x->query_safe('SELECT 99999999::oid::regtype');
my $locks_before = $x->query_safe(q{SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'});

# e is created after X's snapshots, and issues without a pause under worker 1.
$registry->safe_psql('postgres', 'CREATE DATABASE e TEMPLATE tenant_template');
my $loop = start_sql_loop($registry, q{
DO $$
BEGIN
	WHILE NOT EXISTS (SELECT FROM stop) LOOP
		INSERT INTO ids SELECT uid_next() FROM generate_series(1, 1000);
		COMMIT;
	END LOOP;
END
$$}, db => 'e', until => 'SELECT count(*) > 0 FROM ids');
my $e_worker = $registry->safe_psql('e', 'SELECT DISTINCT uid_worker_id(id) FROM ids');
$registry->safe_psql('postgres', 'CREATE DATABASE f TEMPLATE tenant_template');
my $f_worker = $registry->safe_psql('f', 'SELECT uid_worker_id(uid_next())');
diag("e issues under worker $e_worker, f took worker $f_worker: the only block is full");

# What X's syscache says of e, by the look-up mark_dropped_databases() makes.
my $e_oid = $registry->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'e'});
my $missed = $x->query_safe("SELECT has_database_privilege($e_oid, 'CONNECT') IS NULL");
diag("X's syscache look-up of database e (OID $e_oid) misses it: $missed");

# X's first uid_next(), in its old transaction: the IDs come back to the client.
my ($x_out, $x_failed) = $x->query('SELECT uid_next() FROM generate_series(1, 50000)');
my $x_err = $x->{stderr};
my $x_worker = '';
my @x_ids;
if (!$x_failed)
{
	@x_ids = split /\n/, $x_out;
	$x_worker = $x->query_safe('SELECT uid_current_worker()');
	diag("X took worker $x_worker and issued " . scalar(@x_ids) . ' IDs');
	$x->query_safe('COMMIT');
}
else
{
	diag("X's uid_next() failed: $x_err");
	$x->query('ROLLBACK');
}
diag("X held $locks_before relation locks before its first uid_next()");

isnt($x_worker, $e_worker, "X never takes worker $e_worker, which database e (alive) issues under");

$registry->safe_psql('e', 'INSERT INTO stop DEFAULT VALUES');
finish_sql_loops($loop);
my @e_ids = split /\n/, $registry->safe_psql('e', 'SELECT id FROM ids');
$x->quit;
$h->quit;
is(duplicate_ids(\@e_ids, \@x_ids), 0, 'no ID issued twice among ' . (@e_ids + @x_ids) . " of e and X");

$registry->stop;
done_testing();
