# A database joins its registry with a join floor above what the server's
# leases cover: before it joined, its clock ran an hour ahead for a moment
# and it issued there, so its IDs must start above that hour (INV-19 of
# docs/design.md).  Until the registry's time nears the floor it can issue
# nothing under the registry, and it must say so without spending the
# server's grants: before, every attempt took a fresh worker it could not
# issue under, one block each here (blocks of one worker), until the
# registry refused the server more blocks (max_system_blocks) and no other
# database of the server could take a worker.  The step is
# uidgen.debug_clock_offset, which every process reads.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0);
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

# A server without a registry yet, and database e.
my $m = new_uidgen_node('m', conf => ["shared_preload_libraries = 'uidgen'"]);
$m->safe_psql('postgres', 'CREATE DATABASE e');
$m->safe_psql('e', 'CREATE EXTENSION uidgen');

# An hour ahead for a moment: database e issues there.
$m->append_conf('postgresql.conf', "uidgen.debug_clock_offset = '1h'\n");
$m->reload;
$m->poll_query_until('e', q{SELECT current_setting('uidgen.debug_clock_offset') = '1h'})
  or die 'the offset did not reach the sessions';
like($m->safe_psql('e', 'SELECT uid_next()'), qr/^\d+$/, 'database e issues an hour ahead');
$m->append_conf('postgresql.conf', "uidgen.debug_clock_offset = 0\n");
$m->reload;
$m->poll_query_until('e', q{SELECT current_setting('uidgen.debug_clock_offset') = '0'})
  or die 'the offset did not go';

# The server joins the registry.
$m->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$m->reload;
wait_for_registry($m);

# Database e asks again and again: each time refused, naming the floor.
my $refused = 0;
my $last_err = '';
for (1 .. 20)
{
	my ($ret, $out, $err) = $m->psql('e', "\\set VERBOSITY verbose\nSET statement_timeout = '20s';\nSELECT uid_next();");
	$last_err = $err;
	$refused++ if $ret != 0 && $err =~ /ERROR:  08006: database "e" issued IDs \d+ ms beyond what this server's uidgen lease covers/;
}
is($refused, 20, 'each of 20 first IDs of database e is refused (08006), naming how far its floor is ahead')
  or diag("the last error: $last_err");
my $floor = $m->safe_psql('e', 'SELECT join_floor FROM uidgen.membership');
my $now = $m->safe_psql('e', q{SELECT ((extract(epoch FROM clock_timestamp()) - extract(epoch FROM epoch)) * 1000)::bigint
	FROM uidgen.config});
cmp_ok($floor, '>', $now + 3000000, 'its join floor is the hour it issued in');

# The server's grants are not spent on it: a few blocks at most, and
# another database takes its first worker at once.
my $blocks = $registry->safe_psql('registry', q{SELECT count(*) FROM uidgen.worker_block WHERE status = 'leased'});
cmp_ok($blocks, '<=', 3, "the server holds $blocks blocks, not one per attempt");
my ($ret, $out, $err) = $m->psql('postgres', "SET statement_timeout = '20s'; SELECT uid_next() > 0");
is($out, 't', 'database postgres of the same server issues') or diag($err);

done_testing();
