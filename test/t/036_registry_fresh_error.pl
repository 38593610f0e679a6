# A registration never fails with an error older than itself (issue 20,
# item 8): while the agent's last attempt failed, a first uid_next() has it
# try again and reports that attempt.  So once the registry database is
# created, the next uid_next() succeeds instead of failing with the agent's
# older error ('database "later" does not exist').
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
my $member = new_uidgen_node('member', conf => [ registry_conf($registry, db => 'later') ]);

# ---- the registry database does not exist yet -------------------------------

ok(poll_for($member, 60,
		q{SELECT coalesce(bool_or(error LIKE '%database "later" does not exist%'), false) FROM uidgen.registry_status}),
	'the agent reports that the registry database does not exist');
my $err = psql_error($member, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:  08\w\w\w: .*database "later" does not exist/s, 'meanwhile uid_next() fails with class 08');

$registry->safe_psql('postgres', 'CREATE DATABASE later');
$registry->safe_psql('later', "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet(); SELECT uid_registry_configure(lease_ttl => '10s')");
my ($ret, $out, $stderr) = $member->psql('postgres', 'SELECT uid_next()');
is($ret, 0, 'right after the registry database is created, the first uid_next() succeeds') or diag($stderr);

# ---- the registry database has no uidgen yet ----------------------------------

# Points the member at registry database db, waits until the agent reports
# error (a LIKE pattern), and creates database app on the member.
sub registry_fails
{
	my ($db, $error, $app, $label) = @_;
	$member->safe_psql('postgres', "ALTER SYSTEM SET uidgen.registry = '" . ($registry->connstr($db) =~ s/'/''/gr) . "'");
	$member->reload;
	# The new value is reported as pending while the agent goes on with the
	# registry it reaches, or as the error when it has none.
	ok(poll_for($member, 60,
			"SELECT coalesce(bool_or(coalesce(pending_error, error) LIKE '$error'), false) FROM uidgen.registry_status"),
		$label);
	$member->safe_psql('postgres', "CREATE DATABASE $app");
	$member->safe_psql($app, 'CREATE EXTENSION uidgen');
}

$registry->safe_psql('postgres', 'CREATE DATABASE later2');
registry_fails('later2', '%has no uidgen%', 'app', 'the agent reports that the registry database has no uidgen');
$registry->safe_psql('later2', "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet(); SELECT uid_registry_configure(lease_ttl => '10s')");
($ret, $out, $stderr) = $member->psql('app', 'SELECT uid_next()');
is($ret, 0, 'right after uidgen is created there, the first uid_next() succeeds') or diag($stderr);

# ---- a failure that lasts is still reported, promptly -------------------------

# From a server without a registry: a new value that fails beside one that
# works fails nothing (test 076).
$member->safe_psql('postgres', "ALTER SYSTEM SET uidgen.registry = ''");
$member->reload;
$member->poll_query_until('postgres', q{SELECT bool_and(agent_status = 'off') FROM uidgen.registry_status})
  or die 'the agent did not let the registry go';
registry_fails('never', '%database "never" does not exist%', 'app2', 'the agent reports another missing registry database');
$err = psql_error($member, 'app2', 'SELECT uid_next()');
like($err, qr/ERROR:  08\w\w\w: .*database "never" does not exist/s, 'a registration fails with its own attempt\'s error');

done_testing();
