# Scope server under database churn: databases created, used and dropped one
# after another never run out of the server's slots, however many there were
# since the server started (a dropped database's slot comes back); as many
# databases as uidgen.max_server_databases issue at once, with a keeper each;
# and the one beyond the limit is refused with an error that names the
# setting to raise.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# Twice the places (uidgen.max_server_databases), and two more; then as many
# databases alive at once as a raised limit allows.  Always with 8 places
# and 10 alive; with UIDGEN_STRESS (make test-stress) the default 64 places,
# 130 databases in turn, and 70 alive, about three minutes here.
# With UIDGEN_CHURN=N (make test-churn: 1,000): the default places and N databases in turn.
my $stress = $ENV{UIDGEN_STRESS} || $ENV{UIDGEN_CHURN};
my $places = $stress ? 64 : 8;
my $churned = $ENV{UIDGEN_CHURN} || 2 * $places + 2;
my $alive = $stress ? 70 : 10;
my $node = new_uidgen_node('db_churn', scope => 'server',
	conf => [ 'max_worker_processes = 24', 'max_connections = 100',
		($stress ? () : ("uidgen.max_server_databases = $places")) ]);
$node->safe_psql('postgres', 'CREATE DATABASE churn_template');
$node->safe_psql('churn_template', 'CREATE EXTENSION uidgen');

# Runs sql in database db, returns (ok, output or error).
sub try_sql
{
	my ($db, $sql) = @_;
	my ($out, $err);
	my $ret = $node->psql($db, $sql, stdout => \$out, stderr => \$err);
	return ($ret == 0, $ret == 0 ? $out : $err);
}

# ---- created, used and dropped, one after another ---------------------------

my ($issued, $failed, $first_error, $within_repeats) = (0, 0, '', 0);
my $started = time;
for my $i (1 .. $churned)
{
	$node->safe_psql('postgres', "CREATE DATABASE churn_$i TEMPLATE churn_template");
	my ($ok, $out) = try_sql("churn_$i", 'SELECT uid_next() FROM generate_series(1, 3)');
	if ($ok)
	{
		my @ids = split /\n/, $out;
		my %seen;
		$within_repeats += grep { $seen{$_}++ } @ids;
		$issued++ if @ids == 3;
	}
	else
	{
		$failed++;
		$first_error ||= "database $i: $out";
	}
	# Its keeper is connected to it: FORCE ends it (and any session).
	$node->safe_psql('postgres', "DROP DATABASE churn_$i WITH (FORCE)");
}
diag("$churned databases created, used and dropped in " . (time - $started) . ' s');
is($issued, $churned, "$churned databases created, used and dropped one after another: each issued")
  or diag("$failed failed; the first: $first_error");
is($within_repeats, 0, 'no database issued an ID twice');
my ($postgres_ok, $postgres_out) = try_sql('postgres', 'SELECT uid_next() > 0');
ok($postgres_ok, 'database postgres issues after the churn') or diag($postgres_out);

# The keepers of dropped databases are gone, and none was started again for them.
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'uidgen keeper'}),
	'one keeper is left: that of database postgres');

# ---- many databases alive at once -------------------------------------------

# Each database with a keeper needs a place and a background worker.
$node->append_conf('postgresql.conf',
	"uidgen.max_server_databases = $alive\nmax_worker_processes = " . ($alive + 8) . "\n");
$node->restart;
for my $i (1 .. $alive - 1)
{
	$node->safe_psql('postgres', "CREATE DATABASE alive_$i TEMPLATE churn_template");
}
my %ids;
my $alive_ok = 0;
for my $db ('postgres', map { "alive_$_" } 1 .. $alive - 1)
{
	my ($ok, $out) = try_sql($db, 'SELECT uid_next()');
	$alive_ok++ if $ok;
	$first_error ||= "$db: $out" unless $ok;
}
is($alive_ok, $alive, "$alive databases issue at once with uidgen.max_server_databases = $alive")
  or diag($first_error);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'uidgen keeper'}),
	$alive, "each has its keeper ($alive)");

$node->safe_psql('postgres', 'CREATE DATABASE alive_extra TEMPLATE churn_template');
my $err = psql_error($node, 'alive_extra', 'SELECT uid_next()');
like($err, qr/ERROR:  53400: too many databases use the server-wide generator/,
	'one more database is refused: 53400');
like($err, qr/DETAIL:  The server has room for $alive databases.*HINT:  .*uidgen\.max_server_databases/s,
	'the error names the limit and the setting to raise');

# A dropped one's slot goes to the next database that asks.
$node->safe_psql('postgres', 'DROP DATABASE alive_1 WITH (FORCE)');
like($node->safe_psql('alive_extra', 'SELECT uid_next()'), qr/^\d+$/,
	'once one of them is dropped, its slot goes to the next database');

$node->stop;
done_testing();
