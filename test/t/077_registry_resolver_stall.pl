# A resolver that never answers holds neither the registry agent nor a fast
# shutdown (issue 34, item 4).  The member's uidgen.registry names the
# registry by a host name whose getaddrinfo() never returns (a shim preloaded
# into the member's postmaster, test/shim/stall_getaddrinfo.c).  The agent
# resolves names apart, with the bound of its connection: it reports the
# failure in uidgen.registry_status and tries again, and pg_ctl stop -m fast
# ends the server within seconds.
#
# Before the fix the agent called getaddrinfo() inside PQconnectStartParams():
# it never reported anything, and a fast shutdown waited for it for good.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use UidgenTest;

my $shim = $ENV{UIDGEN_STALL_SHIM} // 'build/stall_getaddrinfo.so';
BAIL_OUT("$shim is missing: make build/stall_getaddrinfo.so") unless -e $shim;
my $stalled = 'registry.stalled.invalid';

my $registry = new_registry_node('registry', member => 0, conf => [ "listen_addresses = '127.0.0.1'" ]);
my $member = new_uidgen_node('member', start => 0, conf => [ "shared_preload_libraries = 'uidgen'",
	"uidgen.registry = 'host=$stalled port=" . $registry->port . " dbname=registry'" ]);
{
	local $ENV{LD_PRELOAD} = $shim;
	local $ENV{UIDGEN_STALL_HOST} = $stalled;
	start_uidgen_node($member);
}

# The shim is in the member's processes (the postmaster's maps show it).
sub postmaster_pid
{
	open my $f, '<', $member->data_dir . '/postmaster.pid' or die "no postmaster.pid: $!";
	my $pid = <$f>;
	close $f;
	chomp $pid;
	return $pid;
}
my $postmaster = postmaster_pid();
like(slurp_file("/proc/$postmaster/maps"), qr/stall_getaddrinfo/, 'the member runs with the stalling resolver');

# The agent reports that the name did not resolve in time, and tries again.
ok(poll_for($member, 60, q{SELECT coalesce(bool_or(agent_status = 'failed' AND error LIKE '%could not resolve host name "}
		  . $stalled . q{" in time%'), false) FROM uidgen.registry_status}),
	'the agent reports the name that does not resolve')
  or diag($member->safe_psql('postgres', 'SELECT agent_status, error FROM uidgen.registry_status'));
like(psql_error($member, 'postgres', 'SELECT uid_next()'), qr/ERROR:  08001: .*could not resolve host name "\Q$stalled\E"/s,
	'a registration fails with the agent\'s error (08001), in its bound');

# A fast shutdown ends the server, the agent included, while the agent waits
# for the name: pg_ctl gets 30 s, and must need far less.
my $started = Time::HiRes::time();
my $ret = PostgreSQL::Test::Utils::system_log('pg_ctl', '-D', $member->data_dir, '-m', 'fast', '-t', '30', 'stop');
my $took = Time::HiRes::time() - $started;
is($ret, 0, 'pg_ctl stop -m fast succeeded');
cmp_ok($took, '<', 10, sprintf('the fast shutdown took %.1f s', $took));
if ($ret != 0)
{
	# Whatever still runs of the member goes, for the teardown's sake.
	my @pids = ($postmaster, grep { /\d/ } split(/\s+/, `ps -o pid= --ppid $postmaster`));
	kill 'KILL', @pids;
	for (1 .. 100)
	{
		last unless grep { kill 0, $_ } @pids;
		select(undef, undef, undef, 0.1);
	}
	unlink $member->data_dir . '/postmaster.pid';
}
$member->_update_pid(0);

done_testing();
