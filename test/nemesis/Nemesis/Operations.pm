# Nemesis::Operations: the routine operations among the nemesis' faults
# (docs/nemesis.md): what operators do every week to a fleet that issues,
# which must not stop it (issue 34) nor issue an ID twice (issue 32).
# Nemesis::Faults lists them with the other kinds.
package Nemesis::Operations;

use strict;
use warnings;

use Time::HiRes ();
use Nemesis::Fleet;

sub query { return Nemesis::Fleet::query(@_); }

sub pick
{
	my ($u, @list) = @_;
	return $list[ int($u * @list) ];
}

# The registry's clock now, to tell its sessions begun since.
sub registry_now
{
	my ($fleet) = @_;
	my ($ok, $now) = query($fleet->{registry}, 'postgres', 'SELECT clock_timestamp()');
	return $ok ? $now : undef;
}

# How many IDs a client's file holds now.
sub ids_of
{
	my ($client) = @_;
	open my $f, '<', $client->{file} or return 0;
	my $n = 0;
	while (<$f>) { $n++ if /^[CRU] /; }
	return $n;
}

# ---- credentials ------------------------------------------------------------

# The member role's password changes at the registry (open connections
# stay), then the member's uidgen.registry is given the new one, in its text
# or in a passfile, and reloaded: the documented order of a rotation.
sub credential_rotation
{
	my ($fleet, $fault, $node) = @_;
	my $role = $node->{nemesis_role};
	my $password = 'pw' . ++$fleet->{serial};
	my $since = registry_now($fleet);
	my ($ok, undef, $err) = query($fleet->{registry}, 'postgres', "ALTER ROLE $role PASSWORD '$password'");
	return "ALTER ROLE FAILED: $err" unless $ok;
	$node->{nemesis_password} = $password;
	my $had_passfile = $node->{nemesis_passfile};
	my $how;
	if ($fault->{u2} < 0.5)
	{
		$node->{nemesis_passfile} = undef;
		$how = 'the new password in uidgen.registry';
	}
	else
	{
		$node->{nemesis_passfile} = $fleet->write_passfile($node);
		$how = $had_passfile ? 'the passfile rewritten (the text unchanged)' : 'the password moved to a passfile';
	}
	$fleet->set_registry($node, copies => 1);
	my $note = "ALTER ROLE $role PASSWORD at the registry, then $how, reloaded";
	# The agent reads a passfile when it connects: nothing to wait for when
	# only the file changed.
	return "$note; the agent's connection stays" if $had_passfile && $node->{nemesis_passfile};
	my $reached = defined $since && Nemesis::Fleet::poll($fleet->{registry}, 'postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = '$role' AND backend_start > '$since'", 30);
	return "$note; the agent " . ($reached ? 'reached the registry with it' : 'DID NOT REACH THE REGISTRY WITH IT in 30 s');
}

# ---- databases ----------------------------------------------------------------

# A database of its own: created, the extension, a client issues for a few
# seconds, stops, and the database is dropped.  Its client's IDs stay in
# the check like every client's.
sub database_churn
{
	my ($fleet, $fault, $node) = @_;
	my $db = 'churn' . ++$fleet->{serial};
	my $seconds = sprintf('%.1f', 2 + 4 * $fault->{u1});
	my ($ok, undef, $err) = query($node, 'postgres', "CREATE DATABASE $db");
	return "CREATE DATABASE FAILED: $err" unless $ok;
	($ok, undef, $err) = query($node, $db, 'CREATE EXTENSION uidgen; '
		. 'CREATE TABLE nemesis_t (id bigint DEFAULT uid_next(), at timestamptz)');
	if (!$ok)
	{
		query($node, 'postgres', "DROP DATABASE $db WITH (FORCE)");
		return "CREATE EXTENSION FAILED in $db: $err";
	}
	my $client = $fleet->start_client($node, $db);
	Time::HiRes::sleep($seconds);
	$fleet->read_floors(only => $node->name . "/$db");
	$fleet->stop_client($client);
	my $note = "$db created, a client for ${seconds}s (" . ids_of($client) . ' IDs), stopped';
	($ok, undef, $err) = query($node, 'postgres', "DROP DATABASE $db");
	if (!$ok)
	{
		$note .= "; DROP DATABASE FAILED: $err";
		($ok, undef, $err) = query($node, 'postgres', "DROP DATABASE $db WITH (FORCE)");
		return "$note; WITH (FORCE) FAILED TOO: $err" unless $ok;
		$note .= '; dropped WITH (FORCE)';
	}
	else
	{
		$note .= '; dropped';
	}
	$client->{db_gone} = 1;
	return $note;
}

# DROP EXTENSION and CREATE EXTENSION in a member database while its
# clients issue, as two commands.  The clients' IDs are kept in their files,
# outside the database; their table's default goes with the extension
# (CASCADE) and is set again.  Between the two commands the clients' calls
# fail (42883 and the like, the expected errors of this kind).
sub reinstall
{
	my ($fleet, $fault, $node) = @_;
	my $db = pick($fault->{u1}, @Nemesis::Fleet::DATABASES);
	my ($ok, undef, $err) = query($node, $db, "SET lock_timeout = '10s'; DROP EXTENSION uidgen CASCADE");
	return "DROP EXTENSION FAILED in $db: $err" unless $ok;
	my $tries = 0;
	while (++$tries <= 10)
	{
		($ok, undef, $err) = query($node, $db, "SET lock_timeout = '10s'; CREATE EXTENSION uidgen; "
			. 'ALTER TABLE nemesis_t ALTER COLUMN id SET DEFAULT uid_next()');
		last if $ok;
		Time::HiRes::sleep(0.5);
	}
	return "DROP EXTENSION uidgen CASCADE in $db; CREATE EXTENSION FAILED $tries TIMES: $err" unless $ok;
	return "DROP EXTENSION uidgen CASCADE, CREATE EXTENSION uidgen in $db"
	  . ($tries > 1 ? " (created at the ${tries}th try; before: $err)" : '');
}

# ---- the registry's setting ---------------------------------------------------

# uidgen.registry names the registry through a host name for a while: one
# whose resolver never answers (the member runs with the stalling resolver,
# test/shim/stall_getaddrinfo.c), or localhost; then 127.0.0.1 again.  One
# to two TTLs: longer than the agent's 5 s bound on a lookup.
sub slow_resolver
{
	my ($fleet, $fault, $node) = @_;
	return 'skipped: the run does not preload the stalling resolver' unless $fleet->{stall_shim};
	my $hold = sprintf('%.1f', $Nemesis::Fleet::LEASE_TTL * (1 + $fault->{u1}));
	my $name = $fault->{u2} < 0.5 ? $Nemesis::Fleet::STALLED_HOST : 'localhost';
	my $started = Time::HiRes::time();
	$node->{nemesis_host} = $name;
	$fleet->set_registry($node);
	my $what;
	if ($name eq 'localhost')
	{
		$what = Nemesis::Fleet::poll($node, 'app1', q{SELECT bool_and(registry LIKE '%host=localhost%'
			OR registry LIKE '%@localhost:%') FROM uidgen.registry_status}, $hold)
		  ? 'the agent switched to it' : "THE AGENT DID NOT SWITCH TO IT in ${hold}s";
	}
	else
	{
		$what = Nemesis::Fleet::poll($node, 'app1', q{SELECT bool_or(pending_error LIKE '%resolve%')
			FROM uidgen.registry_status}, $hold)
		  ? 'the agent shows the name unresolved (pending_error)'
		  : "NO pending_error ABOUT THE NAME in ${hold}s";
	}
	my $left = $started + $hold - Time::HiRes::time();
	Time::HiRes::sleep($left) if $left > 0;
	$node->{nemesis_host} = undef;
	$fleet->set_registry($node);
	return "uidgen.registry through host $name for ${hold}s ($what), then 127.0.0.1";
}

# uidgen.registry unset (a reload: the member leaves the fleet, as an
# operator does against class-08 errors in an outage), some seconds, then
# set back.  The IDs the member's clients receive from the unset until its
# agent is ready again, and a second more, are outside the fleet: they
# collide by nature, and the checker counts them apart.
sub registry_unset_and_set
{
	my ($fleet, $fault, $node) = @_;
	my $hold = sprintf('%.1f', 3 + 7 * $fault->{u1});
	my $from = Time::HiRes::time();
	$node->{nemesis_unset} = 1;
	$fleet->set_registry($node);
	Time::HiRes::sleep($hold);
	$node->{nemesis_unset} = 0;
	$fleet->set_registry($node);
	my $ready = Nemesis::Fleet::poll($node, 'app1',
		q{SELECT coalesce(bool_and(agent_status = 'ready'), false) FROM uidgen.registry_status}, 60);
	my $to = Time::HiRes::time() + 1;
	push @{ $fleet->{outside}{ $node->name } }, [ $from, $to ];
	return sprintf('uidgen.registry unset for %ss, set back; the agent %s; outside the fleet for %.1fs',
		$hold, $ready ? sprintf('ready %.1fs later', $to - 1 - $from - $hold) : 'NOT READY within 60 s', $to - $from);
}

# ---- the registry's sessions --------------------------------------------------

# A member role calls a registry function at the registry (for a fake life
# and a system identifier of its own, so that nothing is leased) and holds
# its session for about a TTL: in a transaction block it leaves open (an
# operator's forgotten psql session), refused since issue 32's item 5
# (25001), or in one long statement.  Neither may make any member wait.
sub member_txn_open
{
	my ($fleet, $fault, $node) = @_;
	my $hold = sprintf('%.1f', $Nemesis::Fleet::LEASE_TTL * (0.8 + 0.4 * $fault->{u1}));
	my $role = $node->{nemesis_role};
	my $call = "uidgen.registry_renew(1, gen_random_uuid(), 'nemesis_$role', 1, 'nemesis', 0, "
	  . q{'{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')};
	my ($how, $sql) = $fault->{u2} < 0.5
	  ? ('a transaction block', "BEGIN; SELECT count(*) FROM $call; SELECT pg_sleep($hold); ROLLBACK")
	  : ('one long statement', "SELECT count(*), pg_sleep($hold) FROM $call");
	my $started = Time::HiRes::time();
	my ($ok, undef, $err) = query($fleet->{registry}, 'registry', $sql,
		role => $role, password => $node->{nemesis_password}, timeout => $hold + 60);
	if (!$ok)
	{
		my ($first) = $err =~ /^(?:psql:[^\n]*?)?(ERROR:[^\n]*)/m;
		return "$role called registry_renew() at the registry in $how: refused (" . ($first // $err) . ')';
	}
	return sprintf('%s called registry_renew() at the registry in %s and held it for %.1fs', $role, $how,
		Time::HiRes::time() - $started);
}

1;
