#!/usr/bin/perl
# nemesis.pl: seeded random faults against a real fleet, every ID checked
# (docs/nemesis.md).  Run by scripts/nemesis.sh (make nemesis), which
# prepares the private PostgreSQL installation and the environment of
# PostgreSQL::Test::Cluster.
#
#   nemesis.pl --seed N --minutes M --faults KINDS --out DIR --client PATH --top DIR
#              [--stall-shim PATH]
#
# Sets up the fleet (Nemesis::Fleet), draws the seed's schedule of faults
# (Nemesis::Faults), injects them one after another while the clients
# issue, runs the checker (Nemesis::Checker) after each, then heals
# everything, waits for every server to issue again, stops the fleet and
# checks once more.  DIR/history.txt is the history; the assertions at the
# end are TAP ("ok N - ..."), and the exit status is 0 only if all passed.
use strict;
use warnings;

my $console;
BEGIN
{
	# PostgreSQL::Test::Utils sends STDOUT and STDERR to its log: keep the
	# terminal for the progress lines.
	open($console, '>&', \*STDOUT) or die "cannot dup STDOUT: $!";
	$console->autoflush(1);
}

use FindBin;
use lib "$FindBin::Bin", "$FindBin::Bin/../perl";

use Getopt::Long;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

use Nemesis::Checker;
use Nemesis::Faults;
use Nemesis::Fleet;
use UidgenTest qw(stop_pgbouncer);

my %opt = (seed => 1, minutes => 3, faults => 'default');
GetOptions(\%opt, 'seed=i', 'minutes=f', 'faults=s', 'out=s', 'client=s', 'top=s', 'stall-shim=s')
  or die "bad options\n";
$opt{out} or die "--out is required\n";
$opt{client} && -x $opt{client} or die "--client must name nemesis_client\n";
$opt{top} //= "$FindBin::Bin/../..";

my @kinds = eval { Nemesis::Faults::select_kinds($opt{faults}) } or die $@;
my $started = Time::HiRes::time();
open my $history, '>', "$opt{out}/history.txt" or die "$opt{out}/history.txt: $!";
$history->autoflush(1);

sub say_line
{
	my $line = sprintf('T+%6.1f %s', Time::HiRes::time() - $started, join('', @_));
	print $console "$line\n";
	print $history "$line\n";
}

my @left_out = grep { !{ map { $_ => 1 } @kinds }->{$_} } sort keys %Nemesis::Faults::KNOWN_GAPS;
say_line("nemesis: seed $opt{seed}, $opt{minutes} minutes, faults: @kinds");
say_line("replay: make nemesis SEED=$opt{seed} MINUTES=$opt{minutes} FAULTS=$opt{faults}");
if (@left_out)
{
	say_line("left out, as known open gaps of the registry (FAULTS=all includes them): "
		. join('; ', map { "$_: $Nemesis::Faults::KNOWN_GAPS{$_}" } @left_out));
}
my @schedule = Nemesis::Faults::schedule($opt{seed}, $opt{minutes} * 60, @kinds);
say_line('schedule: ' . scalar(@schedule) . ' faults');
print $history "  planned at T0+$_->{at}s: " . Nemesis::Faults::describe($_) . "\n" for @schedule;

my $stall_shim;
if (grep { $_ eq 'slow_resolver' } @kinds)
{
	$stall_shim = $opt{'stall-shim'};
	die "slow_resolver needs --stall-shim (build/stall_getaddrinfo.so)\n" unless $stall_shim && -e $stall_shim;
}
my $fleet = Nemesis::Fleet->new(out => $opt{out}, client => $opt{client}, seed => $opt{seed},
	fake_clock => scalar(grep { $_ eq 'clock_step' } @kinds), stall_shim => $stall_shim, log => \&say_line);
$fleet->setup;
my $checker = Nemesis::Checker->new(tmpdir => $opt{out});
my %crashes;
my @done;
my $hung_clients = 0;

sub check_now
{
	my ($label) = @_;
	my $r = $checker->check(clients => $fleet->{clients}, layout => $fleet->{layout}, floors => $fleet->{floors},
		crashes => \%crashes, outside => $fleet->{outside}, faults => \@done);
	my $errors = 0;
	$errors += $_->{count} for values %{ $r->{errors} };
	say_line(sprintf('check %s: %d IDs (%d committed, %d rolled back, %d unknown), %d not covered, '
		. '%d duplicates, %d crash exception, %d bad, %d errors%s',
		$label, @$r{qw(ids committed rolled_back unknown uncovered duplicates crash_exception bad)}, $errors,
		$r->{outside} ? sprintf(', %d outside the fleet (%d collisions)', @$r{qw(outside outside_collisions)}) : ''));
	return $r;
}

# ---- the faults ----------------------------------------------------------------

my $t0 = Time::HiRes::time();
my $end = $t0 + $opt{minutes} * 60;
my $duplicates_so_far = 0;
say_line('load running; faults begin');
for my $fault (@schedule)
{
	my $wait = $t0 + $fault->{at} - Time::HiRes::time();
	Time::HiRes::sleep($wait) if $wait > 0;
	last if Time::HiRes::time() > $end;
	$fault->{started} = Time::HiRes::time();
	say_line('fault ' . Nemesis::Faults::describe($fault));
	my $notes = eval { Nemesis::Faults::inject($fleet, $fault) } // "HARNESS ERROR: $@";
	$fault->{ended} = Time::HiRes::time();
	$fault->{notes} = $notes;
	if ($Nemesis::Faults::KINDS{ $fault->{kind} }{crash} && $notes !~ /^skipped/)
	{
		my $node = $fault->{crashed} // $fleet->{members}[ $fault->{member} ]->name;
		push @{ $crashes{$node} }, $fault->{started};
	}
	push @done, $fault;
	say_line("  -> $notes");
	Nemesis::Fleet::poll($_, 'postgres', 'SELECT true', 60) or say_line('  ' . $_->name . ' DOES NOT ANSWER')
	  for @{ $fleet->{members} };
	$fleet->read_floors;
	my $r = check_now("after #$fault->{n}");
	if ($r->{duplicates} > $duplicates_so_far)
	{
		say_line('  NEW DUPLICATES: ' . ($r->{duplicates} - $duplicates_so_far) . " after #$fault->{n} $fault->{kind}");
		$duplicates_so_far = $r->{duplicates};
	}
}

# ---- heal, and every server issues again ----------------------------------------

say_line('faults stop: proxies pass, clocks right, registry running');
Nemesis::Fleet::set_proxy_mode($_, 'pass') for values %{ $fleet->{proxies} };
if ($fleet->{fake_clock})
{
	Nemesis::Fleet::set_clock($_, '+0') for @{ $fleet->{members} };
}
kill 'CONT', Nemesis::Fleet::node_pids($fleet->{registry});
my $healed = Time::HiRes::time();
my $ttl = $Nemesis::Fleet::LEASE_TTL;
my @not_issuing;
for my $pair ($fleet->member_databases)
{
	my ($node, $db) = @$pair;
	my $left = $healed + 3 * $ttl - Time::HiRes::time();
	if (Nemesis::Fleet::poll($node, $db, 'SELECT uid_next() > 0', $left > 1 ? $left : 1))
	{
		say_line(sprintf('%s/%s issues (%.1f s after the faults stopped)', $node->name, $db,
			Time::HiRes::time() - $healed));
	}
	else
	{
		push @not_issuing, $node->name . "/$db";
		say_line($node->name . "/$db ISSUES NO ID within three lease TTLs (" . 3 * $ttl . ' s)');
		# What it waits for, to tell a fault the check did not foresee from a bug.
		my ($ret, $out, $err) = $node->psql($db, q{
			SELECT 'membership: ' || registry_id || ' floor ' || join_floor FROM uidgen.membership;
			SELECT 'registry: ' || agent_status || ' block ' || coalesce(block::text, '-') || ' floor '
			       || coalesce(floor_delta::text, '-') || ' left ' || coalesce(lease_left_ms::text, '-')
			       || ' granted ' || coalesce(workers_granted::text, '-') || ' error ' || coalesce(error, '-')
			  FROM uidgen.registry_status;
			SELECT 'process: ' || backend_type || ' ' || coalesce(wait_event_type || '/' || wait_event, 'running')
			       || ' ' || coalesce(state, '') || ' ' || left(coalesce(query, ''), 60)
			  FROM pg_stat_activity WHERE backend_type LIKE 'uidgen%' OR datname = current_database();
			SELECT 'now unit: ' || ((extract(epoch FROM clock_timestamp()) * 1000)::bigint
			       - (extract(epoch FROM epoch) * 1000)::bigint) / CASE unit WHEN 'second' THEN 1000 ELSE 1 END
			  FROM uidgen.config;
			SELECT 'try: ' || uid_next();});
		say_line("  $_") for split /\n/, $out . ($err ? "\n$err" : '');
	}
}
# The clients run a little longer on the healed fleet.
Time::HiRes::sleep(5);

# ---- stop, and the last check ------------------------------------------------------

$fleet->read_floors;
for my $client (@{ $fleet->{clients} })
{
	next if $fleet->stop_client($client);
	$hung_clients++;
	say_line("HUNG: client $client->{name} still ran 30 s after SIGTERM");
}
stop_pgbouncer($fleet->{bouncer}) if $fleet->{bouncer};
my $hung = $fleet->{hung} // 0;
for my $node (@{ $fleet->{members} }, map({ $_->{node} // () } @{ $fleet->{temp} }),
	$fleet->{registry_standby} // (), $fleet->{registry})
{
	next if $node->{nemesis_gone};
	$hung += $fleet->stop_and_check($node);
}
$fleet->{proxies}{$_}{handle}->signal('TERM') for keys %{ $fleet->{proxies} };
$_->{handle}->finish for values %{ $fleet->{proxies} };

my $r = check_now('final');
my %by_kind;
$by_kind{ $_->{kind} }++ for @done;
say_line('faults injected: ' . join(', ', map { "$_ $by_kind{$_}" } sort keys %by_kind));
say_line($_) for @{ $r->{findings} };
say_line($_) for @{ $r->{crash_findings} // [] };
say_line("duplicates after $_: $r->{blame}{$_}") for sort keys %{ $r->{blame} };
for my $f (grep { $_->{clock_reach} } @done)
{
	say_line("clock step #$f->{n}: " . join(', ', map { "$_ " . ($f->{clock_reach}{$_} ? 'reached' : 'NOT reached') }
		sort keys %{ $f->{clock_reach} }));
}

# ---- failed statements after each fault ------------------------------------------

# The window of a fault: from its start to the next one's (the last one's:
# to the healing).  Every client error in it counts for the fault's kind,
# by SQLSTATE.  The window of a kind that promises no outage is undisturbed
# when its member's clients had no error in the 10 s before it and no fault
# of a kind that may stop issuing ended within two lease TTLs before it:
# there, every failed statement at its member is the kind's own.
sub node_of { my ($e) = @_; return $fleet->{clients}[ $e->[2] ]{node}->name; }
sub where { my ($kind) = @_; return $Nemesis::Faults::NO_OUTAGE{$kind} eq 'fleet' ? 'any member' : 'its member'; }
my @errors = sort { $a->[0] <=> $b->[0] } @{ $r->{error_list} };
my (%failed, %windows, %undisturbed, %failed_undisturbed, %expected_of_kind);
for my $k (0 .. $#done)
{
	my $f = $done[$k];
	my $kind = $f->{kind};
	my ($from, $to) = ($f->{started}, $k < $#done ? $done[ $k + 1 ]{started} : $healed);
	my $target = $Nemesis::Faults::KINDS{$kind}{on} eq 'member' ? $fleet->{members}[ $f->{member} ]->name : undef;
	my @in = grep { $_->[0] >= $from && $_->[0] < $to } @errors;
	$failed{$kind}{ $_->[1] }++ for @in;
	for my $e (@in)
	{
		$expected_of_kind{ $e->[1] }++
		  if $Nemesis::Faults::KIND_ERRORS{$kind}{ $e->[1] } && (!$target || node_of($e) eq $target);
	}
	my $scope = $Nemesis::Faults::NO_OUTAGE{$kind} or next;
	my $concerned = sub { $scope eq 'fleet' || node_of($_[0]) eq $target };
	$windows{$kind}++;
	next if grep { $_->[0] >= $from - 10 && $_->[0] < $from && $concerned->($_) } @errors;
	next if grep { !$Nemesis::Faults::NO_OUTAGE{ $_->{kind} } && $_->{ended} > $from - 2 * $ttl } @done[ 0 .. $k - 1 ];
	$undisturbed{$kind}++;
	$failed_undisturbed{$kind} += grep { $concerned->($_) } @in;
}
for my $kind (sort keys %by_kind)
{
	my $codes = $failed{$kind} // {};
	my $n = 0;
	$n += $_ for values %$codes;
	say_line(sprintf('failed statements after %s (%d faults): %d%s%s', $kind, $by_kind{$kind}, $n,
		$n ? ' (' . join(', ', map { "$_ x$codes->{$_}" } sort keys %$codes) . ')' : '',
		!$Nemesis::Faults::NO_OUTAGE{$kind} ? ''
		: sprintf('; no outage promised: %d at %s in the %d of %d windows no other fault disturbed',
			$failed_undisturbed{$kind} // 0, where($kind), $undisturbed{$kind} // 0, $windows{$kind})));
}
if ($r->{outside})
{
	say_line("IDs received outside the fleet (uidgen.registry unset): $r->{outside}; "
		. "IDs that collide with them: $r->{outside_collisions} (by nature, not counted as duplicates)");
	say_line("  $_") for @{ $r->{outside_findings} };
}

my $documented = Nemesis::Checker::documented_sqlstates($opt{top});
my (@undocumented, @timeouts);
for my $code (sort keys %{ $r->{errors} })
{
	my $e = $r->{errors}{$code};
	my ($expected_by) = grep { $Nemesis::Faults::KIND_ERRORS{$_}{$code} } sort keys %Nemesis::Faults::KIND_ERRORS;
	my $kind = $code eq 'timeout' ? 'A STATEMENT HUNG'
	  : $documented->{$code} ? 'documented'
	  : $Nemesis::Checker::FAULT_ERRORS{$code} ? "PostgreSQL's own: $Nemesis::Checker::FAULT_ERRORS{$code}"
	  : $expected_by && ($expected_of_kind{$code} // 0) == $e->{count}
	  ? "${expected_by}'s own, each in the window after one: $Nemesis::Faults::KIND_ERRORS{$expected_by}{$code}"
	  : 'UNDOCUMENTED';
	push @undocumented, $code if $kind eq 'UNDOCUMENTED';
	push @timeouts, $code if $code eq 'timeout';
	say_line("error $code x$e->{count} ($kind), e.g. $e->{client}: $e->{example}");
}

# ---- the assertions -----------------------------------------------------------------

cmp_ok($r->{ids}, '>', 0, "the clients received $r->{ids} IDs");
is($r->{duplicates}, 0, "no duplicate among $r->{ids} IDs ($r->{uncovered} not covered by a join)")
  or diag(join("\n", @{ $r->{findings} }));
is($r->{bad}, 0, 'every ID positive and decodable under the layout');
is(scalar(@undocumented), 0, 'every error a documented SQLSTATE or a fault\'s own')
  or diag("undocumented: @undocumented");
is(scalar(@timeouts), 0, 'no statement hung');
is($hung + $hung_clients, 0, 'no process still running 30 s after a fast stop');
# Over no window at all it would assert nothing: said so instead.
for my $kind (grep { $Nemesis::Faults::NO_OUTAGE{$_} } sort keys %by_kind)
{
	if (!$undisturbed{$kind})
	{
		say_line("$kind: not asserted, other faults disturbed each of its $windows{$kind} windows");
		next;
	}
	is($failed_undisturbed{$kind} // 0, 0, "$kind: no statement failed at " . where($kind) . ' after it '
		  . "($undisturbed{$kind} of $windows{$kind} windows undisturbed by other faults)");
}
is(scalar(@not_issuing), 0, 'every server issues again within three lease TTLs after the faults stop')
  or diag("not issuing: @not_issuing");
diag("$r->{crash_exception} duplicate IDs fall under PostgreSQL's crash exception (INV-1)")
  if $r->{crash_exception};
say_line(sprintf('done: %d faults, %d IDs, %d duplicates, %d crash exception; history in %s/history.txt',
	scalar(@done), $r->{ids}, $r->{duplicates}, $r->{crash_exception}, $opt{out}));
done_testing();

# The closing line of every test command of the project (.ci/run adds them up).
my $builder = Test::More->builder;
my $failed = grep { !$_ } $builder->summary;
print $console sprintf("%d passed, %d failed\n", $builder->current_test - $failed, $failed);
