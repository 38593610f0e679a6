# Another spelling of uidgen.registry that reaches the same registry is the
# same registry (issue 34, item 1): rotating the member's password, moving
# it to a passfile, adding application_name and naming the host by an alias
# keep every block, grant and session going.  The agent keeps its connection
# and its leases until the new text has reached the registry's identity, then
# switches to it.  A text that fails (a typo) fails nothing and shows in
# uidgen.registry_status.  Sessions of scope backend on one member and a
# keeper of scope server on another issue all along: no statement fails, no
# keeper is replaced, no database joins again, no ID is issued twice.
#
# Before the fix every new text dropped the server's blocks: each session
# failed once with 08006 ("the registry's lease of uidgen worker N has run
# out") a lease after the reload, and a typo'd text failed every session.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $ttl = 6;
my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => "${ttl}s", max_borrow => '1s',
	conf => [ @borrow, "listen_addresses = '127.0.0.1'" ]);
my $port = $registry->port;

# The members reach the registry over TCP with a password: one role each, so
# that the registry tells their connections apart.
open my $hba, '>>', $registry->data_dir . '/pg_hba.conf' or die $!;
print $hba "host all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n";
close $hba;
$registry->reload;
$registry->safe_psql('postgres', "CREATE ROLE $_ LOGIN SUPERUSER PASSWORD 'one'") for 'member_b', 'member_s';

# A passfile per member, with the password of after the rotation.
my $dir = PostgreSQL::Test::Utils::tempdir_short();
for my $role ('member_b', 'member_s')
{
	open my $pass, '>', "$dir/$role.pgpass" or die $!;
	print $pass "127.0.0.1:$port:registry:$role:two\nlocalhost:$port:registry:$role:two\n";
	close $pass;
	chmod 0600, "$dir/$role.pgpass";
}

# The spellings, in the order the test sets them.
sub text_of
{
	my ($role, $step) = @_;
	my %text = (
		initial => "host=127.0.0.1 port=$port dbname=registry user=$role password=one",
		rotated => "host=127.0.0.1 port=$port dbname=registry user=$role password=two",
		passfile => "host=127.0.0.1 port=$port dbname=registry user=$role passfile=$dir/$role.pgpass",
		application_name =>
		  "host=127.0.0.1 port=$port dbname=registry user=$role passfile=$dir/$role.pgpass application_name=uidgen_$role",
		alias =>
		  "host=localhost port=$port dbname=registry user=$role passfile=$dir/$role.pgpass application_name=uidgen_$role",
		typo =>
		  "host=localhost port=$port dbname=regsitry user=$role passfile=$dir/$role.pgpass application_name=uidgen_$role");
	return $text{$step};
}

my %members = (
	member_b => new_uidgen_node('member_b', conf => [ "shared_preload_libraries = 'uidgen'", @borrow,
		"uidgen.registry = '" . text_of('member_b', 'initial') . "'" ]),
	member_s => new_uidgen_node('member_s', scope => 'server', conf => [ @borrow,
		"uidgen.registry = '" . text_of('member_s', 'initial') . "'" ]));

# Two sessions on each member issue (start_recording_writer): a
# failure is written down and the session goes on, until table stop has a row.
my @loops;
for my $role (sort keys %members)
{
	my $node = $members{$role};
	wait_for_registry($node);
	$node->safe_psql('postgres', q{
		CREATE TABLE ids (id bigint, source text);
		CREATE TABLE failures (at timestamptz, source text, sqlstate text, message text);
		CREATE TABLE stop (stop bool)});
	push @loops, start_recording_writer($node, $_) for 'a', 'b';
}
my %joined_at = map { $_ => $members{$_}->safe_psql('postgres', 'SELECT joined_at FROM uidgen.membership') } keys %members;
my $keeper = server_generator($members{member_s})->{keeper_pid};
like($keeper, qr/^\d+$/, "member_s issues through its keeper ($keeper)");

# The row of uidgen.registry_status (its first), as JSON text, for messages
# and for patterns.
sub status_text
{
	my ($role) = @_;
	return $members{$role}->safe_psql('postgres', 'SELECT row_to_json(s)::text FROM uidgen.registry_status s LIMIT 1');
}

sub failures
{
	my ($role) = @_;
	return recorded_failures($members{$role});
}

sub registry_now
{
	return $registry->safe_psql('postgres', 'SELECT clock_timestamp()');
}

# Sets uidgen.registry of every member to the spelling of step, with a reload.
sub set_text
{
	my ($step) = @_;
	for my $role (sort keys %members)
	{
		$members{$role}->adjust_conf('postgresql.conf', 'uidgen.registry', "'" . text_of($role, $step) . "'");
		$members{$role}->reload;
	}
}

# Waits until each member's agent has one connection to the registry, opened
# after since: it reached the registry under the new text.
sub wait_for_new_connections
{
	my ($since, $step) = @_;
	for my $role (sort keys %members)
	{
		ok(poll_for($registry, 60, "SELECT count(*) = 1 AND bool_and(backend_start > '$since') FROM pg_stat_activity "
				  . "WHERE usename = '$role'"),
			"$step: the agent of $role reached the registry under the new text")
		  or diag(status_text($role));
	}
}

# Lets a lease and max_borrow pass, and more: a lease dropped at the reload
# would have run out by then, and its holders failed.  The sessions go on
# issuing meanwhile; then none of them failed.
sub ride_out_a_lease
{
	my ($since, $step) = @_;
	my %before = map { $_ => $members{$_}->safe_psql('postgres', 'SELECT count(*) FROM ids') } keys %members;
	wait_for_clock_past($registry, $since, ($ttl + 3) . ' s');
	for my $role (sort keys %members)
	{
		$members{$role}->poll_query_until('postgres', "SELECT count(*) > $before{$role} FROM ids")
		  or die "$role issued nothing after $step";
		is(failures($role), '', "$step: no statement of $role failed");
	}
}

# ---- new spellings of the same registry ------------------------------------

# The password is rotated at the registry (connections open stay open), then
# given to the members.
$registry->safe_psql('postgres', "ALTER ROLE $_ PASSWORD 'two'") for 'member_b', 'member_s';
for my $step ('rotated', 'passfile', 'application_name', 'alias')
{
	my $since = registry_now();
	set_text($step);
	wait_for_new_connections($since, $step);
	ride_out_a_lease($since, $step);
}
like(status_text('member_b'), qr/application_name=uidgen_member_b/, 'uidgen.registry_status shows the text in use');

# ---- a typo -----------------------------------------------------------------

my $since = registry_now();
set_text('typo');
for my $role (sort keys %members)
{
	ok(poll_for($members{$role}, 60,
			q{SELECT row_to_json(s)::text LIKE '%regsitry%does not exist%' FROM uidgen.registry_status s LIMIT 1}),
		"a typo: uidgen.registry_status of $role shows why the new text fails")
	  or diag(status_text($role));
}
ride_out_a_lease($since, 'a typo');
for my $role (sort keys %members)
{
	like(status_text($role), qr/"agent_status":"ready"/, "a typo: the agent of $role goes on with the text that works");
	is($registry->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE usename = '$role'"), '1',
		"a typo: the agent of $role keeps its connection");
}

# The text is put back: it is the one the agent works with.
$since = registry_now();
set_text('alias');
for my $role (sort keys %members)
{
	ok(poll_for($members{$role}, 60, q{SELECT row_to_json(s)::text NOT LIKE '%regsitry%' FROM uidgen.registry_status s LIMIT 1}),
		"put back: uidgen.registry_status of $role no longer shows the typo")
	  or diag(status_text($role));
}
ride_out_a_lease($since, 'put back');
for my $role (sort keys %members)
{
	is($registry->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE usename = '$role' AND backend_start < '$since'"),
		'1', "put back: the agent of $role kept its connection all along");
}

# ---- what the sessions saw ----------------------------------------------------

for my $role (sort keys %members)
{
	$members{$role}->safe_psql('postgres', 'INSERT INTO stop VALUES (true)');
}
finish_sql_loops(@loops);

my @ids;
for my $role (sort keys %members)
{
	my $node = $members{$role};
	is(failures($role), '', "no statement of $role failed");
	is($node->safe_psql('postgres', 'SELECT joined_at FROM uidgen.membership'), $joined_at{$role},
		"database postgres of $role never joined again");
	push @ids, $node->safe_psql('postgres', 'SELECT id FROM ids');
	note("$role issued " . $node->safe_psql('postgres', 'SELECT count(*) FROM ids') . ' IDs');
}
is(server_generator($members{member_s})->{keeper_pid}, $keeper, 'the keeper of member_s was never replaced');
is(duplicate_ids(@ids), 0, 'no ID was issued twice');

done_testing();
