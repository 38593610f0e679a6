# pg_dump and restore: the layout and the worker table come along, the layout
# stays fixed, and the restored copy and the original, generating side by
# side, never issue the same ID.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('restore');
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
	CREATE EXTENSION uidgen;
	SELECT uid_configure(41, 12, 10);
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), db text)});
$node->pgbench('--no-vacuum --connect --client=4 --transactions=25 src', 0, [qr{processed: 100/100}], [],
	'the source generates', { 'src' => q{INSERT INTO t (db) SELECT 'src' FROM generate_series(1, 10);} });

my $dump = PostgreSQL::Test::Utils::tempdir() . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('dst'), $dump ], 'pg_restore');

is($node->safe_psql('dst', 'SELECT time_bits, worker_bits, seq_bits, configurable FROM uid_layout()'),
	'41|12|10|f', 'the layout came along, and is still fixed');
is($node->safe_psql('dst', 'SELECT count(*) FROM uidgen.config'), '1', 'one config row');
is($node->safe_psql('dst', 'SELECT count(*) FROM uidgen.worker_node'),
	$node->safe_psql('src', 'SELECT count(*) FROM uidgen.worker_node'), 'the worker table came along');
my ($ret, $out, $err) = $node->psql('dst', 'SELECT uid_configure(41, 13, 9)');
like($err, qr/cannot change the layout once workers have registered/, 'uid_configure refused after restore');

# Both generate at once.
my @jobs;
for my $db ('src', 'dst')
{
	my ($o, $e) = ('', '');
	push @jobs, IPC::Run::start(
		[ 'pgbench', '--no-vacuum', '--connect', '--client=4', '--transactions=100',
		  '-f', '-', '-d', $node->connstr($db) ],
		'<', \"INSERT INTO t (db) SELECT '$db' || ' after' FROM generate_series(1, 20);\n",
		'>', \$o, '2>', \$e);
}
$_->finish for @jobs;
is($node->safe_psql('src', q{SELECT count(*) FROM t WHERE db = 'src after'}), '8000', 'source generated 8000');
is($node->safe_psql('dst', q{SELECT count(*) FROM t WHERE db = 'dst after'}), '8000', 'copy generated 8000');

# Compare every ID of both databases.
my $src_ids = $node->safe_psql('src', 'SELECT id FROM t ORDER BY id');
my $dst_ids = $node->safe_psql('dst', q{SELECT id FROM t WHERE db = 'dst after' ORDER BY id});
my %seen = map { $_ => 1 } split /\n/, $src_ids;
my $overlap = grep { $seen{$_} } split /\n/, $dst_ids;
is($overlap, 0, 'no ID of the copy is an ID of the source');
is($node->safe_psql('dst', q{SELECT min(uid_worker_id(id)) > 4000 FROM t WHERE db = 'dst after'}), 't',
	'the copy took its workers from the top of the range');


# A template copy of a database that used half its worker ids still has the
# other half: it counts down from the top to just above what it inherited.
$node->safe_psql('postgres', 'CREATE DATABASE small');
$node->safe_psql('small', 'CREATE EXTENSION uidgen; SELECT uid_configure(41, 4, 9)');
$node->pgbench('--no-vacuum --client=8 --transactions=5 small', 0, [qr{processed: 40/40}], [],
	'eight workers used', { 'eight' => 'SELECT uid_next();' });
my $inherited = $node->safe_psql('small', 'SELECT last_value FROM uidgen.worker_node_id_seq');
$node->safe_psql('postgres', 'CREATE DATABASE small_copy TEMPLATE small');
is($node->safe_psql('small_copy', 'SELECT uid_next() > 0, uid_current_worker()'), 't|15',
	"the copy takes worker 15 though the original used $inherited of 15");

$node->stop;
done_testing();
