# The registry stopped for less and for more than the lease TTL, and
# restored from an old backup.  Within the TTL nothing changes: members
# issue from their blocks, new sessions from the block kept in reserve.
# Past it, members stop issuing (class 08) and resume once the registry is
# back.  A registry that may have lost state (any restart, a restore) leases
# nothing new for a TTL plus max_borrow while members re-assert their
# blocks, so a restored registry never leases a block twice.
#
# Nothing here sleeps: each step waits for what it needs (a lease run down,
# a lease lapsed, a block leased again), with max_borrow at 2 s so that a
# quarantine (TTL + max_borrow + clock bound) lasts 13 s rather than 21 s.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my $ttl = 10;
my @borrow = ("uidgen.max_borrow = '2s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => "${ttl}s", max_borrow => '2s',
	init => { allows_streaming => 1 }, conf => \@borrow);

my $m1 = new_member_node('m1', $registry, conf => \@borrow);
my $m2 = new_member_node('m2', $registry, scope => 'server', conf => \@borrow);
for my $m ($m1, $m2)
{
	wait_for_registry($m);
	$m->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int)');
}

# The same on each of the nodes: how many failed in all, and the first error.
sub insert_sessions2
{
	my ($phase, $n, @nodes) = @_;
	my ($failed, $error) = (0, '');
	for my $node (@nodes)
	{
		my ($f, $e) = insert_sessions($node, $phase, $n);
		$failed += $f;
		$error ||= $e;
	}
	return ($failed, $error);
}

# Rows of phase from n new sessions of node: returns how many failed, and the first error.
sub insert_sessions
{
	my ($node, $phase, $n) = @_;
	my ($failed, $error) = (0, '');
	for (1 .. $n)
	{
		my ($ret, $out, $err) = $node->psql('postgres', "INSERT INTO t (phase) SELECT $phase FROM generate_series(1, 500)",
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		if ($ret != 0)
		{
			$failed++;
			$error ||= $err;
		}
	}
	return ($failed, $error);
}

insert_sessions($_, 1, 4) for ($m1, $m2);

# An old backup of the registry: it knows of the blocks leased so far only.
$registry->backup('old');

# Leases granted after the backup: a third member.
my $m3 = new_member_node('m3', $registry, conf => \@borrow);
wait_for_registry($m3);
$m3->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int)');
insert_sessions($m3, 1, 4);
my $m3_blocks = held_blocks($m3);
note("m3 leases blocks $m3_blocks, which the old backup does not know of");

# ---- stopped for less than the TTL ----------------------------------------

# A session that keeps issuing through the outage.
my $long = $m1->background_psql('postgres');
$long->query_safe('INSERT INTO t (phase) SELECT 2 FROM generate_series(1, 100)');
$registry->stop('fast');
my ($failed, $error) = insert_sessions($m1, 2, 3);
is($failed, 0, 'registry down: new sessions of a member issue from its blocks') or diag($error);
($failed, $error) = insert_sessions($m2, 2, 3);
is($failed, 0, 'and so do those of a server-scope member') or diag($error);
$long->query_safe('INSERT INTO t (phase) SELECT 2 FROM generate_series(1, 100)');
# Until m1's leases have gone 4 s unrenewed (renewals are due every TTL/6).
$m1->poll_query_until('postgres', q{
	SELECT count(*) > 0 AND max(lease_left_ms) <= } . ($ttl - 4) * 1000 . q{ FROM uidgen.registry_status WHERE block IS NOT NULL})
  or die 'the leases of m1 did not run down: ' . $m1->safe_psql('postgres', 'SELECT block, lease_left_ms FROM uidgen.registry_status');
($failed, $error) = insert_sessions($m1, 2, 2);
is($failed, 0, "still with leases 4 s unrenewed, within the ${ttl} s lease") or diag($error);
note("an outage shorter than the leases: 0 failed statements (leases ${ttl} s, 4 s unrenewed)");
$registry->start;
$m1->poll_query_until('postgres', q{SELECT bool_and(agent_status = 'ready') FROM uidgen.registry_status})
  or die 'm1 did not reach the registry again';
($failed, $error) = insert_sessions2(3, 2, $m1, $m2);
is($failed, 0, 'the registry back: nothing changed') or diag($error);
$long->query_safe('INSERT INTO t (phase) SELECT 3 FROM generate_series(1, 100)');
$long->quit;
pass('a session kept issuing through the outage, under the same worker');

# ---- stopped for more than the TTL ----------------------------------------

$registry->stop('fast');
# Until the leases of m1 and m2 have lapsed (m3's too: it is left alone),
# and m2's keeper, whose reservation may reach max_borrow past its lease,
# has left at its next tick.
for my $m ($m1, $m2)
{
	$m->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM uidgen.registry_status WHERE lease_left_ms > 0}) and
	$m->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'uidgen keeper%'})
	  or die $m->name . ' kept a lease or a keeper with the registry down';
}
($failed, $error) = insert_sessions($m1, 4, 1);
is($failed, 1, 'registry down past the TTL: a member issues nothing');
like($error, qr/ERROR:  08\d\d\d: /, "with a class 08 error ($error)");
like($error, qr/registry/, 'naming the registry');
($failed, $error) = insert_sessions($m2, 4, 1);
is($failed, 1, 'nor does a server-scope member');
is($m1->safe_psql('postgres', 'SELECT count(*) FROM t WHERE phase = 4'), '0', 'no row of phase 4 on m1');

$registry->start;
# Its restart may mean lost state: it leases nothing new for TTL + max_borrow + clock bound.
my $q = $registry->safe_psql('registry', 'SELECT quarantined FROM uidgen.registry_check_state()');
is($q, 't', 'the restarted registry holds new leases back');
my $back = time;
# m3 too: the restore below needs the blocks it holds.
for my $m ($m1, $m2, $m3)
{
	$m->poll_query_until('postgres', q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE lease_left_ms > 0})
	  or die $m->name . ' got no block again';
}
# The quarantine, plus at most a round of each agent (a second) and a loaded machine's slack.
my $bound = $registry->safe_psql('registry', 'SELECT extract(epoch FROM uidgen.registry_holder_bound())');
my $waited = time - $back;
cmp_ok($waited, '<=', $bound + 10, sprintf('the members leased a block again %.1f s after the registry came back '
	. '(its quarantine: %s s)', $waited, $bound));
note(sprintf('an outage past the TTL: no ID from the leases\' end until %.1f s after the registry is back', $waited));
($failed, $error) = insert_sessions2(5, 2, $m1, $m2);
is($failed, 0, 'after the quarantine members issue again') or diag($error);

# ---- restored from an old backup ------------------------------------------

# The restored registry takes the place of the stopped one (same socket
# directory and port): it shows blocks of m1 and m2 only.
$m3_blocks = held_blocks($m3);
my $m3_life = (registry_status($m3))[0]{life};
# m3 re-asserts its blocks only while it still holds them: the registry is
# down for a stop and a start only, all the slow work (initdb of the new
# member below, the copy of the backup) done before, and it goes down just
# after m3 renewed its leases, a whole TTL from lapsing.
my $m4 = new_member_node('m4', $registry, conf => \@borrow, start => 0);
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($registry, 'old');
$restored->append_conf('postgresql.conf', 'port = ' . $registry->port . "\nunix_socket_directories = '" . $registry->host . "'\n");
$m3->poll_query_until('postgres', q{
	SELECT min(lease_left_ms) >= } . ($ttl - 1) * 1000 . q{ FROM uidgen.registry_status WHERE block IS NOT NULL})
  or die 'm3 did not renew its leases';
# At once: a fast stop's checkpoint can take seconds on a loaded machine.
$registry->stop('immediate');
$restored->start;
my $restored_at = time;
# Reached through the registry's connection string from here on.
note("the old backup predates m3: m3's blocks $m3_blocks are unknown to it until m3 re-asserts them");

# A new member asks at once: nothing until the members re-asserted theirs.
start_uidgen_node($m4);
$m4->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase int)');
($failed, $error) = insert_sessions($m4, 6, 1);
is($failed, 1, 'a new member gets no block from a registry that may have lost state');
like($error, qr/ERROR:  08\d\d\d: .*hands out no worker block until/s, 'class 08, saying until when');
$registry->poll_query_until('registry',
	"SELECT count(*) = cardinality('{$m3_blocks}'::int[]) FROM uidgen.worker_block WHERE block IN ($m3_blocks) AND life = '$m3_life'")
  or die 'm3 did not re-assert its blocks';
pass('m3 re-asserted its blocks');
insert_sessions($m3, 6, 2);
$m4->poll_query_until('postgres', q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE lease_left_ms > 0})
  or die 'm4 got no block';
$waited = time - $restored_at;
cmp_ok($waited, '<=', $bound + 10, sprintf('m4 leased its first block %.1f s after the restore', $waited));
note(sprintf('a restore: a new member leased no block for %.1f s (its quarantine: %s s)', $waited, $bound));
($failed, $error) = insert_sessions($m4, 6, 4);
is($failed, 0, 'after the quarantine the new member issues') or diag($error);
my $m4_blocks = held_blocks($m4);
is($registry->safe_psql('registry', qq{
	SELECT count(*) FROM uidgen.worker_block WHERE block IN ($m4_blocks) AND life::text <> '} . (registry_status($m4))[0]{life} . q{'}),
	'0', "m4's blocks ($m4_blocks) are its own, none of the others'");
insert_sessions($_, 7, 2) for ($m1, $m2, $m3, $m4);

my @lists = map { $_->safe_psql('postgres', 'SELECT id FROM t') } ($m1, $m2, $m3, $m4);
my $total = 0;
$total += scalar(grep { $_ ne '' } split /\n/, $_) for @lists;
cmp_ok($total, '>=', 20000, "IDs issued in all ($total)");
is(duplicate_ids(@lists), 0, "no duplicate over the four members, through both outages and the restore ($total IDs)");

done_testing();
