# UidgenTest: shared set-up for uidgen's TAP tests.
#
# The tests run on PostgreSQL 15, 17 and 18 (make test-all), each with that
# server's own PostgreSQL::Test modules.  15's API is a subset of 17's and
# 18's, with the same signatures for everything the tests use
# (background_psql, query/query_safe, connstr, poll_query_until, pgbench,
# log_contains, wait_for_catchup, stop): write tests against 15's API.  Not on
# 15: wait_for_event, log_content, advance_wal, wait_for_replay_catchup (17),
# check_extension, issues_sql_unlike, background_psql(connstr => ...),
# stop(timeout => ...) (18).  initdb enables data checksums from 18 on.
package UidgenTest;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Exporter 'import';

our @EXPORT = qw(new_uidgen_node worker_rows load_client run_load json_field
	set_fake_clock start_with_fake_clock kill_and_wait_for_restart);

# A started node with uidgen created in database postgres.  Extra lines go
# to postgresql.conf; fake_clock => 1 starts it under set_fake_clock's clock.
sub new_uidgen_node
{
	my ($name, %params) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(%{ $params{init} // {} });
	$node->append_conf('postgresql.conf', join("\n",
		"max_connections = 60",
		"max_prepared_transactions = 10",
		"log_min_messages = warning",
		@{ $params{conf} // [] }) . "\n");
	$params{fake_clock} ? start_with_fake_clock($node) : $node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION uidgen');
	return $node;
}

# The registry as "id|status|pid|last_time" lines, for messages.
sub worker_rows
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		"SELECT id, status, pid, last_time FROM uidgen.worker_node ORDER BY id");
}

# The path of the libpq load client, built by make test (build/uidgen_load).
sub load_client
{
	my $path = $ENV{UIDGEN_LOAD} // 'build/uidgen_load';
	return $path;
}

# Runs the load client against node with the given options plus --json;
# returns (exit code, parsed figures as a hash, stdout, stderr).
sub run_load
{
	my ($node, @options) = @_;
	my ($stdout, $stderr) = ('', '');
	# Database postgres, unless the options name a --dsn.
	my @dsn = (grep { $_ eq '--dsn' } @options) ? () : ('--dsn', $node->connstr('postgres'));
	my @cmd = (load_client(), @dsn, '--json', @options);

	IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr);
	my $code = $? >> 8;
	my %figures;
	for my $line (split /\n/, $stdout)
	{
		next unless $line =~ /^\{/;
		while ($line =~ /"(\w+)":\s*("?)([^",}]*)\2/g)
		{
			$figures{$1} = $3;
		}
	}
	note("load @options: exit $code\n$stdout$stderr");
	return ($code, \%figures, $stdout, $stderr);
}

sub json_field
{
	my ($figures, $key) = @_;
	return $figures->{$key};
}

# Kills a backend with SIGKILL and waits until the server has gone through
# its crash restart and accepts connections again.  (A query right after
# the kill could still reach the server before the restart begins.)
sub kill_and_wait_for_restart
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	$node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
}

# A server clock moved by libfaketime: start_with_fake_clock starts a node
# under it, set_fake_clock moves it ('+0', '-30', '+3600': seconds from the
# real time), at once, for every process of that node.
my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
my $clock_file;

sub set_fake_clock
{
	my ($offset) = @_;
	$clock_file //= PostgreSQL::Test::Utils::tempdir() . '/faketime.rc';
	open my $f, '>', $clock_file or die "cannot write $clock_file: $!";
	print $f "$offset\n";
	close $f;
}

sub start_with_fake_clock
{
	my ($node) = @_;
	BAIL_OUT("libfaketime is missing: apt-get install faketime") unless -e $libfaketime;
	set_fake_clock('+0') unless defined $clock_file;
	local $ENV{LD_PRELOAD} = $libfaketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock_file;
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	$node->start;
}

1;
