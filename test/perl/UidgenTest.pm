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
use IPC::Run ();
use Time::HiRes ();
use File::Basename ();
use File::Spec;

our @EXPORT = qw(new_uidgen_node worker_rows load_client run_load json_field
	set_fake_clock start_with_fake_clock kill_and_wait_for_restart wait_for_crash_restart
	scope_conf set_scope server_generator borrow_private_worker start_sql_loop finish_sql_loops
	new_streaming_standby start_writers stop_writers worker_order_violations psql_error start_pgbouncer stop_pgbouncer
	new_registry_node registry_conf new_member_node registry_status wait_for_registry duplicate_ids
	start_pgbench finish_pgbench poll_for held_blocks start_uidgen_node
	clock_offset wait_for_clock_past start_gated_writer start_recording_writer recorded_failures start_timed_writer first_lease_after doc_sql_blocks replace_registry_with_backup new_member_role psql_as
	partman_days_query partman_partitions partman_default_rows partman_new_rows partman_days partman_day_offset);

# A started node with uidgen created in database postgres.  Extra lines go
# to postgresql.conf; install_path => DIR runs it from another installation
# (a test build); fake_clock => 1 starts it under set_fake_clock's clock;
# scope => 'server' (and preload => 0) adds scope_conf's lines.  With
# start => 0 it is only initialised: start it with start_uidgen_node.
sub new_uidgen_node
{
	my ($name, %params) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		($params{install_path} ? (install_path => $params{install_path}) : ()));

	$node->init(%{ $params{init} // {} });
	$node->append_conf('postgresql.conf', join("\n",
		"max_connections = 60",
		"max_prepared_transactions = 10",
		"log_min_messages = warning",
		($params{scope} ? scope_conf($params{scope}, preload => $params{preload}) : ()),
		@{ $params{conf} // [] }) . "\n");
	return $node if defined $params{start} && !$params{start};
	return start_uidgen_node($node, %params);
}

# Starts a node of new_uidgen_node(..., start => 0) and creates uidgen in
# database postgres.
sub start_uidgen_node
{
	my ($node, %params) = @_;
	$params{fake_clock} ? start_with_fake_clock($node) : $node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION uidgen');
	return $node;
}

# postgresql.conf lines for uidgen.scope, with uidgen in
# shared_preload_libraries unless preload => 0 (PostgreSQL 15 needs it for
# scope server; 17 and later can do without).
sub scope_conf
{
	my ($scope, %params) = @_;
	return ("uidgen.scope = '$scope'",
		($params{preload} // 1) ? "shared_preload_libraries = 'uidgen'" : ());
}

# Restarts node with another uidgen.scope, so that every session has it (a
# reload switches new sessions only); stop_mode 'immediate' makes it a
# crash.  The library stays preloaded.
sub set_scope
{
	my ($node, $scope, %params) = @_;
	$node->stop($params{stop_mode} // 'fast');
	$node->adjust_conf('postgresql.conf', 'uidgen.scope', "'$scope'");
	$params{fake_clock} ? start_with_fake_clock($node) : $node->start;
}

# The row of uidgen.server_generator as a hash (column => value), or undef
# when the view has none.
sub server_generator
{
	my ($node, $db) = @_;
	my $row = $node->safe_psql($db // 'postgres', q{
		SELECT json_build_object('worker', worker, 'keeper_pid', keeper_pid, 'started_at', started_at,
			'ids_issued', ids_issued, 'chunks', chunks, 'ids_dropped', ids_dropped, 'ahead_ms', ahead_ms,
			'reserved_ahead_ms', reserved_ahead_ms, 'waits', waits, 'private_workers', private_workers)
		  FROM uidgen.server_generator});
	return undef if $row eq '';
	my %row;
	while ($row =~ /"(\w+)"\s*:\s*("?)([^",}]*)\2/g)
	{
		$row{$1} = $3;
	}
	return \%row;
}

# Runs statement (bulk uid_next() calls) in session (a background_psql of
# node, scope server) until it outruns the shared cursor and borrows a
# private worker of its own; returns that worker and the keeper's row (as
# server_generator() gives it), and dies when it has not borrowed in 180 s.
sub borrow_private_worker
{
	my ($node, $session, $statement) = @_;
	my $until = Time::HiRes::time() + 180;
	while (Time::HiRes::time() < $until)
	{
		$session->query_safe($statement);
		my $borrowed = $session->query_safe('SELECT uid_current_worker()');
		my $keeper = server_generator($node);
		return ($borrowed, $keeper) if $borrowed ne $keeper->{worker};
	}
	die 'the session borrowed no private worker';
}

# Starts psql running sql (typically a loop that commits as it goes) in the
# background, until it ends, its backend dies or the server stops; returns
# the IPC::Run handle.  With until => query, waits until query is true.
sub start_sql_loop
{
	my ($node, $sql, %params) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr($params{db} // 'postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	if (defined $params{until})
	{
		$node->poll_query_until($params{db} // 'postgres', $params{until})
		  or die "the background SQL did not get going: $sql";
	}
	return $h;
}

# start_sql_loop of a session that runs insert (which issues IDs) once,
# waits until table go of its database has a row, then runs insert for
# seconds, with a pause (seconds) after each, going on past errors: it
# claims a worker again at its next uid_next().  Returns once the first
# insert committed (until, a query that is true then).
sub start_gated_writer
{
	my ($node, %params) = @_;
	my ($insert, $seconds, $pause) = @params{qw(insert seconds pause)};
	return start_sql_loop($node, qq{
		DO \$\$ DECLARE t0 timestamptz;
		BEGIN
			$insert;
			COMMIT;
			WHILE NOT EXISTS (SELECT FROM go) LOOP
				PERFORM pg_sleep(0.05);
				COMMIT;
			END LOOP;
			t0 := clock_timestamp();
			WHILE clock_timestamp() < t0 + interval '$seconds s' LOOP
				BEGIN
					$insert;
				EXCEPTION WHEN OTHERS THEN
					PERFORM pg_sleep(0.05);
				END;
				COMMIT;
				PERFORM pg_sleep($pause);
			END LOOP;
		END \$\$},
		db => $params{db}, until => $params{until});
}

# start_sql_loop of a session that inserts 50 IDs a statement into table
# ids (id, source) until table stop has a row, each statement in a block of
# its own: a failure goes into table failures (at, source, sqlstate, message)
# and the session goes on.  Returns once it has inserted.
sub start_recording_writer
{
	my ($node, $source) = @_;
	return start_sql_loop($node, qq{
		DO \$\$ BEGIN
			WHILE NOT EXISTS (SELECT FROM stop) LOOP
				BEGIN
					INSERT INTO ids SELECT uid_next(), '$source' FROM generate_series(1, 50);
				EXCEPTION WHEN OTHERS THEN
					INSERT INTO failures VALUES (clock_timestamp(), '$source', SQLSTATE, SQLERRM);
				END;
				COMMIT;
				PERFORM pg_sleep(0.01);
			END LOOP;
		END \$\$}, until => "SELECT count(*) > 0 FROM ids WHERE source = '$source'");
}

# The failures start_recording_writer wrote down in node's table failures,
# one a line ('' for none).
sub recorded_failures
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT coalesce(string_agg(format('%s %s: %s %s', at, source, sqlstate, message), E'\n'), '') FROM failures});
}

# How many seconds after until (a timestamptz) registry_node's registry
# leased member_node its first block (to a tenth, negative when before).
sub first_lease_after
{
	my ($registry_node, $member_node, $until) = @_;
	return $registry_node->safe_psql('registry',
		"SELECT extract(epoch FROM min(claimed_at) - '$until'::timestamptz)::numeric(8,1) FROM uidgen.worker_block b "
		  . 'JOIN uidgen.server_life l USING (life) WHERE l.port = ' . $member_node->port);
}

# start_sql_loop of a session that inserts 200 IDs a statement into table
# ids (id bigint) of database db (default postgres) for seconds, each
# statement committed and going on past errors (a pause of 0.1 s after one).
sub start_timed_writer
{
	my ($node, $seconds, %params) = @_;
	return start_sql_loop($node, qq{
		DO \$\$ DECLARE t0 timestamptz := clock_timestamp();
		BEGIN
			WHILE clock_timestamp() < t0 + interval '$seconds s' LOOP
				BEGIN
					INSERT INTO ids SELECT uid_next() FROM generate_series(1, 200);
				EXCEPTION WHEN OTHERS THEN
					PERFORM pg_sleep(0.1);
				END;
				COMMIT;
				PERFORM pg_sleep(0.01);
			END LOOP;
		END \$\$}, %params);
}

# Waits for handles of start_sql_loop (their exit status is not looked at:
# they are meant to be cut short).
sub finish_sql_loops
{
	$_->finish for @_;
}

# count psql sessions inserting rows of phase into table (its id column
# defaulting to uid_next()) in transactions of 5,000 rows, in a loop that
# ends only with their backend or the server; returns once the phase has
# min_rows rows (default 20,000).
sub start_writers
{
	my ($node, $table, $phase, $count, $min_rows) = @_;
	my @writers = map {
		start_sql_loop($node, "DO \$\$ BEGIN LOOP INSERT INTO $table (phase) SELECT $phase FROM generate_series(1, 5000); "
			. "COMMIT; END LOOP; END \$\$")
	} 1 .. $count;
	$node->poll_query_until('postgres', "SELECT count(*) >= " . ($min_rows // 20000) . " FROM $table WHERE phase = $phase")
	  or die "the writers of phase $phase did not get going";
	return @writers;
}

# Ends the sessions of start_writers without a crash (they are terminated).
sub stop_writers
{
	my ($node, @writers) = @_;
	$node->safe_psql('postgres', q{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOOP INSERT INTO %'});
	finish_sql_loops(@writers);
}

# In table (id bigint, phase_column int), each worker's IDs of a later phase
# must all be above those of every earlier phase: a worker reused after a
# restart, a crash, a scope switch or a promotion continues above what it
# issued.  Returns the violations as text, '' when there are none.
sub worker_order_violations
{
	my ($node, $table, $phase_column, $db) = @_;
	return $node->safe_psql($db // 'postgres', qq{
		WITH p AS (SELECT uid_worker_id(id) AS worker, $phase_column AS phase, min(id) AS lo, max(id) AS hi
		             FROM $table GROUP BY 1, 2)
		SELECT coalesce(string_agg(format('worker %s: phase %s issued %s, not above %s of phase %s',
		                                  a.worker, b.phase, b.lo, a.hi, a.phase), '; '), '')
		  FROM p a JOIN p b ON a.worker = b.worker AND a.phase < b.phase AND b.lo <= a.hi});
}

# Runs sql, expected to fail, with VERBOSITY verbose; returns psql's stderr,
# which begins "ERROR:  SQLSTATE: message" and has the hint.
sub psql_error
{
	my ($node, $db, $sql) = @_;
	my ($stdout, $stderr);
	my $ret = $node->psql($db, $sql, stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $ret == 0 ? "(no error; returned $stdout)" : $stderr;
}

# A PgBouncer in front of node's database db, in transaction pooling with
# server_reset_query sent after every transaction (server_reset_query_always),
# with pool_size server connections.  Returns a hash: connstr, host, port,
# handle.  PgBouncer comes from Debian's package (/usr/sbin/pgbouncer).
sub start_pgbouncer
{
	my ($node, %params) = @_;
	my $db = $params{db} // 'postgres';
	my ($binary) = grep { -x } map { "$_/pgbouncer" } (split(/:/, $ENV{PATH}), '/usr/sbin');
	BAIL_OUT('pgbouncer is missing: apt-get install pgbouncer') unless $binary;

	my $dir = PostgreSQL::Test::Utils::tempdir_short();
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $user = $ENV{USER} // getpwuid($<);
	open my $ini, '>', "$dir/pgbouncer.ini" or die "cannot write $dir/pgbouncer.ini: $!";
	print $ini join("\n",
		'[databases]',
		"$db = host=" . $node->host . ' port=' . $node->port . " dbname=$db user=$user",
		'[pgbouncer]',
		"unix_socket_dir = $dir",
		"listen_port = $port",
		'auth_type = any',
		'pool_mode = ' . ($params{pool_mode} // 'transaction'),
		'default_pool_size = ' . ($params{pool_size} // 4),
		'max_client_conn = 200',
		'server_reset_query = ' . ($params{reset_query} // 'DISCARD ALL'),
		'server_reset_query_always = 1',
		'query_wait_timeout = 60',
		"logfile = $dir/pgbouncer.log",
		"pidfile = $dir/pgbouncer.pid",
		'');
	close $ini;
	# Its output goes to a file: a pipe nobody reads would fill and stop it.
	my $h = IPC::Run::start([ $binary, "$dir/pgbouncer.ini" ], '>', "$dir/pgbouncer.out", '2>&1');
	my $bouncer = { host => $dir, port => $port, handle => $h, log => "$dir/pgbouncer.log",
		connstr => "host=$dir port=$port dbname=$db" };
	# Ready once it accepts a query (however long a busy machine takes).
	my $deadline = time + 180;
	while (time < $deadline)
	{
		my $ok = IPC::Run::run([ 'psql', '-X', '-Atc', 'SELECT 1', '-d', $bouncer->{connstr} ],
			'>', \my $o, '2>', \my $e);
		return $bouncer if $ok && $o =~ /^1/;
		select(undef, undef, undef, 0.1);
	}
	die "pgbouncer did not start: " . slurp_file("$dir/pgbouncer.out");
}

sub stop_pgbouncer
{
	my ($bouncer) = @_;
	$bouncer->{handle}->signal('TERM');
	$bouncer->{handle}->finish;
}

# A started streaming standby of primary (initialised with allows_streaming),
# from a new base backup; it has the primary's postgresql.conf.
sub new_streaming_standby
{
	my ($primary, $name) = @_;
	$primary->backup("base_for_$name");
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, "base_for_$name", has_streaming => 1);
	$standby->start;
	return $standby;
}

# The worker table as "id|status|pid|last_time" lines, for messages.
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
	wait_for_crash_restart($node, $offset);
}

# Waits until the server, which crashed after the log had offset bytes, has
# reinitialized and accepts connections again.  It reads the log rather
# than trying to connect while the server is down: poll_query_until hands
# psql its query on standard input, and a psql that is refused before it
# reads it makes IPC::Run die of the broken pipe (seen under load).
sub wait_for_crash_restart
{
	my ($node, $offset) = @_;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	$node->poll_query_until('postgres', 'SELECT true') or die 'the server did not come back';
}

# A server clock moved by libfaketime: start_with_fake_clock starts a node
# under it, set_fake_clock moves it ('+0', '-30', '+3600': seconds from the
# real time), at once, for every process of that node.
#
# Except, on PostgreSQL 15, processes the postmaster forks in its signal
# handlers, as it does background workers (a uidgen keeper): the handler
# runs while the postmaster waits in select(), which libfaketime 0.9.10
# calls with faking turned off, and a child forked there keeps it off for
# good.  Such a process reads the real clock.  So a test that needs the
# keeper on the same clock as the backends moves the clock only while the
# keeper it has runs, and has it right ('+0') whenever a keeper may start.
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

# How far node's clock is from this process's (the real one), in seconds,
# as (lowest, highest): the server read its clock at some moment between
# the two readings of ours around the query.  The queries go through one
# open session, so that the span holds no fork and no connection; a busy
# machine can still make it long: it asks again (20 times at most) until
# the span is under 0.3 s, and returns the narrowest.
sub clock_offset
{
	my ($node) = @_;
	my $session = $node->background_psql('postgres');
	my @best;
	for (1 .. 20)
	{
		my $before = Time::HiRes::time();
		my $server = $session->query_safe('SELECT extract(epoch FROM clock_timestamp())');
		my $after = Time::HiRes::time();
		@best = ($server - $after, $server - $before) if !@best || $before - $after > $best[0] - $best[1];
		last if $best[1] - $best[0] < 0.3;
	}
	$session->quit;
	return @best;
}

# Waits until node's clock reads later than timestamp (as the server prints
# it) plus margin (an interval): for time that must pass, such as an ID's
# time unit that must be over.
sub wait_for_clock_past
{
	my ($node, $timestamp, $margin) = @_;
	$node->poll_query_until('postgres',
		"SELECT clock_timestamp() > '$timestamp'::timestamptz + interval '" . ($margin // '0') . "'")
	  or die 'the clock of ' . $node->name . " did not pass $timestamp";
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

# pgbench running one SQL script (given as text) on node's database
# postgres, in the background, with pgbench's other options; for
# finish_pgbench.
sub start_pgbench
{
	my ($node, $sql, @options) = @_;
	my $job = { out => '', err => '', what => $node->name . " @options" };
	$job->{handle} = IPC::Run::start(
		[ 'pgbench', '--no-vacuum', @options, '-f', '-', '-d', $node->connstr('postgres') ],
		'<', \"$sql\n", '>', \$job->{out}, '2>', \$job->{err});
	return $job;
}

# Waits for jobs of start_pgbench; a test each that it processed every
# transaction it was given.
sub finish_pgbench
{
	for my $job (@_)
	{
		$job->{handle}->finish;
		like($job->{out}, qr{processed: (\d+)/\1\b}, "pgbench ($job->{what}) processed all its transactions")
		  or diag($job->{out} . $job->{err});
	}
}

# Like poll_query_until (database postgres, until the query returns t) but
# for at most seconds: for conditions that a broken server would never
# meet, so that the test fails in that time rather than the default 180 s.
sub poll_for
{
	my ($node, $seconds, $sql) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		my ($ret, $out) = $node->psql('postgres', $sql);
		return 1 if $ret == 0 && $out eq 't';
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

# ---- one ID space across servers (uidgen.registry) ------------------------

# A started node whose database "registry" holds the extension and the
# fleet's registry, with a short lease (lease_ttl, default 10s) so that tests
# can outlive it, set up for a new fleet (uid_registry_start_fleet()).  It is
# a member of itself unless member => 0.
sub new_registry_node
{
	my ($name, %params) = @_;
	my $node = new_uidgen_node($name, %params,
		conf => [ "shared_preload_libraries = 'uidgen'", @{ $params{conf} // [] } ]);

	$node->safe_psql('postgres', 'CREATE DATABASE registry');
	$node->safe_psql('registry', 'CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet()');
	$node->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '" . ($params{lease_ttl} // '10s') . "'"
		. ($params{max_borrow} ? ", max_borrow => '$params{max_borrow}'" : '') . ")");
	unless (defined $params{member} && !$params{member})
	{
		$node->append_conf('postgresql.conf', join("\n", registry_conf($node)) . "\n");
		$node->reload;
	}
	return $node;
}

# A login role of registry_node's registry that may make the member calls
# (uid_registry_grant_member()); returns a connection string as it.
sub new_member_role
{
	my ($registry_node, $role) = @_;
	$registry_node->safe_psql('registry', "CREATE ROLE $role LOGIN; SELECT uid_registry_grant_member('$role')");
	return $registry_node->connstr('registry') . " user=$role";
}

# Runs sql over connstr (unaligned, tuples only); returns psql's exit code,
# its stderr and its output.
sub psql_as
{
	my ($connstr, $sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $connstr, '-c', $sql ],
		'>', \$out, '2>', \$err);
	chomp $out;
	return ($? >> 8, $err, $out);
}

# postgresql.conf lines that make a server a member of registry_node's
# registry (database db, default "registry").
sub registry_conf
{
	my ($registry_node, %params) = @_;
	(my $connstr = $registry_node->connstr($params{db} // 'registry')) =~ s/'/''/g;
	return ("shared_preload_libraries = 'uidgen'", "uidgen.registry = '$connstr'");
}

# A started member of registry_node's registry, with uidgen created in
# database postgres; takes new_uidgen_node's parameters.
sub new_member_node
{
	my ($name, $registry_node, %params) = @_;
	my @conf = (registry_conf($registry_node), @{ $params{conf} // [] });
	return new_uidgen_node($name, %params, conf => \@conf);
}

# uidgen.registry_status of node as a list of hashes (column => value).
sub registry_status
{
	my ($node, $db) = @_;
	my $rows = $node->safe_psql($db // 'postgres', q{
		SELECT json_build_object('life', life, 'agent_status', agent_status, 'error', error, 'block', block,
			'first_worker', first_worker, 'last_worker', last_worker, 'lease_left_ms', lease_left_ms,
			'workers_granted', workers_granted)
		  FROM uidgen.registry_status});
	my @rows;
	for my $row (split /\n/, $rows)
	{
		my %row;
		while ($row =~ /"(\w+)"\s*:\s*("?)((?:[^"\\]|\\.)*?)\2\s*[,}]/g)
		{
			$row{$1} = $3;
		}
		push @rows, \%row;
	}
	return @rows;
}

# Replaces the running registry_node by a new node restored from its backup
# backup_name (taken with allows_streaming), on the same socket and port, so
# that members and registry_node's own connection string reach the restored
# one from then on.  Returns the new node.
sub replace_registry_with_backup
{
	my ($registry_node, $backup_name) = @_;
	my $restored = PostgreSQL::Test::Cluster->new('restored');
	$restored->init_from_backup($registry_node, $backup_name);
	$restored->append_conf('postgresql.conf',
		'port = ' . $registry_node->port . "\nunix_socket_directories = '" . $registry_node->host . "'\n");
	# At once: a fast stop's checkpoint can take seconds on a loaded
	# machine, and the members' leases must outlive the swap to be
	# re-asserted at the restored registry.
	$registry_node->stop('immediate');
	$restored->start;
	return $restored;
}

# Waits until node's registry agent holds a block (it claims one in reserve
# as soon as it can reach the registry).
sub wait_for_registry
{
	my ($node, $db) = @_;
	$node->poll_query_until($db // 'postgres',
		q{SELECT count(*) > 0 FROM uidgen.registry_status WHERE block IS NOT NULL AND lease_left_ms > 0})
	  or die 'the registry agent of ' . $node->name . ' holds no block: '
	  . $node->safe_psql($db // 'postgres', 'SELECT agent_status, error FROM uidgen.registry_status');
}

# The blocks node's registry agent holds with some lease left, as a list
# for SQL ("4,7"), once it holds at least one: a member that issued holds
# one, but one whose leases lapsed holds none until it leases anew.
sub held_blocks
{
	my ($node, $db) = @_;
	for (1 .. 10)
	{
		wait_for_registry($node, $db);
		my $blocks = $node->safe_psql($db // 'postgres', q{
			SELECT string_agg(block::text, ',' ORDER BY block) FROM uidgen.registry_status
			 WHERE block IS NOT NULL AND lease_left_ms > 0});
		return $blocks if $blocks ne '';
	}
	die 'the registry agent of ' . $node->name . ' keeps losing its blocks';
}

# How many IDs occur more than once over all the given lists: each an array
# ref of IDs, or a string of IDs one a line (what safe_psql returns).
sub duplicate_ids
{
	my %seen;
	my $duplicates = 0;
	for my $list (@_)
	{
		for my $id (ref $list ? @$list : split /\n/, $list)
		{
			next if $id eq '';
			$duplicates++ if $seen{$id}++ == 1;
		}
	}
	return $duplicates;
}

# The SQL blocks of one section of a Markdown file, for a test that runs what
# the documentation shows: path is the file's, from the top of the source
# tree, heading the section's heading line ("### pg_partman"), which runs to
# the next heading of its level or above.  Returns a hash of each block's name,
# from a line "<!-- test: NAME -->" just before its fence, to its text.  Dies
# when a block of the section has no name: the test runs every one.
sub doc_sql_blocks
{
	my ($path, $heading) = @_;
	my $file = File::Spec->catfile(File::Basename::dirname(__FILE__), '..', '..', $path);
	open my $f, '<', $file or die "cannot read $file: $!";
	my $text = do { local $/; <$f> };
	close $f;
	my ($level) = $heading =~ /^(#+) / or die "not a heading: $heading";
	$level = length $level;
	my ($section) = $text =~ /^\Q$heading\E\n(.*?)(?=^#{1,$level} |\z)/ms
	  or die "$path has no section \"$heading\"";
	my %blocks;
	while ($section =~ /(?:^<!-- test: ([\w-]+) -->\n)?^```sql\n(.*?)^```$/msg)
	{
		my ($name, $sql) = ($1, $2);
		die "an SQL block of \"$heading\" in $path has no <!-- test: NAME --> line before it" unless defined $name;
		die "two SQL blocks of \"$heading\" in $path are named $name" if exists $blocks{$name};
		$blocks{$name} = $sql;
	}
	return \%blocks;
}

# ---- pg_partman partitioning public.events by day of IDs -------------------

# A query of every partition of public.events as "day:rows", oldest first:
# its day as a number from day 0 (day0, the first ID of day 0; day_ids, the
# IDs of a day), its rows counted.  A partition that is not a UTC day, from
# uid_min() of a midnight UTC to uid_min() of the next, says so.
sub partman_days_query
{
	my ($day0, $day_ids) = @_;
	return qq{
	SELECT string_agg(CASE WHEN (i.child_start_id - $day0) % $day_ids = 0
	                       THEN ((i.child_start_id - $day0) / $day_ids)::text
	                       ELSE 'misaligned ' || i.child_start_id END
	                  || CASE WHEN uid_timestamp(i.child_start_id) = date_trunc('day', uid_timestamp(i.child_start_id), 'UTC')
	                           AND i.child_end_id + 1 = uid_min(uid_timestamp(i.child_start_id) + interval '1 day')
	                          THEN '' ELSE ' (not a UTC day)' END
	                  || ':' || (SELECT count(*) FROM public.events e
	                              WHERE e.tableoid = format('%I.%I', p.partition_schemaname, p.partition_tablename)::regclass),
	                  ' ' ORDER BY i.child_start_id)
	  FROM partman.show_partitions('public.events') p,
	       partman.show_partition_info(format('%I.%I', p.partition_schemaname, p.partition_tablename),
	                                   NULL, 'public.events') i};
}

# That query's answer on node.
sub partman_partitions
{
	my ($node, $day0, $day_ids) = @_;
	return $node->safe_psql('postgres', partman_days_query($day0, $day_ids));
}

# The rows in public.events_default; inserts n new rows into public.events.
sub partman_default_rows
{
	return $_[0]->safe_psql('postgres', 'SELECT count(*) FROM public.events_default');
}
sub partman_new_rows
{
	my ($node, $n) = @_;
	$node->safe_psql('postgres', "INSERT INTO public.events (payload) SELECT '{}' FROM generate_series(1, $n)");
}

# The expected partitions, as partman_days_query gives them: a hash of rows
# by day, then the days.
sub partman_days
{
	my ($rows, @days) = @_;
	return join ' ', map { "$_:" . ($rows->{$_} // 0) } @days;
}

# The offset from now for set_fake_clock that puts the clock on day n, where
# day 0 is the UTC day of the next noon: the same time of day, n days later,
# so that no day ends while a step runs.
my $to_noon;
sub partman_day_offset
{
	my ($day) = @_;
	if (!defined $to_noon)
	{
		my $now = time;
		$to_noon = 43_200 - $now % 86_400;
		$to_noon += 86_400 if $to_noon <= 0;
	}
	return '+' . ($to_noon + $day * 86_400);
}

1;
