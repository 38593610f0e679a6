# A member role at the registry cannot reach other members: not by holding
# a registry call's transaction open or running a long statement around
# one (every member would wait for its locks, and fail once its leases
# lapse), not by claiming under another member's system identifier (which
# would push that member to its limit of blocks), and not by re-asserting,
# during a quarantine, a block that another life holds or one beyond the
# layout (INV-16, issue 32 item 5).  The intruder is an ordinary member
# role, with the grants the reference tells an operator to give.
#
# On 38f1da4 (before the fix) each part failed: the open transaction held
# the registry's state row, and the member's sessions failed (class 08)
# once its leases lapsed; the intruder leased blocks under the member's
# system identifier; its re-assertion moved the member's block to its own
# life; and a block far beyond the layout was recorded.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '3s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_configure(worker_bits => 6)');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 4)');
my $intruder = new_member_role($registry, 'intruder');

my $member = new_member_node('member', $registry, conf => \@borrow);
$member->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$member->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
my $system = $member->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
my ($block) = map { $_->{block} } grep { $_->{block} ne '' } registry_status($member);
ok($block, "the member leases block $block");

# Runs sql as the intruder; returns psql's exit code and its stderr.
sub as_intruder { return psql_as($intruder, $_[0]); }

# A renewal of nothing under a life of the intruder's own.
my $empty_renew = q{uidgen.registry_renew(1, '6f1c2a3e-0000-4000-8000-000000000001', 'intruder', 1, 'h', 1, '{}',
	'{}', '{}', '{}', '{}', '{}', '{}', '{}')};

# Issues on the member, in new sessions and in one that lives throughout,
# until the registry's clock has passed three lease TTLs from now; returns
# the failed statements and the IDs issued.
sub issue_for_three_leases
{
	my $until = $registry->safe_psql('registry', q{SELECT clock_timestamp() + interval '9 s'});
	my $session = $member->background_psql('postgres', on_error_stop => 0);
	my ($failed, $issued) = (0, 0);
	while ($registry->safe_psql('registry', "SELECT clock_timestamp() < '$until'") eq 't')
	{
		my ($ret) = $member->psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 50)');
		$ret == 0 ? ($issued += 50) : $failed++;
		my (undef, $error) = $session->query('INSERT INTO ids SELECT uid_next() FROM generate_series(1, 50)');
		$error ? $failed++ : ($issued += 50);
		$session->{stderr} = '';
	}
	$session->quit;
	return ($failed, $issued);
}

# 1. A registry call inside a transaction block is refused: a transaction
# left open would hold its locks for as long as its session lives.
my $open = $registry->background_psql('registry', on_error_stop => 0, extra_params => [ '-U', 'intruder' ]);
$open->query("BEGIN; SELECT count(*) FROM $empty_renew");
like($open->{stderr}, qr/cannot run inside a transaction block/,
	'a registry call inside a transaction block is refused');
my ($failed, $issued) = issue_for_three_leases();
is($failed, 0, "no statement of the member failed while the intruder's transaction was open ($issued IDs)");
$open->quit;

# 2. A long statement around a call holds no lock another member waits for:
# the member renews, and a second member joins (its first claim) meanwhile.
my ($long_out, $long_err) = ('', '');
my $long = IPC::Run::start([ 'psql', '-X', '-d', $intruder, '-c', "SELECT count(*), pg_sleep(600) FROM $empty_renew" ],
	'>', \$long_out, '2>', \$long_err);
$registry->poll_query_until('registry', q{
	SELECT count(*) = 1 FROM pg_stat_activity WHERE usename = 'intruder' AND wait_event = 'PgSleep'})
  or die 'the long statement did not start';
my $second = new_member_node('second', $registry, conf => \@borrow);
$second->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
my ($second_ret, undef, $second_err) = $second->psql('postgres',
	'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
is($second_ret, 0, "a second member claims its first block during the intruder's long statement")
  or diag($second_err);
($failed, $issued) = issue_for_three_leases();
is($failed, 0, "no statement of the member failed during the intruder's long statement ($issued IDs)");
ok($registry->safe_psql('registry', q{SELECT count(*) = 1 FROM pg_stat_activity WHERE usename = 'intruder'}) eq 't',
	'the long statement was still running');
$long->kill_kill;
$registry->safe_psql('registry', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'intruder'});

# 3. The member's system identifier is bound to the member's role.
my ($ret, $err) = as_intruder("SELECT * FROM uidgen.registry_claim(1, gen_random_uuid(), '$system', 1, 'h', 1, '{}')");
isnt($ret, 0, "a claim under the member's system identifier by another role is refused");
like($err, qr/system identifier $system belongs to member role/, '... naming the role it belongs to');
is($registry->safe_psql('registry', qq{
	SELECT count(*) FROM uidgen.worker_block b JOIN uidgen.server_life l USING (life)
	 WHERE l.system_identifier = '$system' AND l.member_role = 'intruder'}),
	'0', 'the intruder holds no block under the member system identifier');

# The keys of the registry's advisory locks derive from a secret that no
# member role reads: one that could name them could take them, and stall
# every member's calls or skip their blocks.
($ret, $err) = as_intruder('SELECT secret FROM uidgen.registry_secret');
like($err, qr/permission denied for table registry_secret/, "a member role cannot read the registry's secret");

# 4. During a quarantine, a re-assertion neither moves another life's block
# nor records one beyond the layout.  A restart's quarantine lasts
# registry_holder_bound() from the server's start: 5 s under the lease of
# 3 s, which a loaded machine can spend on the restart and a connection,
# and so 22 s under a lease of 20 s.
$registry->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '20s')");
$registry->restart;
$registry->poll_query_until('registry', 'SELECT quarantined FROM uidgen.registry_check_state()')
  or die 'the restarted registry is not quarantined';
my $member_life = $registry->safe_psql('registry', "SELECT life FROM uidgen.worker_block WHERE block = $block");
($ret, $err) = as_intruder(qq{
	SELECT count(*) FROM uidgen.registry_renew(1, '6f1c2a3e-0000-4000-8000-000000000002', 'intruder-2', 1, 'h', 1,
		'{}', '{$block, 1000000000000}', '{9000000000000, 0}', '{}', '{}',
		'{6f1c2a3e-0000-4000-8000-0000000000aa, 6f1c2a3e-0000-4000-8000-0000000000bb}', '{}',
		'{9000000000001, 9000000000001}')});
is($ret, 0, 'the re-assertion itself is answered') or diag($err);
is($registry->safe_psql('registry', "SELECT life FROM uidgen.worker_block WHERE block = $block"), $member_life,
	"the member's block stays with the member's life");
is($registry->safe_psql('registry', 'SELECT count(*) FROM uidgen.worker_block WHERE block > 16'), '0',
	'no block beyond the layout (64 workers, blocks of 4) is recorded');

# And the member went on issuing throughout, every ID once: under leases of
# 3 s again, so that the issuing below outlives three of them.
$registry->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '3s')");
($failed, $issued) = issue_for_three_leases();
is($failed, 0, "the member issues after the quarantine's re-assertions ($issued IDs)");
$second->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 1000)');
is(duplicate_ids($member->safe_psql('postgres', 'SELECT id FROM ids'), $second->safe_psql('postgres', 'SELECT id FROM ids')),
	0, 'no ID was issued twice, by either member');

done_testing();
