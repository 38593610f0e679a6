# A fleet moved to another registry behind an unchanged name: the operator
# exports, imports, then points the registry's name (a DNS record, a proxy,
# a pooler) at the new server, leaving uidgen.registry as it is, and runs
# uid_registry_move() in each member database.  The move must reach what
# the name reaches now.  Before, the agent read the registry's identity over
# the connection it had open, which still reached the old registry: the
# move pinned the registry the member was leaving, returned its identity,
# and once the old registry stopped the member issued nothing (found by the
# nemesis' registry_migration: two members never issued again).
use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $old = new_registry_node('registry', member => 0);
my $new = new_uidgen_node('registry_new', conf => [ "shared_preload_libraries = 'uidgen'" ]);
$new->safe_psql('postgres', 'CREATE DATABASE registry');
$new->safe_psql('registry', "CREATE EXTENSION uidgen; SELECT uid_registry_configure(lease_ttl => '10s')");

# The name members know: a TCP proxy that forwards to the registry named in its target file.
my $dir = PostgreSQL::Test::Utils::tempdir();
my $port = PostgreSQL::Test::Cluster::get_free_port();
sub point_name_at
{
	my ($node) = @_;
	open my $f, '>', "$dir/target.tmp" or die $!;
	print $f $node->host . '/.s.PGSQL.' . $node->port . "\n";
	close $f;
	rename "$dir/target.tmp", "$dir/target" or die $!;
}
point_name_at($old);
open my $m, '>', "$dir/mode" or die $!;
print $m "pass\n";
close $m;
my $proxy = IPC::Run::start([ $^X, 'test/nemesis/proxy.pl', $port, $dir ], '>', "$dir/proxy.out", '2>&1');
poll_until_file("$dir/pid");

my $member = new_uidgen_node('member', conf => [ "shared_preload_libraries = 'uidgen'",
	"uidgen.registry = 'host=127.0.0.1 port=$port dbname=registry'" ]);
wait_for_registry($member);
my @ids = split /\n/, $member->safe_psql('postgres', 'SELECT uid_next() FROM generate_series(1, 1000)');
my $old_id = $old->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity');
my $new_id = $new->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity');

# Export, import, then the name switched while the agent's connection to the old registry is open.
(my $doc = $old->safe_psql('registry', "SELECT uid_registry_export('$new_id')")) =~ s/'/''/g;
is($new->safe_psql('registry', "SELECT uid_registry_import('$doc')"), $old_id, 'the new registry imports the old');
point_name_at($new);
is($member->safe_psql('postgres', 'SELECT uid_registry_move()'), $new_id,
	'uid_registry_move() moves the database to the registry the name reaches now');
is($member->safe_psql('postgres', 'SELECT registry_id FROM uidgen.membership'), $new_id,
	'its membership names the new registry');

# The old registry goes; the member issues under the new one.
$old->stop;
ok($new->poll_query_until('registry', q{SELECT count(*) > 0 FROM uidgen.worker_block_lease}),
	'the member leases blocks of the new registry');
ok(poll_for($member, 60, q{SELECT bool_and(agent_status = 'ready' AND error IS NULL) FROM uidgen.registry_status}),
	'its agent works for the new registry once the old one is gone');
push @ids, split /\n/, $member->safe_psql('postgres', 'SELECT uid_next() FROM generate_series(1, 1000)');
is(scalar(@ids), 2000, 'the member issues before and after the move');
is(duplicate_ids(\@ids), 0, 'no ID issued twice');

$proxy->signal('TERM');
$proxy->finish;
done_testing();

sub poll_until_file
{
	my ($path) = @_;
	for (1 .. 300)
	{
		return if -e $path;
		select(undef, undef, undef, 0.1);
	}
	die "no $path";
}
