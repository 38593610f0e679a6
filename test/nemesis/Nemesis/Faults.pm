# Nemesis::Faults: the faults the nemesis injects (docs/nemesis.md), the
# seeded schedule that draws them, and the list of those that hit the
# registry's known open gaps.
package Nemesis::Faults;

use strict;
use warnings;

use Time::HiRes ();
use Nemesis::Fleet;
use Nemesis::Operations;

# The fault kinds that hit the known open gaps of the registry
# (docs/nemesis.md says which), kept here and nowhere else.  The
# default run leaves them out and says so; FAULTS=all includes them.  Take
# one out of this list when the fix for its gap lands.
our %KNOWN_GAPS = (
	clock_step => 'a member clock stepped while it holds a lease: libfaketime does not reach the agent and the '
	  . 'keepers that PostgreSQL 15 starts first, so the step is not the one the design assumes',
);

# The kinds that promise no outage: no client statement at their member
# ('member'), or at any member ('fleet'), may fail in the window after one
# (nemesis.pl asserts it, over the windows no other fault disturbs).
our %NO_OUTAGE = ((map { $_ => 'member' } qw(credential_rotation database_churn slow_resolver
	  reload_scope reload_registry_spelling reload_max_borrow)),
	member_txn_open => 'fleet');

# Errors that a kind brings about by design, accepted in the window after
# one of its faults at its member (and nowhere else): a reinstall leaves
# the database without the extension between its two commands.
our %KIND_ERRORS = (
	reinstall => {
		'42883' => 'undefined function: uid_next() between DROP EXTENSION and CREATE EXTENSION',
		'42P01' => 'undefined table: uidgen\'s tables between DROP EXTENSION and CREATE EXTENSION',
		'3F000' => 'invalid schema name: schema uidgen between DROP EXTENSION and CREATE EXTENSION',
	},
);

# Every kind: what it hits, whether it crashes that server (for the crash
# exception of INV-1), and what it does.
our %KINDS = (
	kill_backend => { on => 'member', crash => 1, run => \&kill_backend },
	kill_agent => { on => 'member', crash => 1, run => \&kill_agent },
	kill_keeper => { on => 'member', crash => 1, run => \&kill_keeper },
	kill_postmaster => { on => 'member', crash => 1, run => \&kill_postmaster },
	immediate_restart => { on => 'member', crash => 1, run => \&immediate_restart },
	agent_sigterm => { on => 'member', run => \&agent_sigterm },
	clock_step => { on => 'member', run => \&clock_step },
	reload_scope => { on => 'member', run => \&reload_scope },
	reload_registry_spelling => { on => 'member', run => \&reload_registry_spelling },
	reload_max_borrow => { on => 'member', run => \&reload_max_borrow },
	template_clone => { on => 'member', run => \&template_clone },
	standby_promote => { on => 'member', run => \&standby_promote },
	proxy_drop => { on => 'member', run => \&proxy_cut },
	proxy_stall => { on => 'member', run => \&proxy_cut },
	registry_restart => { on => 'registry', run => \&registry_restart },
	registry_pause_within => { on => 'registry', run => \&registry_pause },
	registry_pause_past => { on => 'registry', run => \&registry_pause },
	registry_restore => { on => 'registry', run => \&registry_restore },
	registry_failover => { on => 'registry', run => \&registry_failover },
	registry_recreate => { on => 'registry', run => \&registry_recreate },
	registry_migration => { on => 'registry', run => \&registry_migration },
	# Routine operations (Nemesis::Operations).
	credential_rotation => { on => 'member', run => \&Nemesis::Operations::credential_rotation },
	database_churn => { on => 'member', run => \&Nemesis::Operations::database_churn },
	slow_resolver => { on => 'member', run => \&Nemesis::Operations::slow_resolver },
	reinstall => { on => 'member', run => \&Nemesis::Operations::reinstall },
	registry_unset_and_set => { on => 'member', run => \&Nemesis::Operations::registry_unset_and_set },
	member_txn_open => { on => 'member', run => \&Nemesis::Operations::member_txn_open },
);

# The routine operations of issues 32 and 34, which FAULTS=operations
# (make nemesis-operations) runs alone, each at least once.
our @OPERATIONS = qw(credential_rotation database_churn slow_resolver reinstall registry_unset_and_set
  member_txn_open registry_migration reload_registry_spelling);

# The kinds FAULTS names: "default" (every kind but the known gaps), "all",
# "operations" (@OPERATIONS), or a comma-separated list of kinds (and of
# those words).
sub select_kinds
{
	my ($spec) = @_;
	my @default = grep { !$KNOWN_GAPS{$_} } sort keys %KINDS;
	my %chosen;
	for my $word (split /[,\s]+/, $spec // 'default')
	{
		if ($word eq 'default') { $chosen{$_} = 1 for @default; }
		elsif ($word eq 'all') { $chosen{$_} = 1 for keys %KINDS; }
		elsif ($word eq 'operations') { $chosen{$_} = 1 for @OPERATIONS; }
		elsif ($KINDS{$word}) { $chosen{$word} = 1; }
		else { die "unknown fault kind \"$word\"; the kinds: " . join(', ', sort keys %KINDS) . ", default, all\n"; }
	}
	return sort keys %chosen;
}

# The schedule of a seed: the same seed, kinds and minutes give the same
# faults, in the same order, at the same planned times, with the same
# targets and parameters.  Every fault draws the same numbers whatever its
# kind, so that one kind more or less changes only the kinds.
sub schedule
{
	my ($seed, $seconds, @kinds) = @_;
	srand($seed);
	my @faults;
	my $at = 10;	# the load gets going first
	while ($at < $seconds - 10)
	{
		my $fault = {
			n => scalar(@faults) + 1,
			at => $at,
			kind => $kinds[ int(rand(@kinds)) ],
			member => int(rand(3)),
			u1 => rand(),
			u2 => rand(),
		};
		push @faults, $fault;
		$at += 4 + int(rand(9));
	}
	# With at least as many faults as kinds, each kind comes once before any
	# comes again, in an order drawn from the same numbers, so that a short
	# run of a few kinds (FAULTS=operations) covers them all.
	if (@faults >= @kinds)
	{
		my @order = sort { $faults[$a]{u1} <=> $faults[$b]{u1} || $a <=> $b } 0 .. $#kinds;
		$faults[$_]{kind} = $kinds[ $order[ $_ % @kinds ] ] for 0 .. $#faults;
	}
	return @faults;
}

sub describe
{
	my ($fault) = @_;
	my $on = $KINDS{ $fault->{kind} }{on} eq 'member' ? 'm' . ($fault->{member} + 1) : 'registry';
	return sprintf('#%d %s on %s (u1 %.3f, u2 %.3f)', $fault->{n}, $fault->{kind}, $on, $fault->{u1}, $fault->{u2});
}

# Runs fault against fleet; returns notes (text) on what it did and found.
sub inject
{
	my ($fleet, $fault) = @_;
	my $kind = $KINDS{ $fault->{kind} };
	my $member = $fleet->{members}[ $fault->{member} ];
	return $kind->{run}->($fleet, $fault, $member);
}

# ---- helpers ------------------------------------------------------------------

sub q1 { my ($ok, $out) = Nemesis::Fleet::query(@_); return $ok ? $out : undef; }

sub pick
{
	my ($u, @list) = @_;
	return @list ? $list[ int($u * @list) ] : undef;
}

sub pids_of
{
	my ($node, $type) = @_;
	# By process title among the postmaster's children: the registry agent
	# has no database, so pg_stat_activity does not show it.
	my @pids;
	my ($postmaster, @children) = Nemesis::Fleet::node_pids($node);
	for my $pid (@children)
	{
		open my $f, '<', "/proc/$pid/cmdline" or next;
		my $title = <$f> // next;
		push @pids, $pid if $title =~ /\Q$type\E/;
	}
	return sort { $a <=> $b } @pids;
}

sub log_offset { my ($node) = @_; return -s $node->logfile; }

# Waits until node, which crashed after its log had offset bytes, is back.
sub wait_for_crash_restart
{
	my ($fleet, $node, $offset) = @_;
	my $deadline = time + 120;
	while (time < $deadline)
	{
		my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile, $offset);
		last if $log =~ /all server processes terminated; reinitializing.*database system is ready to accept connections/s;
		Time::HiRes::sleep(0.2);
	}
	return wait_up($node) ? 'the server crash-restarted' : 'THE SERVER DID NOT COME BACK';
}

sub wait_up
{
	my ($node) = @_;
	return Nemesis::Fleet::poll($node, 'postgres', 'SELECT true', 120);
}

sub restart_member
{
	my ($fleet, $node) = @_;
	$fleet->start_node($node) or return 'IT DID NOT START AGAIN';
	return wait_up($node) ? 'started again' : 'IT DID NOT COME BACK';
}

# ---- crashes and kills of a member ------------------------------------------

sub kill_one
{
	my ($fleet, $node, $type, $u) = @_;
	my $pid = pick($u, pids_of($node, $type)) or return undef;
	return kill_pid($fleet, $node, $type, $pid);
}

sub kill_pid
{
	my ($fleet, $node, $type, $pid) = @_;
	my $offset = log_offset($node);
	kill 'KILL', $pid;
	return "SIGKILL to $type $pid: " . wait_for_crash_restart($fleet, $node, $offset);
}

# A client backend's process title names its user and database, not its
# type: pg_stat_activity tells them.
sub kill_backend
{
	my ($fleet, $fault, $node) = @_;
	my $pids = q1($node, 'postgres', q{SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname <> 'postgres'}) // '';
	my $pid = pick($fault->{u1}, split(' ', $pids)) or return 'skipped: no client backend';
	return kill_pid($fleet, $node, 'client backend', $pid);
}

sub kill_agent
{
	my ($fleet, $fault, $node) = @_;
	return kill_one($fleet, $node, 'uidgen registry agent', $fault->{u1}) // 'skipped: no agent';
}

# The keeper of a member with one (scope server), this one first.
sub kill_keeper
{
	my ($fleet, $fault, $node) = @_;
	for my $candidate ($node, @{ $fleet->{members} })
	{
		my $done = kill_one($fleet, $candidate, 'uidgen keeper', $fault->{u1});
		if ($done)
		{
			$fault->{crashed} = $candidate->name;
			return $candidate->name . ": $done";
		}
	}
	return 'skipped: no keeper runs';
}

sub kill_postmaster
{
	my ($fleet, $fault, $node) = @_;
	my @pids = Nemesis::Fleet::node_pids($node);
	return 'skipped: not running' unless @pids;
	kill 'KILL', $pids[0];
	# Its children leave when they see it gone; a new postmaster cannot
	# start while they hold the old shared memory.
	my $deadline = time + 30;
	Time::HiRes::sleep(0.2) while time < $deadline && grep { kill 0, $_ } @pids[ 1 .. $#pids ];
	my @left = grep { kill 0, $_ } @pids[ 1 .. $#pids ];
	my $note = "SIGKILL to postmaster $pids[0]";
	if (@left)
	{
		$note .= "; HUNG: processes @left still ran 30 s after their postmaster died, killed";
		$fleet->{hung}++;
		kill 'KILL', @left;
		Time::HiRes::sleep(0.5);
	}
	return "$note; " . restart_member($fleet, $node);
}

sub immediate_restart
{
	my ($fleet, $fault, $node) = @_;
	$node->stop('immediate');
	return 'immediate shutdown; ' . restart_member($fleet, $node);
}

# A known gap: the agent alone ends by SIGTERM, and the postmaster starts
# another (bgw_restart_time).
sub agent_sigterm
{
	my ($fleet, $fault, $node) = @_;
	my ($pid) = pids_of($node, 'uidgen registry agent');
	return 'skipped: no agent' unless $pid;
	kill 'TERM', $pid;
	my $deadline = time + 30;
	while (time < $deadline)
	{
		my ($new) = pids_of($node, 'uidgen registry agent');
		return "SIGTERM to agent $pid; agent $new took over" if $new && $new != $pid;
		Time::HiRes::sleep(0.2);
	}
	return "SIGTERM to agent $pid; NO AGENT CAME BACK within 30 s";
}

# ---- a member's clock -------------------------------------------------------

my @STEPS = (5, -5, 60, -60, 600, -600, 3600, -3600);

# How far node's backends' clock is from the real one, in seconds.
sub backend_offset
{
	my ($node) = @_;
	my $before = Time::HiRes::time();
	my $server = q1($node, 'postgres', 'SELECT extract(epoch FROM clock_timestamp())') // return undef;
	my $after = Time::HiRes::time();
	return $server - ($before + $after) / 2;
}

# A known gap: the member's clock steps by seconds to hours and back.
# Whether the step reached each kind of process is checked from inside it:
# backends by their clock_timestamp(); the agent by its clock check against
# the registry (a step beyond the registry's clock bound of 1 s must fail
# it); a keeper started after the step by the started_at it took from its
# clock.  A process it did not reach is reported so.
sub clock_step
{
	my ($fleet, $fault, $node) = @_;
	my $step = pick($fault->{u2}, @STEPS);
	my $hold = 3 + int($fault->{u1} * 8);
	return 'skipped: the run does not fake clocks' unless $fleet->{fake_clock};
	my ($keeper_before) = pids_of($node, 'uidgen keeper');
	my $stepped_at = Time::HiRes::time();
	Nemesis::Fleet::set_clock($node, sprintf('%+d', $step));
	my @notes = ("clock ${step}s for ${hold}s");

	# libfaketime reads the file again after at most a second.
	my ($offset, $reached);
	my $deadline = time + 5;
	while (time < $deadline)
	{
		$offset = backend_offset($node);
		$reached = defined $offset && abs($offset - $step) < 2;
		last if $reached;
		Time::HiRes::sleep(0.3);
	}
	push @notes, 'backends: ' . ($reached ? 'reached' : sprintf('NOT REACHED (offset %s)', $offset // '?'));
	my $agent = Nemesis::Fleet::poll($node, 'postgres',
		q{SELECT bool_or(error LIKE '%clock%') FROM uidgen.registry_status}, $hold);
	push @notes, 'agent: ' . ($agent ? 'reached (its clock check failed)' : "NOT REACHED (its clock check passed for ${hold}s)");
	$fault->{clock_reach} = { backends => $reached, agent => $agent };
	my ($keeper) = pids_of($node, 'uidgen keeper');
	if ($keeper && (!$keeper_before || $keeper != $keeper_before))
	{
		my $started = q1($node, 'app1', 'SELECT extract(epoch FROM started_at) FROM uidgen.server_generator')
		  // q1($node, 'app2', 'SELECT extract(epoch FROM started_at) FROM uidgen.server_generator');
		my $keeper_reached = defined $started && $started ne '' && abs($started - $stepped_at - $step) < abs($step) / 2;
		push @notes, 'new keeper: ' . ($keeper_reached ? 'reached' : 'NOT REACHED');
		$fault->{clock_reach}{keeper} = $keeper_reached;
	}
	else
	{
		push @notes, 'keeper: none started during the step (not checked)';
	}
	my $left = $stepped_at + $hold - Time::HiRes::time();
	Time::HiRes::sleep($left) if $left > 0;
	Nemesis::Fleet::set_clock($node, '+0');
	$deadline = time + 5;
	Time::HiRes::sleep(0.3) while time < $deadline && abs(backend_offset($node) // 99) > 2;
	push @notes, 'clock back';
	return join('; ', @notes);
}

# ---- reloads that keep one ID space --------------------------------------------

sub reload_scope
{
	my ($fleet, $fault, $node) = @_;
	$node->{nemesis_scope} = $node->{nemesis_scope} eq 'server' ? 'backend' : 'server';
	$node->adjust_conf('postgresql.conf', 'uidgen.scope', "'$node->{nemesis_scope}'");
	$node->reload;
	return "uidgen.scope = $node->{nemesis_scope}";
}

sub reload_registry_spelling
{
	my ($fleet, $fault, $node) = @_;
	$node->{nemesis_spelling} = 1 - $node->{nemesis_spelling};
	return "uidgen.registry = '" . $fleet->set_registry($node) . "'";
}

sub reload_max_borrow
{
	my ($fleet, $fault, $node) = @_;
	my $hold = 2 + int($fault->{u1} * 5);
	$node->adjust_conf('postgresql.conf', 'uidgen.max_borrow', "'$Nemesis::Fleet::OTHER_MAX_BORROW'");
	$node->reload;
	Time::HiRes::sleep($hold);
	$node->adjust_conf('postgresql.conf', 'uidgen.max_borrow', "'$Nemesis::Fleet::MAX_BORROW'");
	$node->reload;
	return "uidgen.max_borrow = $Nemesis::Fleet::OTHER_MAX_BORROW for ${hold}s, then $Nemesis::Fleet::MAX_BORROW";
}

# ---- copies started beside their originals -------------------------------------

# At most this many copies issue at once; the oldest is retired first.
my $MAX_COPIES = 2;

sub add_copy
{
	my ($fleet, $copy) = @_;
	push @{ $fleet->{temp} }, $copy;
	retire_copy($fleet, shift @{ $fleet->{temp} }) while @{ $fleet->{temp} } > $MAX_COPIES;
}

sub retire_copy
{
	my ($fleet, $copy) = @_;
	$fleet->read_floors;
	$fleet->stop_client($copy->{client});
	if ($copy->{node})
	{
		$fleet->{hung} += $fleet->stop_and_check($copy->{node});
		$copy->{node}{nemesis_gone} = 1;
	}
}

sub template_clone
{
	my ($fleet, $fault, $node) = @_;
	my $clone = 'clone' . ++$fleet->{serial};
	my $template = $Nemesis::Fleet::TEMPLATE;
	# A template must have no session, the keeper's included.
	q1($node, 'postgres', "ALTER DATABASE $template ALLOW_CONNECTIONS false");
	my ($ok, $err);
	for (1 .. 20)
	{
		q1($node, 'postgres', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$template'");
		($ok, undef, $err) = Nemesis::Fleet::query($node, 'postgres', "CREATE DATABASE $clone TEMPLATE $template");
		last if $ok;
		Time::HiRes::sleep(0.3);
	}
	q1($node, 'postgres', "ALTER DATABASE $template ALLOW_CONNECTIONS true");
	return "CLONE FAILED: $err" unless $ok;
	add_copy($fleet, { client => $fleet->start_client($node, $clone) });
	return "$clone from $template, with a client";
}

sub standby_promote
{
	my ($fleet, $fault, $node) = @_;
	my $standby = $fleet->new_standby($node, $node->name . '_promoted');
	$standby->promote;
	Nemesis::Fleet::poll($standby, 'postgres', 'SELECT NOT pg_is_in_recovery()', 60)
	  or return 'THE STANDBY WAS NOT PROMOTED';
	my $db = pick($fault->{u1}, @Nemesis::Fleet::DATABASES);
	# A copy of the member's configuration: credential_rotation rewrites it too.
	$standby->{nemesis_origin} = $node->name;
	add_copy($fleet, { node => $standby, client => $fleet->start_client($standby, $db) });
	return $standby->name . " promoted beside " . $node->name . ", with a client on $db";
}

# ---- a member cut off from the registry ------------------------------------------

sub proxy_cut
{
	my ($fleet, $fault, $node) = @_;
	my $mode = $fault->{kind} eq 'proxy_drop' ? 'drop' : 'stall';
	my $seconds = sprintf('%.1f', $Nemesis::Fleet::LEASE_TTL * (0.3 + 1.7 * $fault->{u1}));
	my $proxy = $fleet->{proxies}{ $node->name };
	Nemesis::Fleet::set_proxy_mode($proxy, $mode);
	Time::HiRes::sleep($seconds);
	Nemesis::Fleet::set_proxy_mode($proxy, 'pass');
	return "$mode for ${seconds}s (lease TTL ${Nemesis::Fleet::LEASE_TTL}s)";
}

# ---- the registry ----------------------------------------------------------------

sub registry_restart
{
	my ($fleet, $fault) = @_;
	$fleet->{registry}->restart;
	return 'restarted ' . $fleet->{registry}->name;
}

sub registry_pause
{
	my ($fleet, $fault) = @_;
	my $ttl = $Nemesis::Fleet::LEASE_TTL;
	my $seconds = $fault->{kind} eq 'registry_pause_past'
	  ? sprintf('%.1f', $ttl * (1.2 + 0.8 * $fault->{u1}))
	  : sprintf('%.1f', $ttl * (0.2 + 0.5 * $fault->{u1}));
	my @pids = Nemesis::Fleet::node_pids($fleet->{registry});
	kill 'STOP', @pids;
	Time::HiRes::sleep($seconds);
	kill 'CONT', @pids;
	return 'SIGSTOP to ' . scalar(@pids) . " processes of " . $fleet->{registry}->name
	  . " for ${seconds}s (lease TTL ${ttl}s), SIGCONT";
}

# The standby of the registry, again from the new primary.
sub new_registry_standby
{
	my ($fleet) = @_;
	my $old = $fleet->{registry_standby};
	if ($old && !$old->{nemesis_gone})
	{
		$old->stop('immediate');
		$old->{nemesis_gone} = 1;
	}
	$fleet->{registry_standby} = $fleet->new_standby($fleet->{registry}, 'registry_standby');
}

sub registry_restore
{
	my ($fleet, $fault) = @_;
	my $old = $fleet->{registry};
	$old->stop('immediate');
	$old->{nemesis_gone} = 1;
	my ($source, $backup) = @{ $fleet->{registry_backup} };
	my $node = PostgreSQL::Test::Cluster->new('registry_restored_' . ++$fleet->{serial});
	$node->init_from_backup($source, $backup);
	$node->start;
	# The backup has the member roles' passwords of then: an operator's
	# restore gives them today's.
	$fleet->set_passwords($node);
	$fleet->registry_moved($node);
	new_registry_standby($fleet);
	return $old->name . ' stopped (immediate); ' . $node->name . " restored from backup $backup, a new standby";
}

sub registry_failover
{
	my ($fleet, $fault) = @_;
	my $old = $fleet->{registry};
	my $standby = $fleet->{registry_standby};
	$old->stop('immediate');
	$old->{nemesis_gone} = 1;
	$standby->promote;
	Nemesis::Fleet::poll($standby, 'postgres', 'SELECT NOT pg_is_in_recovery()', 60)
	  or return 'THE REGISTRY STANDBY WAS NOT PROMOTED';
	$fleet->{registry_standby} = undef;
	$fleet->registry_moved($standby);
	new_registry_standby($fleet);
	return $old->name . ' stopped (immediate), ' . $standby->name . ' promoted, a new standby';
}

# A planned move of the fleet to another registry, as docs/reference.md
# prescribes: a new registry server, uid_registry_export(its identity) at
# the old one (which seals it), uid_registry_import() of the result at the
# new one, the members' proxies pointed at it (a DNS switch: uidgen.registry
# unchanged), uid_registry_move() in every member database, and the old
# registry stopped.  Members issue under their leases meanwhile.
sub registry_migration
{
	my ($fleet, $fault) = @_;
	my $old = $fleet->{registry};
	my $new = $fleet->new_registry('registry_migrated_' . ++$fleet->{serial});
	my $failed = $fleet->prepare_registry($new,
		map { ($_->{nemesis_role} => $_->{nemesis_password}) } @{ $fleet->{members} });
	return "THE NEW REGISTRY FAILED: $failed" if $failed;
	my $id = q1($new, 'registry', 'SELECT registry_id FROM uidgen.registry_identity')
	  // return 'THE NEW REGISTRY HAS NO IDENTITY';
	my ($ok, $doc, $err) = Nemesis::Fleet::query($old, 'registry', "SELECT uid_registry_export('$id')");
	return "EXPORT FAILED: $err" unless $ok;
	$doc =~ s/'/''/g;
	($ok, undef, $err) = Nemesis::Fleet::query($new, 'registry', "SELECT uid_registry_import('$doc')");
	return "IMPORT FAILED: $err" unless $ok;
	$fleet->registry_moved($new);
	my @moved;
	for my $node (@{ $fleet->{members} })
	{
		my $dbs = q1($node, 'postgres', q{SELECT string_agg(datname, ' ') FROM pg_database WHERE datallowconn}) // '';
		for my $db (split ' ', $dbs)
		{
			next unless q1($node, $db, q{SELECT count(*) FROM pg_extension WHERE extname = 'uidgen'});
			my ($moved, $id_now, $why) = Nemesis::Fleet::query($node, $db, 'SELECT uid_registry_move()');
			push @moved, $node->name . "/$db"
			  . (!$moved ? " (FAILED: $why)" : $id_now eq $id ? '' : " (STILL AT $id_now)");
		}
	}
	$old->stop('fast');
	$old->{nemesis_gone} = 1;
	new_registry_standby($fleet);
	# A restore from now on brings back this registry: a backup of it, taken
	# once it holds the members' leases.
	my $backup = 'after_migration_' . $fleet->{serial};
	Nemesis::Fleet::poll($new, 'registry', 'SELECT count(*) > 0 FROM uidgen.worker_block_lease l '
		  . 'JOIN uidgen.server_life s USING (life)', 60);
	$new->backup($backup);
	$fleet->{registry_backup} = [ $new, $backup ];
	return 'moved to ' . $new->name . " ($id) by export and import; uid_registry_move() in: @moved; "
	  . $old->name . " stopped; backup $backup for later restores";
}

# A known gap: the registry's extension dropped and created again while
# members hold leases.
sub registry_recreate
{
	my ($fleet, $fault) = @_;
	my ($ok, undef, $err) = Nemesis::Fleet::query($fleet->{registry}, 'registry',
		"SET lock_timeout = '10s'; DROP EXTENSION uidgen CASCADE; CREATE EXTENSION uidgen; "
		. "SELECT uid_registry_configure(lease_ttl => '${Nemesis::Fleet::LEASE_TTL}s', "
		. "max_borrow => '$Nemesis::Fleet::MAX_BORROW')");
	return "RECREATE FAILED: $err" unless $ok;
	# The members refuse the new identity (08004) until each of their
	# databases moves to it: the documented act for a registry lost for
	# good, which nothing could export (INV-20, ASM-9).  No
	# uid_registry_start_fleet(): the new registry waits out the old one's
	# holders.
	my @moved;
	for my $node (@{ $fleet->{members} })
	{
		my $dbs = q1($node, 'postgres', q{SELECT string_agg(datname, ' ') FROM pg_database WHERE datallowconn}) // '';
		for my $db (split ' ', $dbs)
		{
			next unless q1($node, $db, q{SELECT count(*) FROM pg_extension WHERE extname = 'uidgen'});
			my ($moved) = Nemesis::Fleet::query($node, $db, 'SELECT uid_registry_move(old_registry_lost => true)');
			push @moved, $node->name . "/$db" if $moved;
		}
	}
	# A restore from now on brings back this registry, not the one the
	# members left: a backup of it, taken once it holds their leases.
	my $registry = $fleet->{registry};
	my $backup = 'after_recreate_' . ++$fleet->{serial};
	Nemesis::Fleet::poll($registry, 'registry', 'SELECT count(*) > 0 FROM uidgen.worker_block', 60);
	$registry->backup($backup);
	$fleet->{registry_backup} = [ $registry, $backup ];
	return 'the extension dropped and created again in the registry database; moved: ' . join(' ', @moved)
	  . "; backup $backup for later restores";
}

1;
