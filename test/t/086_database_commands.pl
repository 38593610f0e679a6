# Background workers never hold a database open (issue 34, item 2): DROP
# DATABASE (without FORCE), ALTER DATABASE ... RENAME and CREATE DATABASE
# ... TEMPLATE wait a few seconds for other connections to the database and
# then fail.  A keeper (scope server) used to stay for
# uidgen.keeper_idle_timeout (5 min) after its last ID, so each of them
# failed after 5 s while it lived.  Keepers and claim pools hold a session
# lock on their database that those commands wait for, see them wait, and
# leave.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('dbcommands', scope => 'server');

sub keeper_of
{
	my ($db) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' AND datname = '$db'");
}

# A database whose keeper runs: it has issued an ID in scope server.
sub with_keeper
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION uidgen');
	is($node->safe_psql($db, 'SELECT uid_next() > 0'), 't', "database $db issues in scope server");
	ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' "
		  . "AND datname = '$db')"), "database $db has its keeper");
}

with_keeper('tenant');
my ($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE tenant_copy TEMPLATE tenant');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of a database whose keeper runs succeeds') or diag($err);
is($node->safe_psql('tenant_copy', 'SELECT uid_next() > 0'), 't', 'the copy issues');

$node->safe_psql('tenant', 'SELECT uid_next()');
ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' "
	  . "AND datname = 'tenant')"), 'database tenant has its keeper again');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE tenant RENAME TO tenant_renamed');
is($ret, 0, 'ALTER DATABASE ... RENAME of a database whose keeper runs succeeds') or diag($err);
is($node->safe_psql('tenant_renamed', 'SELECT uid_next() > 0'), 't', 'the renamed database issues');

ok(poll_for($node, 60, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' "
	  . "AND datname = 'tenant_renamed')"), 'the renamed database has its keeper');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE tenant_renamed');
is($ret, 0, 'DROP DATABASE (without FORCE) of a database whose keeper runs succeeds') or diag($err);
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE tenant_copy');
is($ret, 0, 'DROP DATABASE of the copy succeeds') or diag($err);

# The server goes on: database postgres issues, its keeper comes back.
is($node->safe_psql('postgres', 'SELECT uid_next() > 0'), 't', 'database postgres issues afterwards');
ok(!$node->log_contains(qr/is already held/), 'no process inherited a lock from a keeper that left');

done_testing();
