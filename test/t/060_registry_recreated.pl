# A registry that is created again while members hold leases: its
# extension dropped and created again (case 1), then its database dropped
# and created again under the same name (case 2).  Members go on writing
# throughout; after each re-creation a new member server and a new database
# of a member join and write.  Every ID of every database is collected and
# counted: none may occur twice.
#
# A registry created again has another identity (uidgen.registry_identity),
# which the members that joined the old one refuse (class 08): they issue
# under the leases they hold, then nothing, until
# uid_registry_move(old_registry_lost => true) in each member database moves
# them, above everything they issued (a plain uid_registry_move() is
# refused: the new registry imported nothing, and only the explicit word
# that the old one is gone for good lets a member go there, ASM-9).  The new
# registry leases nothing until what holders of the lost one may still
# issue is behind it (registry_holder_bound(): lease TTL + max_borrow +
# clock bound, 21 s here), since it was not set up with
# uid_registry_start_fleet().  Before registries had an identity, the new
# registry leased block 1 again at once: 660 duplicates of 45,300 IDs.
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

# Until a new session of node/db fails with the agent's refusal of a
# registry of another identity (once the leases it held have ended); the
# error, and the agent's in uidgen.registry_status (a keeper's error, which
# a session of scope server reports, carries no detail).
sub refusal
{
	my ($node, $db) = @_;
	my $err = '';
	for (1 .. 300)
	{
		my $ret;
		($ret, undef, $err) = $node->psql($db, 'SELECT uid_next()', extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		if ($ret != 0 && $err =~ /08004/)
		{
			my $agent = $node->safe_psql($db, 'SELECT error FROM uidgen.registry_status LIMIT 1');
			return "$err\n$agent" if $agent =~ /which this server joined/;
		}
		select(undef, undef, undef, 0.2);
	}
	return "no refusal, last: $err";
}

# The registry's identity and when it was created.
sub registry_identity
{
	return split /\|/, $registry->safe_psql('registry', 'SELECT registry_id, created_at FROM uidgen.registry_identity');
}

# Every lease of the registry was granted at least the holder bound after
# the registry's creation: none before the holders of the lost one are done.
sub first_lease_after_bound
{
	my ($what) = @_;
	is($registry->safe_psql('registry', q{
		SELECT count(*) FROM uidgen.worker_block_lease h, uidgen.registry_identity i
		 WHERE h.claimed_at < i.created_at + uidgen.registry_holder_bound()}), '0',
		"$what: the new registry leased nothing within the holder bound of its creation");
}

my ($id0) = registry_identity();

# ---- 1. the registry's extension dropped and created again ----------------

$registry->safe_psql('registry', "DROP EXTENSION uidgen CASCADE; CREATE EXTENSION uidgen; "
	. "SELECT uid_registry_configure(lease_ttl => '10s')");
my ($id1) = registry_identity();
isnt($id1, $id0, 'the registry created again has another identity');
my $m3 = new_member_node('m3', $registry);
$m3->safe_psql('postgres', $table);
push @writers, start_writer($m3, 'postgres', 'new1');
$m1->safe_psql('postgres', 'CREATE DATABASE new1');
$m1->safe_psql('new1', "CREATE EXTENSION uidgen; $table");
push @writers, start_writer($m1, 'new1', 'new1');
push @nodes, $m3;

my $refused = refusal($m1, 'postgres');
like($refused, qr/08004.*registry \Q$id1\E, not \Q$id0\E, which this server joined/s,
	'm1 refuses the registry created again (08004), naming both identities');
like($refused, qr/uid_registry_move\(\)/, 'and says how to move to it');
like(refusal($m2, 'postgres'), qr/which this server joined/, 'so does m2 (scope server)');
like(refusal($m1, 'new1'), qr/which this server joined/, 'and a new database of m1');
ok(poll_for($m3, 120, q{SELECT count(*) >= 2000 FROM t WHERE src = 'new1'}),
	'a new member issues once the holder bound has passed since the creation');
first_lease_after_bound('case 1');
count_duplicates('case 1 (extension created again)', [ $m1, 'postgres' ], [ $m1, 'new1' ], [ $m2, 'postgres' ],
	[ $m3, 'postgres' ]);

# ---- moving m1 and m2 to the new registry -----------------------------------

# Each database moves while its writer is refused (it issues nothing):
# every ID it issues after the move is above every ID it issued before.
for my $where ([ $m1, 'postgres', 'old' ], [ $m1, 'new1', 'new1' ], [ $m2, 'postgres', 'old' ])
{
	my ($node, $db, $label) = @$where;
	my $key = $node->name . "/$db";
	my ($count, $max_id) = split /\|/, $node->safe_psql($db, 'SELECT count(*), max(id) FROM t');
	like(psql_error($node, $db, 'SELECT uid_registry_move()'),
		qr/ERROR:  55000: uidgen registry \Q$id1\E has not imported uidgen registry \Q$id0\E.*old_registry_lost => true/s,
		"$key: a move to the registry that imported nothing is refused, with the way to do it");
	is($node->safe_psql($db, 'SELECT uid_registry_move(old_registry_lost => true)'), $id1,
		"$key moves to registry $id1 once told that the old one is lost");
	is($node->safe_psql($db, 'SELECT registry_id FROM uidgen.membership'), $id1, "$key: uidgen.membership pins it");
	$node->poll_query_until($db, "SELECT count(*) >= $count + 1000 FROM t WHERE src = '$label'")
	  or die "$key issues nothing after the move";
	# (None before when its first ID came after the agent met the new registry.)
	is($node->safe_psql($db, 'SELECT count(*) FROM t WHERE id <= ' . ($max_id eq '' ? 'NULL' : $max_id)), $count,
		"$key: every ID issued after the move is above every ID of before");
}

# ---- 2. the registry's database dropped and created again -------------------

$registry->safe_psql('postgres', 'DROP DATABASE registry WITH (FORCE)');
$registry->safe_psql('postgres', 'CREATE DATABASE registry');
$registry->safe_psql('registry', "CREATE EXTENSION uidgen; SELECT uid_registry_configure(lease_ttl => '10s')");
my ($id2) = registry_identity();
isnt($id2, $id1, 'the registry database created again is another registry');
my $m4 = new_member_node('m4', $registry);
$m4->safe_psql('postgres', $table);
push @writers, start_writer($m4, 'postgres', 'new2');
$m2->safe_psql('postgres', 'CREATE DATABASE new2');
$m2->safe_psql('new2', "CREATE EXTENSION uidgen; $table");
push @writers, start_writer($m2, 'new2', 'new2');
push @nodes, $m4;
like(refusal($m3, 'postgres'), qr/registry \Q$id2\E, not \Q$id1\E, which this server joined/s,
	'm3 refuses the registry database created again');
like(refusal($m2, 'new2'), qr/which this server joined/, 'so does a new database of a moved member');
ok(poll_for($m4, 120, q{SELECT count(*) >= 2000 FROM t WHERE src = 'new2'}),
	'a new member of the database created again issues once the holder bound has passed');
first_lease_after_bound('case 2');

stop_all_writers(\@nodes, \@writers);

count_duplicates('both cases and the moves', [ $m1, 'postgres' ], [ $m1, 'new1' ],
	[ $m2, 'postgres' ], [ $m2, 'new2' ], [ $m3, 'postgres' ], [ $m4, 'postgres' ]);

done_testing();
