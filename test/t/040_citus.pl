# One ID space across a Citus cluster: a coordinator and two workers, each a
# member of one uidgen registry, insert at once into a distributed table, a
# reference table and local tables, through the coordinator and directly on
# the workers, in single-row transactions and in multi-node transactions that
# Citus commits with two-phase commit; in scope backend, then again after a
# restart in scope server.  No ID is issued twice, every row is there, each
# server's IDs decode to workers of its own blocks, and IDs are time-ordered
# across servers: WHERE id BETWEEN uid_min(t1) AND uid_max(t2) selects
# exactly the rows inserted between t1 and t2.
#
# Where Citus evaluates DEFAULT uid_next() (Citus 13.2 source, and EXPLAIN
# VERBOSE of the statements below): the rewriter puts the column default into
# the INSERT's target list before Citus plans it, and then
#  - INSERT ... VALUES, and INSERT ... SELECT from no distributed table (here
#    generate_series, "pull to coordinator"): the node that plans the
#    statement evaluates it, before it sends the rows to the shards
#    (CitusBeginModifyScan -> ExecuteCoordinatorEvaluableExpressions,
#    executor/citus_custom_scan.c): the distribution column must be known to
#    route a row, and a reference table's row must be the same in every
#    placement.  That node is the coordinator, or a worker that the statement
#    was sent to (workers have the metadata and plan like a coordinator).
#  - INSERT ... SELECT from a distributed table ("repartition"): Citus moves
#    the default into the SELECT's target list
#    (ReorderInsertSelectTargetLists, planner/insert_select_planner.c) and
#    pushes that SELECT down to the source shards: uid_next() runs on the
#    workers that hold them, in the backends of Citus's own connections,
#    inside the distributed transaction that Citus then commits with two-phase
#    commit (PREPARE TRANSACTION on those backends).  The rows are then
#    repartitioned to the target shards, wherever they are.  In scope
#    backend such a backend would claim its worker in that transaction:
#    PREPARE of a transaction that made a session's first claim is refused
#    (0A000), with a registry as without one (its exit release would wait
#    for the prepared transaction), so such a statement fails on a Citus
#    connection whose backend has no committed claim yet.  A TODO below,
#    until claims commit in transactions of their own; in scope server (the
#    keeper claims) they go through.
# The shards themselves carry DEFAULT uid_next() as well (Citus deparses
# non-sequence defaults into the shard DDL, deparser/citus_ruleutils.c), so a
# write into a shard table on a worker evaluates it on that worker.  So a row
# stored on one worker may have an ID of the coordinator, of that worker or
# of the other one, and all of them must be unique: hence the registry.
# Without one each server numbers its workers from 1 and the servers repeat
# each other's IDs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $coordinator = PostgreSQL::Test::Cluster->new('coordinator');
plan skip_all => 'Citus is not installed in this server (make test-all PG_SOURCES=... CITUS_SOURCE=... '
  . 'builds it for PostgreSQL 17)'
  unless -e $coordinator->config_data('--sharedir') . '/extension/citus.control';

# max_borrow 0 on every server: the window by ID below holds only for IDs
# whose time is their insert's, and a worker may start above a floor a
# little ahead of the clock (a join's, a released private worker's), which
# a generator that may borrow issues at at once; with 0 it waits for it.
my @no_borrow = ("uidgen.max_borrow = 0");
my $registry = new_registry_node('registry', max_borrow => '0s', conf => \@no_borrow);
# The test framework copies one initdb for every node, so the coordinator
# and both workers share a system identifier, and so the limit of blocks
# the lives of one system hold (uid_registry_configure(max_system_blocks),
# meant for a crash loop): three servers of short-lived scope-backend
# sessions on a loaded machine may reach the default 16.
$registry->safe_psql('registry', 'SELECT uid_registry_configure(max_system_blocks => 64)');

# Citus must come first in shared_preload_libraries; registry_conf's line
# names uidgen alone.
my @member_conf = map { s/^shared_preload_libraries = '(.*)'$/shared_preload_libraries = 'citus,$1'/r }
  registry_conf($registry);

sub start_citus_node
{
	my ($node) = @_;
	$node->init;
	$node->append_conf('postgresql.conf', join("\n",
		'max_connections = 100',
		# A multi-node transaction prepares one transaction for each
		# connection it wrote over: at most the pool size a worker.
		'max_prepared_transactions = 100',
		'citus.max_adaptive_executor_pool_size = 2',
		# Recovery deletes the records of committed two-phase transactions
		# from pg_dist_transaction: keep them, to count them.
		'citus.recover_2pc_interval = -1',
		'log_min_messages = warning',
		@no_borrow, @member_conf) . "\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION uidgen;');
	wait_for_registry($node);
	return $node;
}

start_citus_node($coordinator);
my $w1 = start_citus_node(PostgreSQL::Test::Cluster->new('worker1'));
my $w2 = start_citus_node(PostgreSQL::Test::Cluster->new('worker2'));
my %servers = (coordinator => $coordinator, w1 => $w1, w2 => $w2);
my @names = sort keys %servers;

$coordinator->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coordinator->host . "', " . $coordinator->port . ')');
$coordinator->safe_psql('postgres', "SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for ($w1, $w2);
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'), '2',
	'two Citus workers');

# Four shards, two a worker: a few rows of one statement reach both workers.
$coordinator->safe_psql('postgres', q{
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), origin text NOT NULL, phase text NOT NULL,
	                     seq int);
	SELECT create_distributed_table('events', 'id', shard_count => 4);
	CREATE TABLE tags (id bigint PRIMARY KEY DEFAULT uid_next(), origin text NOT NULL, phase text NOT NULL);
	SELECT create_reference_table('tags');
});
for my $name (@names)
{
	$servers{$name}->safe_psql('postgres',
		'CREATE TABLE local_ids (id bigint PRIMARY KEY DEFAULT uid_next(), origin text NOT NULL, phase text NOT NULL)');
}

# What each session of a round does, on each server at once:
#  load: single-row inserts into events and into a local table; on w2 a new
#        connection each time, so that the servers take workers all along;
#  2pc:  transactions that write to shards on both workers (an INSERT ...
#        SELECT from a function, 10 rows) and to the reference table, which
#        is on every node: Citus commits them with two-phase commit;
#  copy: INSERT ... SELECT of five seed rows of events, from both workers,
#        whose IDs the workers make in transactions that Citus prepares (see
#        the top).
# Rows per transaction and table of each kind; events and local_ids have
# the kind as phase.
my %kinds = (
	load => { clients => 2, transactions => 150, events => 1, local_ids => 1, tags => 0 },
	'2pc' => { clients => 1, transactions => 40, events => 10, local_ids => 0, tags => 1 },
	copy => { clients => 1, transactions => 40, events => 5, local_ids => 0, tags => 0 });
my $dir = PostgreSQL::Test::Utils::tempdir();

# The IDs of every round, for the check across rounds.
my @all_ids;

round('backend');

# The same after a restart of the three servers in scope server: new server
# lives, new blocks, and the keeper claims the workers.
for my $node ($coordinator, $w1, $w2)
{
	$node->append_conf('postgresql.conf', "uidgen.scope = 'server'\n");
	$node->restart;
	wait_for_registry($node);
}
round('server');

my $total = 0;
for my $list (@all_ids)
{
	$total += grep { $_ ne '' } split /\n/, $list;
}
is(duplicate_ids(@all_ids), 0, "both rounds: no ID twice among $total");

done_testing();

# A round: empty tables, everyone at once, then a window of time, and the
# checks.
sub round
{
	my ($scope) = @_;

	$coordinator->safe_psql('postgres', q{
		TRUNCATE events, tags;
		INSERT INTO events (origin, phase, seq) SELECT 'coordinator', 'seed', g FROM generate_series(1, 100) g;
	});
	$servers{$_}->safe_psql('postgres', 'TRUNCATE local_ids') for @names;

	# The seed rows that INSERT ... SELECT copies: three stored on one
	# worker, two on the other, so that both make IDs for it.
	my %seed_port = split /[|\n]/, $coordinator->safe_psql('postgres', q{
		SELECT e.seq, s.nodeport FROM events e
		  JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('events', e.id)
		 WHERE e.phase = 'seed'});
	my @copied = grep { defined } (
		(grep { $seed_port{$_} == $w1->port } sort { $a <=> $b } keys %seed_port)[0 .. 2],
		(grep { $seed_port{$_} == $w2->port } sort { $a <=> $b } keys %seed_port)[0 .. 1]);
	is(scalar(@copied), 5, "$scope: seed rows to copy on both workers");
	my $copied = join(', ', @copied);

	my %prepared_before = map {
		($_ => $servers{$_}->safe_psql('postgres', 'SELECT count(*) FROM pg_dist_transaction'))
	} @names;
	my @runs;
	for my $name (@names)
	{
		my %sql = (
			load => qq{
INSERT INTO events (origin, phase) VALUES ('$name', 'load');
INSERT INTO local_ids (origin, phase) VALUES ('$name', 'load');
},
			'2pc' => qq{
BEGIN;
INSERT INTO events (origin, phase) SELECT '$name', '2pc' FROM generate_series(1, 10);
INSERT INTO tags (origin, phase) VALUES ('$name', '2pc');
COMMIT;
},
			copy => qq{
INSERT INTO events (origin, phase) SELECT '$name', 'copy' FROM events WHERE phase = 'seed' AND seq IN ($copied);
});
		for my $kind (sort keys %kinds)
		{
			my $file = "$dir/${scope}_${kind}_$name.sql";
			PostgreSQL::Test::Utils::append_to_file($file, $sql{$kind});
			# Prepared statements too: Citus must evaluate the default at
			# each execution of a cached plan, not once for the plan.
			my @options = ($kind eq 'load' && $name ne 'w2') ? ('--protocol=prepared') : ();
			push @options, '--connect' if $kind eq 'load' && $name eq 'w2';
			push @runs, start_pgbench($servers{$name}, $kind, join(' ', "$scope: $kind on $name", @options),
				$file, $kinds{$kind}{clients}, $kinds{$kind}{transactions}, @options);
		}
	}
	# Transactions committed, by server and kind.
	my %committed;
	for my $run (@runs)
	{
		local $TODO = $scope eq 'backend' && $run->{kind} eq 'copy'
		  ? 'scope backend: a Citus connection\'s first claim in a prepared transaction is refused' : undef;
		my ($name) = $run->{label} =~ / on (\S+)/;
		$committed{$name}{ $run->{kind} } += finish_pgbench($run);
	}

	for my $name (@names)
	{
		cmp_ok($servers{$name}->safe_psql('postgres', 'SELECT count(*) FROM pg_dist_transaction')
			  - $prepared_before{$name},
			'>=', $kinds{'2pc'}{transactions}, "$scope: $name committed its multi-node transactions with two-phase commit");
	}

	# ---- a window of time

	# Quiet before t1 and after t2, rows of phase "window" between them,
	# rows of "after" after t2.  With max_borrow 0 (above) no ID borrows
	# time: an ID's time is its insert's.
	my $insert_phase = sub {
		my ($phase) = @_;
		for my $name (@names)
		{
			$servers{$name}->safe_psql('postgres', qq{
				INSERT INTO events (origin, phase) SELECT '$name', '$phase' FROM generate_series(1, 50);
				INSERT INTO tags (origin, phase) SELECT '$name', '$phase' FROM generate_series(1, 5);
				INSERT INTO local_ids (origin, phase) SELECT '$name', '$phase' FROM generate_series(1, 20);
			});
		}
	};
	# 20 ms of quiet on each side of t1 and of t2 (one clock: the servers share
	# the host): waited for on the clock, not slept.
	my $quiet = sub {
		my $now = $coordinator->safe_psql('postgres', 'SELECT clock_timestamp()');
		wait_for_clock_past($coordinator, $now, '20 ms');
		my $t = $coordinator->safe_psql('postgres', 'SELECT clock_timestamp()');
		wait_for_clock_past($coordinator, $t, '20 ms');
		return $t;
	};
	my $t1 = $quiet->();
	$insert_phase->('window');
	my $t2 = $quiet->();
	$insert_phase->('after');

	# ---- every row, once

	my (%expected_events, %expected_tags, %expected_local);
	for my $name (@names)
	{
		for my $kind (keys %kinds)
		{
			my $transactions = $committed{$name}{$kind};
			$expected_events{"$name $kind"} = $kinds{$kind}{events} * $transactions
			  if $kinds{$kind}{events} && $transactions;
			$expected_tags{"$name $kind"} = $kinds{$kind}{tags} * $transactions if $kinds{$kind}{tags} && $transactions;
			$expected_local{"$name $kind"} = $kinds{$kind}{local_ids} * $transactions
			  if $kinds{$kind}{local_ids} && $transactions;
		}
		for my $phase ('window', 'after')
		{
			$expected_events{"$name $phase"} = 50;
			$expected_tags{"$name $phase"} = 5;
			$expected_local{"$name $phase"} = 20;
		}
	}
	$expected_events{'coordinator seed'} = 100;

	is(counts($coordinator, 'events'), as_counts(\%expected_events),
		"$scope: events: every committed row, through the coordinator");
	is(counts($w1, 'events'), as_counts(\%expected_events), "$scope: events: every committed row, through a worker");
	is(counts($coordinator, 'tags'), as_counts(\%expected_tags), "$scope: tags: every committed row");
	is(counts($w2, 'tags'), counts($coordinator, 'tags'), "$scope: tags: the same rows on another node");
	for my $name (@names)
	{
		is(counts($servers{$name}, 'local_ids'),
			as_counts({ map { /^\Q$name\E / ? ($_ => $expected_local{$_}) : () } keys %expected_local }),
			"$scope: local_ids on $name: every committed row");
	}

	my @ids = ($coordinator->safe_psql('postgres', 'SELECT id FROM events'),
		$coordinator->safe_psql('postgres', 'SELECT id FROM tags'),
		map { $servers{$_}->safe_psql('postgres', 'SELECT id FROM local_ids') } @names);
	push @all_ids, @ids;
	my $total = 0;
	$total += grep { $_ ne '' } split /\n/, $_ for @ids;
	my $expected_total = 0;
	$expected_total += $_ for values %expected_events, values %expected_tags, values %expected_local;
	is($total, $expected_total, "$scope: $expected_total IDs in all");
	is(duplicate_ids(@ids), 0, "$scope: no ID twice among the $total IDs of the three servers");

	# Each server's IDs decode to workers of the blocks its agent leased;
	# which server made an ID is where the default was evaluated (see the
	# top): the server the statement ran on (origin), but the workers
	# holding the seed rows for INSERT ... SELECT from events (phase copy),
	# never the coordinator.
	my %blocks = map {
		my $name = $_;
		($name => [ map { [ $_->{first_worker}, $_->{last_worker} ] }
			  grep { ($_->{first_worker} // '') =~ /^\d+$/ } registry_status($servers{$name}) ])
	} @names;
	my %workers = (
		events => $coordinator->safe_psql('postgres', 'SELECT DISTINCT origin, phase, uid_worker_id(id) FROM events'),
		tags => $coordinator->safe_psql('postgres', 'SELECT DISTINCT origin, phase, uid_worker_id(id) FROM tags'),
		local_ids => join("\n", map { $servers{$_}->safe_psql('postgres',
			'SELECT DISTINCT origin, phase, uid_worker_id(id) FROM local_ids') } @names));
	note("$scope: leased blocks: "
		  . join('; ', map { "$_ " . join(' ', map { "$_->[0]-$_->[1]" } @{ $blocks{$_} }) } @names));
	for my $table (sort keys %workers)
	{
		my %wrong;
		for my $row (split /\n/, $workers{$table})
		{
			my ($origin, $phase, $worker) = split /\|/, $row;
			my @makers = grep {
				grep { $worker >= $_->[0] && $worker <= $_->[1] } @{ $blocks{$_} }
			} @names;
			my $maker = @makers == 1 ? $makers[0] : @makers ? 'several servers' : 'no server';
			next if $phase eq 'copy' ? $maker =~ /^w[12]$/ : $maker eq $origin;
			$wrong{"$phase rows of $origin by $maker"} = 1;
		}
		is(join('; ', sort keys %wrong), '', "$scope: $table: every ID made by the server it should be");
	}

	# ---- the window, by ID

	my $window = "id BETWEEN uid_min('$t1') AND uid_max('$t2')";
	for my $check ([ $coordinator, 'events', 150 ], [ $coordinator, 'tags', 15 ], map { [ $servers{$_}, 'local_ids', 20 ] } @names)
	{
		my ($node, $table, $rows) = @$check;
		is($node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE $window") . ' '
			  . $node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE $window AND phase = 'window'"),
			"$rows $rows", "$scope: $table on " . $node->name
			  . ": the IDs between t1 and t2 select the $rows rows inserted between them, and no other");
	}
}

# "origin phase count" lines, sorted.
sub counts
{
	my ($node, $table) = @_;
	return join("\n", sort split /\n/, $node->safe_psql('postgres',
		"SELECT origin || ' ' || phase || ' ' || count(*) FROM $table GROUP BY origin, phase"));
}

sub as_counts
{
	my ($expected) = @_;
	return join("\n", map { "$_ $expected->{$_}" } sort keys %$expected);
}

# pgbench in the background: clients sessions of transactions each, from
# file; returns what finish_pgbench needs.
sub start_pgbench
{
	my ($node, $kind, $label, $file, $clients, $transactions, @options) = @_;
	my $run = { kind => $kind, label => $label, expected => $clients * $transactions, out => '', err => '' };
	$run->{handle} = IPC::Run::start(
		[ 'pgbench', '--no-vacuum', '--verbose-errors', "--client=$clients", "--jobs=$clients",
		  "--transactions=$transactions", @options, '--file', $file, $node->connstr('postgres') ],
		'>', \$run->{out}, '2>', \$run->{err});
	return $run;
}

# Waits for a run of start_pgbench; passes if every transaction committed (a
# duplicate key in events, tags or local_ids would have failed one).
# Returns how many did.
sub finish_pgbench
{
	my ($run) = @_;
	$run->{handle}->finish;
	my ($processed) = $run->{out} =~ m{processed: (\d+)/};
	ok($run->{handle}->result == 0 && ($processed // -1) == $run->{expected},
		"$run->{label}: $run->{expected} transactions committed")
	  or diag("pgbench: $run->{out}$run->{err}");
	return $processed // 0;
}
