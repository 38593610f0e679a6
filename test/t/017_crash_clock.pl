# A crash, then a clock that reads earlier than the IDs issued before it (a
# host whose clock comes up wrong until NTP steps it), or a clock that was
# ahead before the crash and is corrected after it.  The workers the crash
# leaked must be reused only above every ID they issued: their floor comes
# from the time reservation, never from the clock alone.  In 1.0 the first
# scenario stored 2,000,000 duplicates.
#
# Each scenario: a writer inserts for a few seconds; its backend is killed
# (crash restart) or the server shut down immediately; the server starts
# again with the clock moved; new sessions churn through the load client,
# which inserts every ID into the same table, so that its primary key checks
# each one against every ID from before the crash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

set_fake_clock('+0');
my $node = new_uidgen_node('crash_clock', fake_clock => 1,
	conf => ["uidgen.max_borrow = '2s'", 'restart_after_crash = on']);
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), scenario int)');

# The default layout: time above 22 bits of worker and sequence.
my $time_shift = 22;

sub start_writer
{
	my ($scenario) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
		  "DO \$\$ BEGIN LOOP INSERT INTO t (scenario) SELECT $scenario FROM generate_series(1, 10000); COMMIT; END LOOP; END \$\$" ],
		'>', \$out, '2>', \$err);
	$node->poll_query_until('postgres', "SELECT count(*) >= 150000 FROM t WHERE scenario = $scenario")
	  or die "the writer of scenario $scenario did not get going";
	return $h;
}

# Workers left active by the crash, with the latest time unit each issued.
sub leaked_workers
{
	my %leaked = map { split /\|/ } split /\n/, $node->safe_psql('postgres', qq{
		SELECT w.id, coalesce((SELECT max(id) >> $time_shift FROM t WHERE uid_worker_id(t.id) = w.id), -1)
		  FROM uidgen.worker_node w WHERE w.status = 'active'});
	return \%leaked;
}

# Each leaked worker is either still unreleased or released no lower than what it issued.
sub check_floors
{
	my ($name, $leaked) = @_;
	my @wrong;
	for my $worker (sort { $a <=> $b } keys %$leaked)
	{
		my ($status, $last_time) = split /\|/, $node->safe_psql('postgres',
			"SELECT status, coalesce(last_time, -1) FROM uidgen.worker_node WHERE id = $worker");
		push @wrong, "worker $worker: $status at $last_time, issued up to $leaked->{$worker}"
		  if $status eq 'released' && $last_time < $leaked->{$worker};
	}
	is(join('; ', @wrong), '', "$name: no leaked worker is reusable below what it issued");
}

sub scenario
{
	my (%s) = @_;
	my $n = $s{number};

	set_fake_clock($s{before});
	my $writer = start_writer($n);
	if ($s{stop} eq 'kill')
	{
		my $victim = $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE query LIKE 'DO %'");
		kill_and_wait_for_restart($node, $victim);
		$writer->finish;
		$node->stop('fast');
	}
	else
	{
		$node->stop('immediate');
		$writer->finish;
	}
	set_fake_clock($s{after});
	start_with_fake_clock($node);

	my $offset = (clock_offset($node))[1];
	my $leaked = leaked_workers();
	cmp_ok(scalar(keys %$leaked), '>', 0,
		sprintf("$s{name}: %d workers leaked; the clock now reads %+.0f s", scalar(keys %$leaked), $offset));

	# Released explicitly with no margin at all, or by the registrations of the load below.
	if ($s{reclaim})
	{
		$node->safe_psql('postgres', "SELECT uid_reclaim_workers('0')");
		check_floors("$s{name}, uid_reclaim_workers('0')", $leaked);
	}

	my ($code, $f) = run_load($node, '--mode', 'churn', '--method', 'insert', '--table', 't',
		'--connections', '4', '--ids', '25000', '--per-connection', '250', '--fetch', '250');
	is($code, 0, "$s{name}: the load client found nothing wrong, nor did the primary key");
	is($f->{duplicates}, '0', "$s{name}: no duplicate among the $f->{ids} IDs after the restart");
	check_floors("$s{name}, after " . ($f->{connections} // '?') . ' registrations', $leaked);
}

scenario(number => 1, name => 'SIGKILL, then the clock 4 s back', before => '+0', after => '-4', stop => 'kill');
scenario(number => 2, name => 'SIGKILL, then the clock 30 s back', before => '+0', after => '-30', stop => 'kill',
	reclaim => 1);
scenario(number => 3, name => 'immediate shutdown, then the clock 5 min back', before => '+0', after => '-300',
	stop => 'immediate');
scenario(number => 4, name => 'clock 1 h ahead, SIGKILL, then corrected', before => '+3600', after => '+0',
	stop => 'kill', reclaim => 1);

my ($rows, $distinct) = split /\|/, $node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t');
is($rows, $distinct, "no duplicate among all $rows IDs of the four scenarios");
diag("crash and clock: $rows IDs stored, " . ($rows - $distinct) . ' duplicates');

$node->stop;
done_testing();
