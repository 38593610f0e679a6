# The registry agent of a member restarts (SIGTERM: PostgreSQL 15's
# pg_terminate_backend() refuses a background worker) while a session holds
# a worker of one of its blocks.  The server life goes on, and so do its
# grants: the new agent process renews them.  Then the grants lapse all the
# same (renewals fail), and the registry leases the same block to the same
# server life again.  That is a new grant: the session that held a worker
# of the old one must issue nothing more under it, while the worker goes
# fresh to another database (INV-17 of docs/design.md).  Before grants
# had an identity the new agent forgot the blocks but not the grants, and
# leases were matched by worker range: the old holder came back to life
# beside the new one (12,680 and 27,385 duplicates on the first version of
# this test; the review counted 3,520,386 and 1,367,807).
#
# With worker_bits 2 and blocks of one worker the fleet has three blocks.
# Blocks 1 and 2 lapse together; blocks 2 and 3 are held back at the
# registry meanwhile, so that block 1 is the only one the agent can lease
# next.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
# Leases of 10 s while the agent restarts (a restart took 2 s on a loaded
# machine, and leases of 2 s lapsed before the new agent renewed them);
# the leases it grants after that, block 1's again among them, last 2 s.
my $registry = new_registry_node('registry', member => 0, lease_ttl => '10s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_configure(worker_bits => 2, seq_bits => 9)');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

my $member = new_member_node('member', $registry, conf => \@borrow);
$member->safe_psql('postgres', 'CREATE DATABASE other');
$member->safe_psql('other', 'CREATE EXTENSION uidgen');
for my $db ('postgres', 'other')
{
	$member->safe_psql($db, 'CREATE TABLE ids (id bigint, source text); CREATE TABLE go (go bool)');
}

# A session that issues 100 IDs as source, waits for go, then for 3 s.
sub writer
{
	my ($db, $source) = @_;
	return start_gated_writer($member, db => $db, seconds => 3, pause => 0.005,
		insert => "INSERT INTO ids SELECT uid_next(), '$source' FROM generate_series(1, 100)",
		until => "SELECT count(*) > 0 FROM ids WHERE source = '$source'");
}

sub first_worker
{
	my ($db, $source) = @_;
	return $member->safe_psql($db, "SELECT min(uid_worker_id(id)) FROM ids WHERE source = '$source'");
}

# Polls code until it returns true, for at most 60 s.
sub poll_until
{
	my ($code) = @_;
	for (1 .. 600)
	{
		return 1 if $code->();
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

sub blocks
{
	return $member->safe_psql('postgres',
		'SELECT string_agg(block::text, \',\' ORDER BY block) FROM uidgen.registry_status WHERE lease_left_ms > 0');
}

# Session a of database postgres holds worker 1, of block 1; the agent
# leases block 2 in reserve.
wait_for_registry($member);
my $a = writer('postgres', 'a');
is(first_worker('postgres', 'a'), '1', 'session a holds worker 1');
$member->poll_query_until('postgres', q{SELECT count(*) = 2 FROM uidgen.registry_status WHERE lease_left_ms > 0})
  or die 'the agent leased no block in reserve';
is(blocks(), '1,2', 'the agent leases blocks 1 and 2');

# The agent restarts.  It has no database, so pg_stat_activity does not
# show it: its process title does, among the postmaster's children.
sub agent_pid
{
	open my $f, '<', $member->data_dir . '/postmaster.pid' or die "no postmaster.pid: $!";
	my $postmaster = <$f>;
	close $f;
	chomp $postmaster;
	my $ps = `ps -o pid=,args= --ppid $postmaster`;
	return $ps =~ /^\s*(\d+)\s.*uidgen registry agent/m ? $1 : '';
}
my $agent_pid = agent_pid();
like($agent_pid, qr/^\d+$/, 'the registry agent runs');
ok(kill('TERM', $agent_pid), "SIGTERM to the registry agent ($agent_pid)");
poll_until(sub { my $pid = agent_pid(); $pid ne '' && $pid ne $agent_pid })
  or die 'the registry agent did not restart';

# The new agent process resumes the grants of the old one: they live in
# shared memory as long as the server life.  The leases as the registry
# has them once the old agent is gone: only the new one can renew them.
$registry->safe_psql('registry', q{
	CREATE TABLE leases_at_restart AS
	SELECT block, lease_id, lease_expires_at FROM uidgen.worker_block WHERE block IN (1, 2) AND status = 'leased'});
poll_for($member, 60, q{SELECT bool_and(agent_status = 'ready') FROM uidgen.registry_status})
  or die 'the new agent did not get ready';
is(blocks(), '1,2', 'the new agent holds blocks 1 and 2, as the old one leased them');
ok($registry->poll_query_until('registry', q{
	SELECT count(*) = 2 FROM uidgen.worker_block b JOIN leases_at_restart r USING (block, lease_id)
	 WHERE b.status = 'leased' AND b.lease_expires_at > r.lease_expires_at}),
	'the new agent renewed both leases, under the same lease IDs');

# Then the grants lapse all the same: the registry's table of blocks stays
# locked until both blocks may be leased again, so that renewals fail
# (lock_timeout).  Session a holds worker 1 of block 1 meanwhile.
$registry->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '2s')");
my $locker = $registry->background_psql('registry');
$locker->query_safe('BEGIN; LOCK TABLE uidgen.worker_block IN EXCLUSIVE MODE');
# Block 3, never leased, is held back from now on as if another server
# held it.  A claim of the agent that waits for the lock reads the
# registry's clock as its transaction began, before block 1 was reusable:
# it went on to lease block 3, fresh, and with a worker in reserve the
# agent wanted block 1 no more (the agent did not lease block 1 again,
# twice in CI).
$locker->query_safe(q{
	INSERT INTO uidgen.worker_block
	       (block, first_worker, last_worker, life, status, claimed_at, lease_expires_at, reusable_after, lease_id,
	        ceiling_delta)
	SELECT 3, 3, 3, life, 'leased', now(), now(), now() + interval '1 hour', gen_random_uuid(), ceiling_delta
	  FROM uidgen.worker_block WHERE block = 2});
poll_for($member, 60, q{SELECT count(*) = 0 FROM uidgen.registry_status WHERE lease_left_ms > 0})
  or die 'the leases did not lapse: ' . blocks();
$registry->poll_query_until('registry', q{SELECT bool_and(reusable_after < now()) FROM uidgen.worker_block WHERE block IN (1, 2)})
  or die 'blocks 1 and 2 did not become reusable';
# Block 2 is held back too: the registry hands out the block that became
# reusable first, which may be block 2 (its lease may have been renewed
# last), and the scenario needs the worker session a still holds.
$locker->query_safe(q{UPDATE uidgen.worker_block SET reusable_after = now() + interval '1 hour' WHERE block = 2});
$locker->query_safe('COMMIT');
$locker->quit;
pass('the leases of blocks 1 and 2 lapsed while renewals failed');

# The registry leases block 1 to the same server life again: a new grant.
poll_for($member, 60, q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block = 1 AND lease_left_ms > 0})
  or die 'the agent did not lease block 1 again: ' . blocks();

# Its worker 1 goes fresh to database other, while session a still holds
# worker 1 under the grant that lapsed.
my $c = writer('other', 'c');
is(first_worker('other', 'c'), '1', 'session c of database other was granted worker 1 anew');

# Both write at once; then every ID of both databases is counted.
$member->safe_psql($_, 'INSERT INTO go VALUES (true)') for 'postgres', 'other';
finish_sql_loops($a, $c);

my $postgres_ids = $member->safe_psql('postgres', 'SELECT id FROM ids');
my $other_ids = $member->safe_psql('other', 'SELECT id FROM ids');
my $issued = (() = $postgres_ids =~ /\n/g) + (() = $other_ids =~ /\n/g) + 2;
my $after_a = $member->safe_psql('postgres', q{SELECT count(*) FROM ids WHERE source = 'a' AND uid_worker_id(id) = 1});
note("$issued IDs in all; session a issued $after_a under worker 1");
cmp_ok($member->safe_psql('other', q{SELECT count(*) FROM ids WHERE source = 'c'}), '>', 1000,
	'session c issued under its new grant');
is(duplicate_ids($postgres_ids, $other_ids), 0, 'no ID was issued twice');

done_testing();
