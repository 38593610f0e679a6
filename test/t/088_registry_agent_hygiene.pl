# The registry agent with a registry that is gone, an application_name of
# the user's, and another role.
# - A dead registry is retried after a second, then less often (doubling up
#   to 5 s), and once a second at most when sessions wait for a worker; the
#   same error is logged at most once a minute.  Sessions that need a worker
#   meanwhile still get the agent's fresh answer within seconds.  Before,
#   each waiting session had the agent retry at once and log each failure:
#   many lines a second.
# - application_name in uidgen.registry is the one the registry sees: the
#   agent's own name was forced over it.
# - A new uidgen.registry under another role at the same registry is not
#   switched to (pending_error says why): the registry binds the server life
#   to its first role, and the agent switched and then renewed nothing.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

# A short lease and max_borrow: leases lapse, and a restart's quarantine ends, within seconds.
my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '6s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('postgres', "CREATE ROLE $_ LOGIN SUPERUSER") for 'member_a', 'member_b';
sub text_as
{
	my ($role) = @_;
	return ($registry->connstr('registry') . " user=$role application_name=fleet_member") =~ s/'/''/gr;
}
my $member = new_uidgen_node('member',
	conf => [ "shared_preload_libraries = 'uidgen'", @borrow, "uidgen.registry = '" . text_as('member_a') . "'" ]);
wait_for_registry($member);

is($registry->safe_psql('registry',
		q{SELECT string_agg(application_name, ',') FROM pg_stat_activity WHERE datname = 'registry' AND pid <> pg_backend_pid()}),
	'fleet_member', "the registry sees the agent under the user's application_name");

# ---- another role ---------------------------------------------------------------

# The life is bound to member_a at the registry: under member_b the agent
# would renew nothing.  It does not switch, and says why.
my $since = $registry->safe_psql('postgres', 'SELECT clock_timestamp()');
$member->adjust_conf('postgresql.conf', 'uidgen.registry', "'" . text_as('member_b') . "'");
$member->reload;
ok(poll_for($member, 60, q{SELECT bool_and(pending_error LIKE '%connects as role "member_b"%'
                                  AND registry LIKE '%user=member_a%') FROM uidgen.registry_status}),
	'a new uidgen.registry under another role is not switched to, and pending_error says why')
  or diag($member->safe_psql('postgres', 'SELECT row_to_json(s) FROM uidgen.registry_status s'));
# A lease and more later the agent still renews, as member_a.
wait_for_clock_past($registry, $since, '8 s');
is($member->safe_psql('postgres', 'SELECT count(*) > 0 FROM uidgen.registry_status WHERE lease_left_ms > 2000'), 't',
	'the agent renews its leases all along');
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'and the member issues');
is($registry->safe_psql('postgres', q{SELECT string_agg(DISTINCT usename, ',') FROM pg_stat_activity
                                       WHERE datname = 'registry' AND pid <> pg_backend_pid()}),
	'member_a', 'as member_a');
$member->adjust_conf('postgresql.conf', 'uidgen.registry', "'" . text_as('member_a') . "'");
$member->reload;
ok(poll_for($member, 60, 'SELECT bool_and(pending_error IS NULL) FROM uidgen.registry_status'),
	'the role put back, nothing is pending');

# ---- a dead registry ----------------------------------------------------------

$registry->stop('fast');
# Until the leases have lapsed: from then on every registration waits for the agent.
$member->poll_query_until('postgres', 'SELECT count(*) = 0 FROM uidgen.registry_status WHERE lease_left_ms > 0')
  or die 'the member kept its leases with the registry down';
$member->poll_query_until('postgres', q{SELECT bool_and(agent_status = 'failed') FROM uidgen.registry_status})
  or die 'the agent did not report the registry down';

# Four sessions ask for an ID again and again for a window, each failure a
# registration that waits for a fresh answer of the agent.
my $window = 10;
$member->safe_psql('postgres', 'CREATE TABLE failed (n int)');
my $offset = -s $member->logfile;
my $started = time;
my @loops = map {
	start_sql_loop($member, qq{
		DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); n int := 0;
		BEGIN
			WHILE clock_timestamp() < t0 + interval '$window s' LOOP
				BEGIN
					PERFORM uid_next();
				EXCEPTION WHEN OTHERS THEN
					n := n + 1;
				END;
			END LOOP;
			INSERT INTO failed VALUES (n);
		END \$\$})
} 1 .. 4;
finish_sql_loops(@loops);
my $elapsed = time - $started;

my $log = substr(slurp_file($member->logfile), $offset);
my $lines = () = $log =~ /LOG:  uidgen registry agent: /g;
my ($sessions, $failed) = split /\|/, $member->safe_psql('postgres', 'SELECT count(*), sum(n) FROM failed');
is($sessions, '4', 'the four sessions ran their window');
note(sprintf('a dead registry: %d log lines of the agent in %.1f s while 4 sessions failed %d statements', $lines,
	$elapsed, $failed));
cmp_ok($failed, '>=', $window, "the sessions got the agent's answer all along ($failed statements failed)");
cmp_ok($lines, '<=', 2 + $elapsed / 60, "the agent logged the same failure at most once a minute ($lines lines)");

# At most a second for the agent's fresh answer, whatever its back-off.
my $slowest = 0;
for (1 .. 3)
{
	my $t0 = time;
	my ($ret) = $member->psql('postgres', 'SELECT uid_next()');
	isnt($ret, 0, 'uid_next() fails with the registry down');
	$slowest = time - $t0 if time - $t0 > $slowest;
}
cmp_ok($slowest, '<', 5, sprintf('a statement that needs a worker fails within %.1f s', $slowest));

# ---- back --------------------------------------------------------------------

$registry->start;
$member->poll_query_until('postgres', 'SELECT count(*) > 0 FROM uidgen.registry_status WHERE lease_left_ms > 0')
  or die 'the member leased nothing once the registry was back';
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'once the registry is back the member issues');

done_testing();
