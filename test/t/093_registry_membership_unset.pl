# A membership that outlives its registry (issue 32, INV-19 of
# docs/design.md): uidgen.registry unset on member m1 by a reload, m1 goes
# on issuing, a new member m2 joins and issues, the same registry is set
# back on m1.  Before the fix m1 issued under workers of its own numbering
# (the ones m2 was leased) and never joined again: its old join floor
# counted those IDs as covered (the review counted 356,378 to 532,498
# duplicates, all above m1's floor).  Now a member without its registry
# issues nothing (55000) until it leaves on purpose with
# uid_registry_leave(); IDs it issues outside the fleet collide by nature
# and are counted, not asserted; setting the registry back joins anew,
# above all it issued, and no ID above a database's join floor repeats.
# In both scopes: scope server's keeper claims through the same path.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $dir = PostgreSQL::Test::Utils::tempdir();

# A session of node inserting IDs of source in batches until it is stopped,
# going on past a batch that fails: under leases of 2 s a renewal late on a
# loaded machine lets the lease lapse for a moment, and the member's
# sessions then claim again.  What is asserted is where IDs lie and that
# none repeats, not that no batch failed.
sub loop_sql
{
	my ($source) = @_;
	return "DO \$\$ BEGIN LOOP BEGIN INSERT INTO ids SELECT uid_next(), '$source' FROM generate_series(1, 500); "
	  . "EXCEPTION WHEN OTHERS THEN PERFORM pg_sleep(0.05); END; COMMIT; PERFORM pg_sleep(0.01); END LOOP; END \$\$";
}

sub stop_loops
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE 'DO $$%'});
}

my $registry = new_registry_node('registry', member => 0, max_borrow => '2s', lease_ttl => '2s');

for my $scope ('backend', 'server')
{
	my @conf = ("uidgen.max_borrow = '2s'", "uidgen.scope = '$scope'");
	my $m1 = new_member_node("m1_$scope", $registry, conf => \@conf);
	$m1->safe_psql('postgres', 'CREATE TABLE ids (id bigint, source text)');
	$m1->safe_psql('postgres', q{INSERT INTO ids SELECT uid_next(), 'member' FROM generate_series(1, 10000)});
	my $shift = $m1->safe_psql('postgres', 'SELECT worker_bits + seq_bits FROM uidgen.config');
	my $old_floor = $m1->safe_psql('postgres', 'SELECT join_floor FROM uidgen.membership');

	like(psql_error($m1, 'postgres', 'SELECT uid_registry_leave()'),
		qr/ERROR:  55000: cannot leave the uidgen registry while uidgen.registry is set/,
		"$scope: a member cannot leave while its registry is set");

	# The obvious workaround for an outage: unset the registry.
	$m1->append_conf('postgresql.conf', "uidgen.registry = ''\n");
	$m1->reload;
	$m1->poll_query_until('postgres', q{SELECT agent_status = 'off' FROM uidgen.registry_status})
	  or die 'the agent of m1 did not stop';
	like(psql_error($m1, 'postgres', 'SELECT uid_next()'),
		qr/ERROR:  55000: database "postgres" is a member of uidgen registry .*, but uidgen.registry is not set.*HINT:  Set uidgen.registry again, or leave the registry on purpose with SELECT uid_registry_leave\(\)/s,
		"$scope: a member without its registry refuses uid_next(): 55000");

	# Leaving on purpose: m1 issues outside the fleet, while m2 joins.
	is($m1->safe_psql('postgres', 'SELECT uid_registry_leave()'), 't', "$scope: m1 leaves its registry");
	is($m1->safe_psql('postgres', 'SELECT count(*) FROM uidgen.membership'), '0',
		"$scope: leaving deletes the membership row");
	my $outside = start_sql_loop($m1, loop_sql('outside'), until => q{SELECT count(*) > 0 FROM ids WHERE source = 'outside'});

	# m2 joins once m1's old block may be leased again: m2's workers are then
	# the numbers m1 issues under outside the fleet (the review's case).
	$registry->poll_query_until('registry',
		'SELECT coalesce(bool_and(reusable_after < clock_timestamp()), true) FROM uidgen.worker_block')
	  or die "m1's block did not become reusable";
	my $m2 = new_member_node("m2_$scope", $registry, conf => \@conf);
	$m2->safe_psql('postgres', 'CREATE TABLE ids (id bigint, source text)');
	my @m2_loops = map { start_sql_loop($m2, loop_sql('m2')) } 1 .. 3;
	push @m2_loops, start_sql_loop($m2, loop_sql('m2'), until => 'SELECT count(*) >= 5000 FROM ids');
	$m1->poll_query_until('postgres', "SELECT count(*) >= 5000 FROM ids WHERE source = 'outside'")
	  or die 'm1 did not issue outside the fleet';
	stop_loops($m1);
	finish_sql_loops($outside);

	# The same registry set back on m1: it joins anew, above all it issued.
	$m1->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
	$m1->reload;
	wait_for_registry($m1);
	# Its floor covers its time reservation, ahead of what the lease covers:
	# it issues once the registry's time nears it (as for a first join).
	$m1->poll_query_until('postgres', q{WITH i AS (INSERT INTO ids SELECT uid_next(), 'rejoined' RETURNING 1) SELECT count(*) = 1 FROM i})
	  or die 'm1 did not issue again under its registry';
	my $new_floor = $m1->safe_psql('postgres', 'SELECT join_floor FROM uidgen.membership');
	my $outside_top = $m1->safe_psql('postgres', "SELECT max(id >> $shift) FROM ids WHERE source = 'outside'");
	cmp_ok($new_floor, '>=', $outside_top,
		"$scope: m1 joined again at unit $new_floor, at or above the last unit it issued outside ($outside_top; first join $old_floor)");

	# Both issue at once.
	my $m1_loop = start_sql_loop($m1, loop_sql('rejoined'), until => q{SELECT count(*) >= 5000 FROM ids WHERE source = 'rejoined'});
	my $m2_count = $m2->safe_psql('postgres', 'SELECT count(*) FROM ids');
	$m2->poll_query_until('postgres', "SELECT count(*) >= $m2_count + 5000 FROM ids") or die 'm2 stopped issuing';
	$m1->poll_query_until('postgres', "SELECT count(*) >= 20000 FROM ids WHERE source = 'rejoined'") or die 'm1 stopped issuing';
	stop_loops($_) for $m1, $m2;
	finish_sql_loops($m1_loop, @m2_loops);

	# m2's IDs beside m1's, counted in SQL.
	my $m2_floor = $m2->safe_psql('postgres', 'SELECT join_floor FROM uidgen.membership');
	$m2->safe_psql('postgres', "COPY (SELECT id, source FROM ids WHERE id >> $shift > $m2_floor) TO '$dir/m2_$scope'");
	$m1->safe_psql('postgres', "COPY ids FROM '$dir/m2_$scope'");
	my $collided = $m1->safe_psql('postgres', q{
		SELECT count(*) FROM ids o JOIN ids m ON m.id = o.id AND m.source = 'm2' WHERE o.source = 'outside'});
	note("$scope: IDs m1 issued outside the fleet that m2 issued too (by nature, not asserted): $collided");
	cmp_ok($m1->safe_psql('postgres', "SELECT count(*) FROM ids WHERE source = 'rejoined' AND id >> $shift > $new_floor"),
		'>=', 20000, "$scope: m1 issued above its new join floor");
	is($m1->safe_psql('postgres', qq{
		SELECT count(*) FROM (SELECT id FROM ids WHERE source = 'm2' OR source = 'rejoined' AND id >> $shift > $new_floor
		                       GROUP BY id HAVING count(*) > 1) d}), '0',
		"$scope: no ID above each database's join floor was issued twice");
	$m1->stop;
	$m2->stop;
}

done_testing();
