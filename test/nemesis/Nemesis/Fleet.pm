# Nemesis::Fleet: the fleet the nemesis runs against (docs/nemesis.md): a
# registry server with a streaming standby, three member servers reaching
# it through a proxy each, their databases, the load clients and a
# PgBouncer.  Everything on loopback and Unix sockets, started here.
package Nemesis::Fleet;

use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes ();
use UidgenTest qw(start_pgbouncer stop_pgbouncer new_streaming_standby);

# The registry's rules: short, so that a run of minutes outlives many leases.
our $LEASE_TTL = 6;		# seconds
our $MAX_BORROW = '2s';
our $OTHER_MAX_BORROW = '3s';	# what reload_max_borrow sets for a while
our @DATABASES = qw(app1 app2);	# on every member; app2 is also a template
our $TEMPLATE = 'app2';
my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
# The host name whose getaddrinfo() never returns in a member started with
# the stalling resolver (slow_resolver; test/shim/stall_getaddrinfo.c).
our $STALLED_HOST = 'registry.stalled.invalid';

# Lines of postgresql.conf that keep five servers light on two cores.
my @LIGHT = (
	'shared_buffers = 16MB', 'max_connections = 40', 'max_worker_processes = 16',
	'max_prepared_transactions = 0', 'log_min_messages = warning', 'fsync = off',
	'log_line_prefix = \'%m [%p] %b \'', 'wal_keep_size = 64MB', 'log_statement = none',
	# The test modules turn it off; a crash must restart the server, as in production.
	'restart_after_crash = on');

sub new
{
	my ($class, %params) = @_;
	my $self = bless {
		out => $params{out}, client => $params{client}, seed => $params{seed},
		fake_clock => $params{fake_clock}, stall_shim => $params{stall_shim}, log => $params{log},
		members => [], clients => [], proxies => {}, temp => [], serial => 0,
		floors => {}, layout => undef, outside => {},
	}, $class;
	make_path("$self->{out}/ids");
	return $self;
}

sub say { my $self = shift; $self->{log}->(@_); }

# ---- psql without surprises -------------------------------------------------

# Runs sql (on the command line, never on standard input: a server that
# refuses psql before it reads would break the pipe) in db of node, as role
# with password if given; returns (ok, stdout, stderr).
sub query
{
	my ($node, $db, $sql, %params) = @_;
	my ($out, $err) = ('', '');
	my $dsn = $node->connstr($db);
	$dsn .= " user=$params{role} password=$params{password}" if $params{role};
	my $ok = eval {
		IPC::Run::run([ 'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $dsn, '-c', $sql ],
			'>', \$out, '2>', \$err, IPC::Run::timeout($params{timeout} // 60));
	};
	$err .= $@ if $@;
	chomp $out;
	return ($ok ? 1 : 0, $out, $err);
}

# Waits until sql returns t, at most seconds; returns whether it did.
sub poll
{
	my ($node, $db, $sql, $seconds) = @_;
	my $deadline = Time::HiRes::time() + $seconds;
	while (Time::HiRes::time() < $deadline)
	{
		my ($ok, $out) = query($node, $db, $sql, timeout => 20);
		return 1 if $ok && $out eq 't';
		Time::HiRes::sleep(0.2);
	}
	return 0;
}

# The pids of node's processes: its postmaster and its children.
sub node_pids
{
	my ($node) = @_;
	my $pm = postmaster_pid($node) or return ();
	my @pids = ($pm);
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $f, '<', $stat or next;
		my $line = <$f> // next;
		push @pids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+)/ && $2 == $pm;
	}
	return @pids;
}

sub postmaster_pid
{
	my ($node) = @_;
	open my $f, '<', $node->data_dir . '/postmaster.pid' or return undef;
	my $pid = <$f>;
	chomp $pid if defined $pid;
	return ($pid && kill(0, $pid)) ? $pid : undef;
}

# Starts node, under libfaketime's clock of its own when the run steps
# clocks (the file starts at '+0': the real time), and with the stalling
# resolver when the run has slow_resolver: both must be in the postmaster's
# environment, which its children inherit.
sub start_node
{
	my ($self, $node) = @_;
	delete $node->{_pid};
	my @preload;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $node->{nemesis_clock} // '';
	local $ENV{FAKETIME_CACHE_DURATION} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	local $ENV{UIDGEN_STALL_HOST} = $STALLED_HOST;
	push @preload, $libfaketime if $self->{fake_clock} && $node->{nemesis_clock};
	push @preload, $self->{stall_shim} if $self->{stall_shim} && $node->{nemesis_clock};
	local $ENV{LD_PRELOAD} = join(' ', @preload) if @preload;
	return $node->start(fail_ok => 1);
}

sub set_clock
{
	my ($node, $offset) = @_;
	open my $f, '>', "$node->{nemesis_clock}.tmp" or die "cannot write the clock of " . $node->name . ": $!";
	print $f "$offset\n";
	close $f;
	rename "$node->{nemesis_clock}.tmp", $node->{nemesis_clock};
}

# ---- set-up -----------------------------------------------------------------

# The text of uidgen.registry for member as its state has it now: its
# spelling (reload_registry_spelling swaps two spellings of the same
# registry), its role's password in the text or in a passfile
# (credential_rotation), and the host name it goes through (slow_resolver:
# 127.0.0.1, or a name).
sub registry_connstr
{
	my ($self, $member) = @_;
	my $port = $self->{proxies}{ $member->name }{port};
	my $user = $member->{nemesis_role};
	my $host = $member->{nemesis_host} // '127.0.0.1';
	my $secret = $member->{nemesis_passfile}
	  ? 'passfile=' . $member->{nemesis_passfile}
	  : 'password=' . $member->{nemesis_password};
	if ($member->{nemesis_spelling})
	{
		(my $query = $secret) =~ s{/}{%2F}g;
		return "postgresql://$user\@$host:$port/registry?connect_timeout=5&$query";
	}
	return "host=$host port=$port dbname=registry user=$user $secret";
}

# Writes member's uidgen.registry as its state has it (or '' when it is
# outside the fleet) and reloads it; with copies, also into its live copies
# (a promoted standby has its role, whose password changed); returns the
# text.
sub set_registry
{
	my ($self, $member, %params) = @_;
	my $text = $member->{nemesis_unset} ? '' : $self->registry_connstr($member);
	my @copies = !$params{copies} ? ()
	  : grep { $_ && !$_->{nemesis_gone} && ($_->{nemesis_origin} // '') eq $member->name }
	  map { $_->{node} } @{ $self->{temp} };
	for my $node ($member, @copies)
	{
		$node->adjust_conf('postgresql.conf', 'uidgen.registry', "'$text'");
		$node->reload;
	}
	return $text;
}

# Writes member's passfile with its role's password now.
sub write_passfile
{
	my ($self, $member) = @_;
	my $path = $member->basedir . '/registry.pgpass';
	_write($path, "*:*:registry:$member->{nemesis_role}:$member->{nemesis_password}");
	chmod 0600, $path;
	return $path;
}

# Gives every member's role at node (the registry) its password now: a
# registry restored from a backup has the passwords of then, as an
# operator's restore would.
sub set_passwords
{
	my ($self, $node) = @_;
	for my $member (@{ $self->{members} })
	{
		query($node, 'postgres', "ALTER ROLE $member->{nemesis_role} PASSWORD '$member->{nemesis_password}'");
	}
}

sub new_registry
{
	my ($self, $name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 1);
	$node->append_conf('postgresql.conf', join("\n", @LIGHT, "shared_preload_libraries = 'uidgen'") . "\n");
	$node->start;
	return $node;
}

# The member roles, one each; their passwords are the members' state.
my @ROLES = map { "nemesis_m$_" } 1 .. 3;

# Makes node a registry of the fleet's rules, in its database "registry",
# with a role of its own for each member and a password that the registry
# checks (credential_rotation changes it): members reach it through their
# proxies, over its Unix socket.  Returns '' or what failed.
sub prepare_registry
{
	my ($self, $node, %passwords) = @_;
	query($node, 'postgres', 'CREATE DATABASE registry');
	my ($ok, undef, $err) = query($node, 'registry', "CREATE EXTENSION uidgen; "
		. "SELECT uid_registry_configure(lease_ttl => '${LEASE_TTL}s', max_borrow => '$MAX_BORROW')");
	return "the registry would not configure: $err" unless $ok;
	query($node, 'postgres', "CREATE ROLE $_ LOGIN SUPERUSER PASSWORD '" . ($passwords{$_} // 'pw0') . "'")
	  for @ROLES;
	my $hba = $node->data_dir . '/pg_hba.conf';
	my $rules = PostgreSQL::Test::Utils::slurp_file($hba);
	_write($hba, 'local registry ' . join(',', @ROLES) . " scram-sha-256\n$rules");
	$node->reload;
	($ok) = query($node, 'registry', 'SELECT true', role => $ROLES[0], password => 'wrong');
	return "the registry lets a member role in with a wrong password" if $ok;
	return '';
}

sub setup
{
	my ($self, %params) = @_;
	my $registry = $self->new_registry('registry');
	my $failed = $self->prepare_registry($registry);
	die $failed if $failed;
	my @roles = @ROLES;
	my ($ok, $err);
	$self->{registry} = $registry;
	$self->say("registry " . $registry->name . " on " . $registry->host . ", lease TTL ${LEASE_TTL}s");
	$self->{registry_standby} = $self->new_standby($registry, 'registry_standby');

	# A proxy for each member, which reaches the registry only through it.
	my @scopes = qw(backend server server);
	for my $i (1 .. 3)
	{
		my $name = "m$i";
		$self->start_proxy($name);
		my $node = PostgreSQL::Test::Cluster->new($name);
		$node->init(allows_streaming => 1);
		$node->{nemesis_clock} = $node->basedir . '/faketime.rc';
		set_clock($node, '+0');
		$node->{nemesis_spelling} = 0;
		$node->{nemesis_role} = $roles[ $i - 1 ];
		$node->{nemesis_password} = 'pw0';
		$node->{nemesis_scope} = $scopes[ $i - 1 ];
		$node->append_conf('postgresql.conf', join("\n", @LIGHT,
			"shared_preload_libraries = 'uidgen'",
			"uidgen.scope = '$node->{nemesis_scope}'",
			"uidgen.max_borrow = '$MAX_BORROW'",
			"uidgen.registry = '" . $self->registry_connstr($node) . "'") . "\n");
		$self->start_node($node) or die "$name did not start";
		push @{ $self->{members} }, $node;
		for my $db (@DATABASES)
		{
			query($node, 'postgres', "CREATE DATABASE $db");
			($ok, undef, $err) = query($node, $db, 'CREATE EXTENSION uidgen; '
				. 'CREATE TABLE nemesis_t (id bigint DEFAULT uid_next(), at timestamptz)');
			die "$name/$db: $err" unless $ok;
		}
		$self->say("member $name ($node->{nemesis_scope}) on " . $node->host . ", databases @DATABASES");
	}
	# Each database's first ID joins the registry, before any client starts.
	for my $node (@{ $self->{members} })
	{
		for my $db (@DATABASES)
		{
			poll($node, $db, 'SELECT uid_next() > 0', 120) or die $node->name . "/$db issues no ID";
		}
	}
	$self->read_layout;
	$self->read_floors;
	# An older backup of the registry, for registry_restore.
	$registry->backup('older');
	$self->{registry_backup} = [ $registry, 'older' ];

	# The load: a client for each database, and one more through PgBouncer.
	for my $node (@{ $self->{members} })
	{
		$self->start_client($node, $_) for @DATABASES;
	}
	my $m1 = $self->{members}[0];
	$self->{bouncer} = start_pgbouncer($m1, db => 'app1', pool_size => 3);
	$self->start_client($m1, 'app1', dsn => $self->{bouncer}{connstr}, via => 'pgbouncer');
}

# A started streaming standby of primary, named name_N.
sub new_standby
{
	my ($self, $primary, $name) = @_;
	return new_streaming_standby($primary, $name . '_' . ++$self->{serial});
}

sub start_proxy
{
	my ($self, $name) = @_;
	my $dir = "$self->{out}/proxy/$name";
	make_path($dir);
	unlink "$dir/pid";
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $proxy = { port => $port, dir => $dir };
	$self->{proxies}{$name} = $proxy;
	$self->set_proxy_target($proxy);
	set_proxy_mode($proxy, 'pass');
	(my $script = __FILE__) =~ s{Nemesis/Fleet\.pm$}{proxy.pl};
	$proxy->{handle} = IPC::Run::start([ $^X, $script, $port, $dir ], '>', "$dir/proxy.out", '2>&1');
	my $deadline = time + 30;
	sleep 0.1 until -e "$dir/pid" || time > $deadline;
	return $proxy;
}

sub set_proxy_target
{
	my ($self, $proxy) = @_;
	my $registry = $self->{registry};
	_write("$proxy->{dir}/target", $registry->host . '/.s.PGSQL.' . $registry->port);
}

sub set_proxy_mode
{
	my ($proxy, $mode) = @_;
	_write("$proxy->{dir}/mode", $mode);
}

sub _write
{
	my ($path, $text) = @_;
	open my $f, '>', "$path.tmp" or die "cannot write $path: $!";
	print $f "$text\n";
	close $f;
	rename "$path.tmp", $path or die "cannot rename $path: $!";
}

# A new registry primary (failover, restore): every proxy points to it.
sub registry_moved
{
	my ($self, $node) = @_;
	$self->{registry} = $node;
	$self->set_proxy_target($_) for values %{ $self->{proxies} };
}

# ---- clients ----------------------------------------------------------------

# A nemesis_client on db of node (or on dsn), writing every ID it receives
# to a file of its own.
sub start_client
{
	my ($self, $node, $db, %params) = @_;
	my $n = scalar @{ $self->{clients} } + 1;
	my $name = sprintf('%s.%s.%d%s', $node->name, $db, $n, $params{via} ? ".$params{via}" : '');
	my $file = "$self->{out}/ids/$name";
	my $client = { name => $name, node => $node, db => $db, file => $file };
	$client->{handle} = IPC::Run::start(
		[ $self->{client}, '--dsn', $params{dsn} // $node->connstr($db), '--out', $file,
		  '--seed', $self->{seed} * 100 + $n, '--pace-ms', $params{pace_ms} // 50 ],
		'>', "$file.stdout", '2>&1');
	push @{ $self->{clients} }, $client;
	return $client;
}

# Stops a client with SIGTERM: it ends its transaction and its file;
# returns whether it was gone within seconds (else it is killed).
sub stop_client
{
	my ($self, $client, $seconds) = @_;
	return 1 if $client->{stopped};
	$client->{stopped} = 1;
	$client->{handle}->signal('TERM');
	my $deadline = time + ($seconds // 30);
	while (time < $deadline)
	{
		return 1 unless $client->{handle}->pumpable;
		eval { $client->{handle}->pump_nb };
		Time::HiRes::sleep(0.1);
		last unless kill 0, $client->{handle}{KIDS}[0]{PID};
	}
	my $gone = !kill(0, $client->{handle}{KIDS}[0]{PID});
	$client->{handle}->kill_kill unless $gone;
	eval { $client->{handle}->finish };
	return $gone;
}

# ---- what the checker needs from the servers ---------------------------------

sub read_layout
{
	my ($self) = @_;
	my $node = $self->{members}[0];
	my ($ok, $out, $err) = query($node, 'app1', q{
		SELECT time_bits, worker_bits, seq_bits FROM uidgen.config});
	die "no layout: $err" unless $ok && $out =~ /^(\d+)\|(\d+)\|(\d+)$/;
	$self->{layout} = { time_bits => $1, worker_bits => $2, seq_bits => $3 };
}

# The join floor of every database in use that can be read now (or of the
# one "server/db" only names); a database keeps the lowest floor read (a
# rejoin under another spelling raises it, and every ID between came from
# the registry's blocks).
sub read_floors
{
	my ($self, %params) = @_;
	my %seen;
	for my $client (@{ $self->{clients} }, map { { node => $_->[0], db => $_->[1] } } $self->member_databases)
	{
		my $key = $client->{node}->name . '/' . $client->{db};
		next if $params{only} && $key ne $params{only};
		next if $seen{$key}++;
		next if $client->{node}{nemesis_gone} || $client->{db_gone};
		my ($ok, $out) = query($client->{node}, $client->{db}, 'SELECT join_floor FROM uidgen.membership',
			timeout => 20);
		next unless $ok && $out =~ /^-?\d+$/;
		$self->{floors}{$key} = $out if !defined $self->{floors}{$key} || $out < $self->{floors}{$key};
	}
}

sub member_databases
{
	my ($self) = @_;
	return map { my $n = $_; map { [ $n, $_ ] } @DATABASES } @{ $self->{members} };
}

# Stops node fast, and returns how many of its processes still ran 30 s
# later (killed then): the check that nothing hangs.
sub stop_and_check
{
	my ($self, $node) = @_;
	my @pids = node_pids($node);
	delete $node->{_pid};
	return 0 unless @pids;
	my $started = time;
	IPC::Run::run([ 'pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-t', '30', '-w', 'stop' ],
		'>', \my $out, '2>', \my $err);
	Time::HiRes::sleep(0.2) while time < $started + 30 && grep { kill 0, $_ } @pids;
	my @left = grep { kill 0, $_ } @pids;
	delete $node->{_pid};
	return 0 unless @left;
	$self->say("HUNG: " . $node->name . ": processes @left still ran 30 s after a fast stop; killed");
	kill 'KILL', @left;
	return scalar @left;
}

1;
