# Two sessions of one database take their first IDs under a registry at
# once, each in a transaction that also locks something the other will
# want.  The first joins the registry (it writes the database's membership
# row, not committed yet); the second must not wait for that row: waiting
# closes a lock cycle (a deadlock; test 040 met one between two multi-node
# transactions of Citus).  It joins on a floor of its own instead, and both
# commit.
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

# B locks tb, then takes its first ID: it must not wait for A's join (the
# statement timeout only bounds the failure on the code before).
my $b = $m->background_psql('postgres');
$b->query_safe("SET statement_timeout = '30s'");
$b->query_safe('BEGIN');
$b->query_safe('LOCK TABLE tb');
my ($out, $ret) = eval { $b->query('INSERT INTO tb DEFAULT VALUES') };
is($ret // "died: $@", 0, "B's first ID did not wait for A's join") or BAIL_OUT("B: $b->{stderr}");
is($m->safe_psql('postgres', q{SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	WHERE c.relname = 'membership' AND NOT l.granted}), '0', 'nobody waits on uidgen.membership');

# Each now wants the other's table: without the wait above, no cycle.
$b->query_safe('COMMIT');
$a->query_safe('INSERT INTO tb DEFAULT VALUES');
$a->query_safe('COMMIT');
$a->quit;
$b->quit;

is($m->safe_psql('postgres', 'SELECT count(*) FROM uidgen.membership'), '1', 'A recorded the database\'s join');
my $ids = $m->safe_psql('postgres', 'SELECT id FROM ta UNION ALL SELECT id FROM tb');
is(scalar(split /\n/, $ids), 3, 'both transactions committed their IDs');
is(duplicate_ids($ids), 0, 'no ID twice');
my $floor = $m->safe_psql('postgres', 'SELECT join_floor FROM uidgen.membership');
is($m->safe_psql('postgres', qq{
	SELECT count(*) FROM (SELECT id FROM ta UNION ALL SELECT id FROM tb) s, uid_layout() l
	 WHERE (s.id >> (l.worker_bits + l.seq_bits)) <= $floor}), '0', "every ID is above the join floor $floor");

done_testing();
