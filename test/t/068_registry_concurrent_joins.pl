# Two sessions of one database take their first IDs under a registry at
# once, each in a transaction that also locks something the other will
# want (INV-19 of docs/design.md).  The first joins the registry; the
# second must not wait for the first's transaction: waiting closes a lock
# cycle, a deadlock (test 040 met one between two multi-node transactions
# of Citus).  A join is committed in a transaction of its own, by a
# background worker, before the session issues, so the second finds the
# database joined.  Before, the join's row was written in the joining
# session's transaction, and the second session waited for it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
my $m = new_member_node('m', $registry);
wait_for_registry($m);
$m->safe_psql('postgres', q{
	CREATE TABLE ta (id bigint DEFAULT uid_next());
	CREATE TABLE tb (id bigint DEFAULT uid_next())});
is($m->safe_psql('postgres', 'SELECT count(*) FROM uidgen.membership'), '0', 'the database has not joined yet');

# A joins, and keeps its transaction open with ta locked.
my $a = $m->background_psql('postgres');
$a->query_safe('BEGIN');
$a->query_safe('LOCK TABLE ta');
$a->query_safe('INSERT INTO ta DEFAULT VALUES');
is($m->safe_psql('postgres', 'SELECT count(*) FROM uidgen.membership'), '1',
	"A's join is committed while A's transaction is open");

# B locks tb, then takes its first ID: it must not wait for A (the
# statement timeout only bounds the failure on the code before).
my $b = $m->background_psql('postgres');
$b->query_safe("SET statement_timeout = '30s'");
$b->query_safe('BEGIN');
$b->query_safe('LOCK TABLE tb');
my ($out, $ret) = eval { $b->query('INSERT INTO tb DEFAULT VALUES') };
is($ret // "died: $@", 0, "B's first ID did not wait for A") or BAIL_OUT("B: $b->{stderr}");

# Each now wants the other's table: without a wait above, no cycle.
$b->query_safe('COMMIT');
$a->query_safe('INSERT INTO tb DEFAULT VALUES');
$a->query_safe('COMMIT');
$a->quit;
$b->quit;

my $ids = $m->safe_psql('postgres', 'SELECT id FROM ta UNION ALL SELECT id FROM tb');
is(scalar(split /\n/, $ids), 3, 'both transactions committed their IDs');
is(duplicate_ids($ids), 0, 'no ID twice');
my $floor = $m->safe_psql('postgres', 'SELECT join_floor FROM uidgen.membership');
is($m->safe_psql('postgres', qq{
	SELECT count(*) FROM (SELECT id FROM ta UNION ALL SELECT id FROM tb) s, uid_layout() l
	 WHERE (s.id >> (l.worker_bits + l.seq_bits)) <= $floor}), '0', "every ID is above the join floor $floor");
is($m->safe_psql('postgres', 'SELECT registry_id FROM uidgen.membership'),
	$registry->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity'),
	"the join recorded the registry's identity");

# A join survives the rollback of the transaction that asked for it: no
# membership row is ever missing under a committed ID of the registry.
$m->safe_psql('postgres', 'CREATE DATABASE second');
$m->safe_psql('second', 'CREATE EXTENSION uidgen');
$m->safe_psql('second', 'BEGIN; SELECT uid_next(); ROLLBACK;');
is($m->safe_psql('second', 'SELECT count(*) FROM uidgen.membership'), '1', 'a join asked for by a rolled back transaction stays');

# A transaction that locked the worker table joins in its own transaction,
# as its background worker would wait for it.
$m->safe_psql('postgres', 'CREATE DATABASE third');
$m->safe_psql('third', 'CREATE EXTENSION uidgen');
my $c = $m->background_psql('third');
$c->query_safe('BEGIN');
$c->query_safe('SELECT id FROM uidgen.worker_node FOR UPDATE');
$c->query_safe('SELECT uid_next()');
is($m->safe_psql('third', 'SELECT count(*) FROM uidgen.membership'), '0',
	"a transaction that locked the worker table joins in that transaction (not committed yet)");
$c->query_safe('COMMIT');
$c->quit;
is($m->safe_psql('third', 'SELECT count(*) FROM uidgen.membership'), '1', 'and its join commits with it');

# A transaction holding a lock that a background worker needs to start or
# to plan its statements (here pg_class's, which it reads as it connects):
# its committer gives up (its lock_timeout), and the session joins in its
# own transaction rather than wait for it without end.
$m->safe_psql('postgres', 'CREATE DATABASE fourth');
$m->safe_psql('fourth', 'CREATE EXTENSION uidgen');
my $t0 = time;
my ($ret4, $out4, $err4) = $m->psql('fourth', q{SET statement_timeout = '60s';
	BEGIN; LOCK TABLE pg_catalog.pg_class IN ACCESS EXCLUSIVE MODE; SELECT uid_next() > 0; COMMIT;});
is("$ret4 $out4", '0 t', "a transaction that locked pg_class takes its first ID, after @{[time - $t0]} s") or diag($err4);
is($m->safe_psql('fourth', 'SELECT count(*) FROM uidgen.membership'), '1', 'and its join committed with it');

done_testing();
