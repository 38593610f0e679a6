# What a registry refuses, each with a clear error and nothing issued: a
# registry database on a standby, a member database that issued IDs under
# another layout; and the owner-only release of a gone server's blocks.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0, init => { allows_streaming => 1 });

# ---- a registry on a standby ------------------------------------------------

my $standby = new_streaming_standby($registry, 'registry_standby');
my $member = new_member_node('member', $standby);
$member->poll_query_until('postgres', q{SELECT bool_or(error LIKE '%standby%') FROM uidgen.registry_status})
  or die 'a registry on a standby was not refused';
my $err = psql_error($member, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:  08004: .*uidgen registry ".*" failed.*on a standby/s, 'a registry on a standby: 08004');
is($member->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), '0', 'and nothing was claimed');

# Pointed at the primary, the same member joins.
$member->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$member->reload;
wait_for_registry($member);
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'pointed at the primary, the member issues');

# ---- a layout that differs ---------------------------------------------------

# A database that issued IDs under its own layout cannot take the registry's.
my $other = new_uidgen_node('other', conf => [ "shared_preload_libraries = 'uidgen'" ]);
$other->safe_psql('postgres', 'SELECT uid_configure(worker_bits => 10, seq_bits => 12); SELECT uid_next()');
$other->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$other->reload;
wait_for_registry($other);
$err = psql_error($other, 'postgres', 'SELECT uid_next()');
like($err, qr/ERROR:  55000: the layout of database "postgres" differs from its uidgen registry's/,
	'a database with IDs under another layout refuses to join: 55000');
# A fresh database of the same server adopts the registry's layout.
$other->safe_psql('postgres', 'CREATE DATABASE fresh');
$other->safe_psql('fresh', 'CREATE EXTENSION uidgen; SELECT uid_configure(worker_bits => 10, seq_bits => 12)');
$other->safe_psql('fresh', 'SELECT uid_next()');
is($other->safe_psql('fresh', 'SELECT worker_bits || \'/\' || seq_bits FROM uidgen.config'), '13/9',
	'a database that never registered a worker adopts the registry\'s layout');

# ---- the registry's layout, fixed by its leases -------------------------------

# Members issue under the registry's layout from their first lease on; under
# another one, worker k would be workers 2k and 2k + 1 (issue: 591,244
# duplicates when the registry's database, itself without workers, was
# reconfigured).  So the first lease fixes it, as a first worker fixes a
# database's.
is($registry->safe_psql('registry', 'SELECT configurable FROM uid_layout()'), 'f',
	'a registry that leased a block reports its layout fixed');
$err = psql_error($registry, 'registry', 'SELECT uid_configure(worker_bits => 12, seq_bits => 10)');
like($err, qr/ERROR:  55000: cannot change the layout of a uidgen registry that has leased or imported worker blocks/,
	'uid_configure at a registry that leased a block: 55000');
is($registry->safe_psql('registry', "SELECT worker_bits || '/' || seq_bits FROM uidgen.config"), '13/9',
	'and the layout is unchanged');
$err = psql_error($registry, 'registry', 'SELECT uid_registry_configure(block_size => 4)');
like($err, qr/ERROR:  55000: cannot change the block size of a registry that has leased or imported blocks/,
	'nor the block size: 55000');
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'and the member goes on issuing');

# ---- a crash loop cannot take the fleet's blocks ------------------------------------

# Every restart is a new server life that leases blocks, and those of the
# lives before stay out of the pool until their leases end: the lives of
# one system identifier hold at most max_system_blocks.
$registry->safe_psql('registry', 'SELECT uid_registry_configure(max_system_blocks => 3)');
my $claimed = $registry->safe_psql('registry', join(';', map {
	q{SELECT block FROM uidgen.registry_claim(1, gen_random_uuid(), 'crash-loop', 1, 'h', 1, '{}')} } 1 .. 3));
is(scalar(() = $claimed =~ /^\d+$/mg), 3, "three lives of one system identifier lease a block each ($claimed)");
$err = psql_error($registry, 'registry',
	q{SELECT * FROM uidgen.registry_claim(1, gen_random_uuid(), 'crash-loop', 1, 'h', 1, '{}')});
like($err, qr/ERROR:  54000: the uidgen servers of system identifier crash-loop hold 3 worker blocks, their limit.*HINT:  .*raise max_system_blocks/s,
	'a fourth is refused with 54000, naming the limit and the remedy');
like($registry->safe_psql('registry',
	q{SELECT block FROM uidgen.registry_claim(1, gen_random_uuid(), 'another-server', 1, 'h', 1, '{}')}),
	qr/^\d+$/, 'another system identifier still leases');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(max_system_blocks => 16)');

# ---- a member role renews only its own server lives ----------------------------

# Life tokens are readable by every member role (uidgen.server_life, for
# people); a role that may call registry_renew() must still not keep
# another role's blocks alive, nor lease blocks under its life.
my $life = (registry_status($member))[0]{life};
my $member_block = (split /,/, held_blocks($member))[0];
$registry->safe_psql('registry', q{
	CREATE ROLE intruder LOGIN;
	SELECT uid_registry_grant_member('intruder')});
my %intruder_calls = (
	renew => "SELECT * FROM uidgen.registry_renew(1, '$life', '1', 1, 'intruder', 1, '{}', ARRAY[$member_block]::bigint[],"
	  . " ARRAY[-1]::bigint[], '{}', '{}', ARRAY[NULL]::uuid[], '{}', ARRAY[NULL]::bigint[])",
	claim => "SELECT * FROM uidgen.registry_claim(1, '$life', '1', 1, 'intruder', 1, '{}')");
for my $call (sort keys %intruder_calls)
{
	my ($stdout, $stderr);
	$registry->psql('registry', $intruder_calls{$call}, stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-U', 'intruder', '-v', 'VERBOSITY=verbose' ]);
	like($stderr // '', qr/ERROR:  42501: uidgen server life .* belongs to another member role/,
		"another member role cannot $call under a server life not its own: 42501 (got: "
		  . ($stderr || "no error; returned $stdout") . ')');
}
is($registry->safe_psql('registry', "SELECT member_role FROM uidgen.server_life WHERE life = '$life'"),
	$registry->safe_psql('registry', 'SELECT current_user'), 'the life stays its member role\'s');

# ---- releasing a gone server's blocks ---------------------------------------

$registry->safe_psql('registry', 'CREATE ROLE stranger LOGIN');
$err = psql_error($registry, 'registry', "SET ROLE stranger; SELECT uid_registry_release('$life')");
like($err, qr/ERROR:  42501: permission denied for function uid_registry_release/, 'only the owner releases blocks');
# The blocks leased to the life, read in the same session just before the
# release: the member's agent may lease a new block (under the same life) at
# any moment, before or after the release, so the checks below are about
# these blocks, not about whatever the life holds when they run.
my ($leased_blocks, $released) = split /\n/, $registry->safe_psql('registry', qq{
	SELECT string_agg(block::text, ',' ORDER BY block) FROM uidgen.worker_block WHERE life = '$life' AND status = 'leased';
	SELECT uid_registry_release('$life')});
cmp_ok($released, '>=', 1, "the owner releases the member's $released block(s)");
is($registry->safe_psql('registry', qq{
	SELECT string_agg(DISTINCT status, ',') FROM uidgen.server_lives WHERE life = '$life' AND block IN ($leased_blocks)}),
	'released', "the view shows them released (blocks $leased_blocks)");
# Every block the release took, those leased at the same time included.
my $released_blocks = $registry->safe_psql('registry',
	"SELECT string_agg(block::text, ',' ORDER BY block) FROM uidgen.worker_block WHERE life = '$life' AND status = 'released'");
is($registry->safe_psql('registry', qq{
	SELECT bool_and(reusable_after >= lease_expires_at) FROM uidgen.worker_block WHERE block IN ($released_blocks)}),
	't', 'they return to the pool only after their lease ends (plus max_borrow)');
# The member can no longer renew them: it drops them at its next renewal
# and issues from blocks still leased to it.
$member->poll_query_until('postgres', "SELECT count(*) = 0 FROM uidgen.registry_status WHERE block IN ($released_blocks)")
  or die "the member kept its released blocks $released_blocks";
pass("the member dropped its released blocks ($released_blocks)");
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'and issues from blocks leased anew');
# Whatever blocks it holds now (it leased at least one anew to issue):
# leased to it, none of the released ones.
my $blocks = held_blocks($member);
is($registry->safe_psql('registry', "SELECT count(*) FROM uidgen.worker_block WHERE block IN ($blocks)"
	. " AND (life <> '$life' OR status <> 'leased')"), '0', "every block it holds ($blocks) is leased to it");

done_testing();
