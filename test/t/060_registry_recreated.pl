# A registry that is created again while members hold leases: its
# extension dropped and created again (case 1), then its database dropped
# and created again under the same name (case 2).  Members go on writing
# throughout; after each re-creation a new member server and a new database
# of a member join and write.  Every ID of every database is collected and
# counted: none may occur twice.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $table = 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), src text NOT NULL)';

# A writer that survives refusals: 100 rows a transaction, a failed one
# (a member that can issue nothing) retried after a pause, until its
# backend is terminated.  Throttled, so that the test issues tens of
# thousands of IDs rather than millions.
sub start_writer
{
	my ($node, $db, $label) = @_;
	return start_sql_loop($node, "DO \$\$ BEGIN LOOP BEGIN INSERT INTO t (src) SELECT '$label' FROM generate_series(1, 100); "
		. "EXCEPTION WHEN OTHERS THEN PERFORM pg_sleep(0.2); END; COMMIT; PERFORM pg_sleep(0.05); END LOOP; END \$\$",
		db => $db);
}

sub stop_all_writers
{
	my ($nodes, $writers) = @_;
	for my $node (@$nodes)
	{
		$node->safe_psql('postgres', q{
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOOP BEGIN INSERT INTO t%'});
	}
	finish_sql_loops(@$writers);
}

my $registry = new_registry_node('registry', member => 0);
my $m1 = new_member_node('m1', $registry);
my $m2 = new_member_node('m2', $registry, scope => 'server');
my @writers;
for my $m ($m1, $m2)
{
	wait_for_registry($m);
	$m->safe_psql('postgres', $table);
	push @writers, start_writer($m, 'postgres', 'old');
}
for my $m ($m1, $m2)
{
	$m->poll_query_until('postgres', q{SELECT count(*) >= 2000 FROM t WHERE src = 'old'})
	  or die $m->name . ' issues nothing';
}

# Every ID of every database of where ([node, db], ...), and how many occur twice.
sub count_duplicates
{
	my ($what, @where) = @_;
	my @lists;
	my $total = 0;
	for my $w (@where)
	{
		my ($node, $db) = @$w;
		my $list = $node->safe_psql($db, 'SELECT id FROM t');
		my $n = () = $list =~ /^\d/mg;
		note("$what: " . $node->name . "/$db: $n IDs");
		$total += $n;
		push @lists, $list;
	}
	my $duplicates = duplicate_ids(@lists);
	is($duplicates, 0, "$what: no duplicate over every database ($total IDs)");
	return $duplicates;
}

my @nodes = ($m1, $m2);

# ---- 1. the registry's extension dropped and created again ----------------

$registry->safe_psql('registry', "DROP EXTENSION uidgen CASCADE; CREATE EXTENSION uidgen; "
	. "SELECT uid_registry_configure(lease_ttl => '10s')");
my $m3 = new_member_node('m3', $registry);
$m3->safe_psql('postgres', $table);
push @writers, start_writer($m3, 'postgres', 'new1');
$m1->safe_psql('postgres', 'CREATE DATABASE new1');
$m1->safe_psql('new1', "CREATE EXTENSION uidgen; $table");
push @writers, start_writer($m1, 'new1', 'new1');
push @nodes, $m3;
poll_for($m3, 90, q{SELECT count(*) >= 2000 FROM t WHERE src = 'new1'});
$m1->poll_query_until('new1', q{SELECT count(*) >= 2000 FROM t WHERE src = 'new1'});
count_duplicates('case 1 (extension created again)', [ $m1, 'postgres' ], [ $m1, 'new1' ], [ $m2, 'postgres' ],
	[ $m3, 'postgres' ]);

# ---- 2. the registry's database dropped and created again -------------------

$registry->safe_psql('postgres', 'DROP DATABASE registry WITH (FORCE)');
$registry->safe_psql('postgres', 'CREATE DATABASE registry');
$registry->safe_psql('registry', "CREATE EXTENSION uidgen; SELECT uid_registry_configure(lease_ttl => '10s')");
my $m4 = new_member_node('m4', $registry);
$m4->safe_psql('postgres', $table);
push @writers, start_writer($m4, 'postgres', 'new2');
$m2->safe_psql('postgres', 'CREATE DATABASE new2');
$m2->safe_psql('new2', "CREATE EXTENSION uidgen; $table");
push @writers, start_writer($m2, 'new2', 'new2');
push @nodes, $m4;
poll_for($m4, 90, q{SELECT count(*) >= 2000 FROM t WHERE src = 'new2'});
$m2->poll_query_until('new2', q{SELECT count(*) >= 2000 FROM t WHERE src = 'new2'});

stop_all_writers(\@nodes, \@writers);

count_duplicates('case 2 (database created again), with case 1', [ $m1, 'postgres' ], [ $m1, 'new1' ],
	[ $m2, 'postgres' ], [ $m2, 'new2' ], [ $m3, 'postgres' ], [ $m4, 'postgres' ]);

done_testing();
