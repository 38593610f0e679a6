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

our @EXPORT = qw(new_uidgen_node worker_rows load_client run_load json_field);

# A started node with uidgen created in database postgres.  Extra lines go
# to postgresql.conf.
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
	$node->start;
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
	my $dsn = $node->connstr('postgres');
	my @cmd = (load_client(), '--dsn', $dsn, '--json', @options);

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

1;
