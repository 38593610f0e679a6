# Moving a fleet to another registry one member at a time, while the other
# members still issue under the old one (issue 32, "moving a fleet"), by the
# documented procedure: uid_registry_export() at the old registry (which
# seals it), uid_registry_import() of its result at the new one, then each
# member re-pointed by a reload of uidgen.registry and uid_registry_move()
# in its database.  Every ID of both members is counted: none may occur
# twice, and no member stops issuing for more than a few seconds.
#
# The layout is small so that an overlap would be certain: blocks of one
# worker, so that a new registry that leases from block 1 hands a moved
# member the worker another member holds at the old one, and 2 sequence
# bits, so that writers borrow ahead (up to max_borrow, 10 s).  4 worker
# bits: each move takes new blocks while the old registry's ceilings keep
# its blocks out of use for up to a lease and max_borrow (40 s here); with
# 3, the second move found none left for 20 s.
# Part 1 moves to a new registry made fresh (no uid_registry_start_fleet(),
# which the import makes needless), part 2 to one set up with
# uid_registry_start_fleet().  Before export and import (on dd5d0ea, with
# this procedure without those two calls), the new registry leased
# block 1 to the moved member at once: 11,800 duplicates among 104,200 IDs
# in part 1 (registry2 set up with uid_registry_start_fleet(); made fresh,
# it waits out its holder bound first, then does the same).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $layout = 'SELECT uid_configure(worker_bits => 4, seq_bits => 2)';
my $rules = "SELECT uid_registry_configure(lease_ttl => '30s', block_size => 1)";
# An ID's time unit under 4 worker bits and 2 sequence bits.
my $unit_shift = 6;

my $registry = new_registry_node('registry', member => 0, lease_ttl => '30s');
$registry->safe_psql('registry', "$layout; $rules");
# The registries the fleet moves to, on the same server: registry2 made
# fresh, registry3 set up for a new fleet.
$registry->safe_psql('postgres', 'CREATE DATABASE registry2');
$registry->safe_psql('registry2', "CREATE EXTENSION uidgen; $layout; $rules");
$registry->safe_psql('postgres', 'CREATE DATABASE registry3');
$registry->safe_psql('registry3', "CREATE EXTENSION uidgen; $layout; $rules; SELECT uid_registry_start_fleet()");

my $table = 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), src text NOT NULL, '
  . 'at timestamptz NOT NULL DEFAULT clock_timestamp())';

# A writer that survives refusals (a member between its reload and its
# move issues nothing): 200 rows a transaction, retried after a short pause.
sub start_writer
{
	my ($node, $label) = @_;
	return start_sql_loop($node,
		"DO \$\$ BEGIN LOOP BEGIN INSERT INTO t (src) SELECT '$label' FROM generate_series(1, 200); "
		  . "EXCEPTION WHEN OTHERS THEN PERFORM pg_sleep(0.1); END; COMMIT; PERFORM pg_sleep(0.01); END LOOP; END \$\$");
}

my $m1 = new_member_node('m1', $registry);
my $m2 = new_member_node('m2', $registry);
my @writers;
for my $m ($m1, $m2)
{
	wait_for_registry($m);
	$m->safe_psql('postgres', $table);
	push @writers, start_writer($m, $m->name);
}
for my $m ($m1, $m2)
{
	$m->poll_query_until('postgres', 'SELECT count(*) >= 5000 FROM t') or die $m->name . ' issues nothing';
}

sub identity_of
{
	my ($db) = @_;
	return $registry->safe_psql($db, 'SELECT registry_id FROM uidgen.registry_identity');
}

# Re-points node at registry database db by a reload, waits until its agent
# works with it, and moves its database; returns the time of the reload.
sub move_member
{
	my ($node, $db) = @_;
	my $line = (registry_conf($registry, db => $db))[1];
	my $before = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->append_conf('postgresql.conf', "$line\n");
	$node->reload;
	$node->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM uidgen.registry_status
		 WHERE registry LIKE '%dbname=$db%' AND coalesce(pending_registry, '') = ''})
	  or die $node->name . " does not switch to $db: "
	  . $node->safe_psql('postgres', 'SELECT pending_registry, pending_error, error FROM uidgen.registry_status');
	is($node->safe_psql('postgres', 'SELECT uid_registry_move()'), identity_of($db),
		$node->name . " moves to $db");
	return $before;
}

# Waits until stayer, still under the old registry, has issued rows more
# since the move and IDs 2 s of time units beyond the first ID mover issued
# after its move: were their rectangles to overlap, they would by then.
sub overlap_in_time
{
	my ($stayer, $mover, $since, $rows) = @_;
	$stayer->poll_query_until('postgres', "SELECT count(*) >= $rows FROM t WHERE at > '$since'")
	  or die $stayer->name . ' stopped issuing under the old registry';
	$mover->poll_query_until('postgres', "SELECT count(*) > 0 FROM t WHERE at > '$since'")
	  or die $mover->name . ' issues nothing after its move';
	my $first = $mover->safe_psql('postgres', "SELECT min(id) >> $unit_shift FROM t WHERE at > '$since'");
	$stayer->poll_query_until('postgres', "SELECT max(id) >> $unit_shift >= $first + 2000 FROM t")
	  or die $stayer->name . ' does not reach the time units of ' . $mover->name;
	note($stayer->name . ' issued under the old registry up to unit '
		  . $stayer->safe_psql('postgres', "SELECT max(id) >> $unit_shift FROM t") . ', '
		  . $mover->name . " under the new one from $first");
}

sub count_duplicates
{
	my ($what) = @_;
	my @lists = map { $_->safe_psql('postgres', 'SELECT id FROM t') } ($m1, $m2);
	my $total = 0;
	$total += () = $_ =~ /^\d/mg for @lists;
	is(duplicate_ids(@lists), 0, "$what: no duplicate among every ID of both members ($total IDs)");
}

# The longest wall-clock gap between successive rows of node's writer.
sub longest_gap
{
	my ($node) = @_;
	return $node->safe_psql('postgres', q{
		SELECT round(extract(epoch FROM max(gap))::numeric, 2)
		  FROM (SELECT at - lag(at) OVER (ORDER BY at) AS gap FROM t) g});
}

# ---- 1. m2 to registry2 (made fresh), m1 still under registry ---------------

my $to2 = "SELECT uid_registry_export('" . identity_of('registry2') . "')";
my $export = $registry->safe_psql('registry', $to2);
like($export, qr/"sealed_ceiling": \d+/, 'the export carries the sealed ceiling');
is($registry->safe_psql('registry', $to2), $export, 'a second export for the same registry is the same document');
like(psql_error($registry, 'registry', "SELECT uid_registry_export('" . identity_of('registry3') . "')"),
	qr/ERROR:  55000: uidgen registry [-0-9a-f]+ was exported to registry [-0-9a-f]+ already/,
	'an export for another registry is refused: two importers would lease the same blocks');
(my $quoted_for2 = $export) =~ s/'/''/g;
like(psql_error($registry, 'registry3', "SELECT uid_registry_import('$quoted_for2')"),
	qr/ERROR:  22023: the export of uidgen registry [-0-9a-f]+ is for registry [-0-9a-f]+, not this one/,
	'and registry3 refuses an export made for registry2');
(my $quoted = $export) =~ s/'/''/g;
is($registry->safe_psql('registry2', "SELECT uid_registry_import('$quoted')"), identity_of('registry'),
	'registry2 imports it');

my $since = move_member($m2, 'registry2');
overlap_in_time($m1, $m2, $since, 40000);
is($registry->safe_psql('registry2', qq{
	SELECT count(*) FROM uidgen.worker_block_lease l
	  JOIN jsonb_to_recordset('$quoted'::jsonb -> 'blocks') AS x(block bigint, ceiling_delta bigint) USING (block)
	 WHERE l.floor_delta < x.ceiling_delta}),
	'0', 'registry2 leased no block below the ceiling registry exported for it');
count_duplicates('m2 moved, m1 under the old registry');

move_member($m1, 'registry2');
$m1->poll_query_until('postgres', "SELECT count(*) > 0 FROM t WHERE id >> $unit_shift > "
	  . "(SELECT join_floor FROM uidgen.membership)")
  or die 'm1 issues nothing after its move';

# ---- 2. m1 to registry3 (uid_registry_start_fleet()), m2 still under registry2

$export = $registry->safe_psql('registry2', "SELECT uid_registry_export('" . identity_of('registry3') . "')");
($quoted = $export) =~ s/'/''/g;
is($registry->safe_psql('registry3', "SELECT uid_registry_import('$quoted')"), identity_of('registry2'),
	'registry3 imports the export of registry2');
$since = move_member($m1, 'registry3');
overlap_in_time($m2, $m1, $since, 10000);
move_member($m2, 'registry3');
$m2->poll_query_until('postgres', "SELECT count(*) > 0 FROM t WHERE id >> $unit_shift > "
	  . "(SELECT join_floor FROM uidgen.membership)")
  or die 'm2 issues nothing after its move';

for my $m ($m1, $m2)
{
	$m->safe_psql('postgres', q{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOOP BEGIN INSERT INTO t%'});
}
finish_sql_loops(@writers);

count_duplicates('both moves');
for my $m ($m1, $m2)
{
	my $gap = longest_gap($m);
	note($m->name . ": the longest gap between successive IDs is $gap s");
	cmp_ok($gap, '<', 10, $m->name . ' never stopped issuing for 10 s across its two moves');
}

done_testing();
