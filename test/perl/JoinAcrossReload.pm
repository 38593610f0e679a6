# JoinAcrossReload: the scenario of tests 096 (scope backend) and 097 (scope
# server): a statement that runs across the reload setting uidgen.registry
# (INV-19 of docs/design.md).  Its worker was claimed without a registry, a
# number of the database's own numbering that the registry may grant to
# another database of the same server.  Once the server's agent works for the
# registry, the statement issues nothing more under that worker: in scope
# backend it stops (08006) and the session's next command claims from the
# registry; in scope server its keeper leaves and the statement goes on under
# its successor's grant, its IDs still increasing.  Before, the worker went on
# until a database joined and its reservation next needed a raise (the review
# counted 5,893 IDs after the reload over 25 s, 373 of them also issued by
# another database of the server under its first grant).  On the code before
# (dd5d0ea), scope backend: 47,700 IDs after the agent was ready, 29,175 of
# them also issued by database other; scope server: none here, since its
# keeper already left at the reload's signal (a backend's cached chunk or
# borrowed private worker, which this test does not hold, went on to its
# reservation).
package JoinAcrossReload;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;
use Exporter 'import';

our @EXPORT = qw(statement_across_join);

# Runs the scenario in scope $scope ('backend' or 'server') on a member and a
# registry of its own, with its assertions.
sub statement_across_join
{
	my ($scope) = @_;
	my $registry = new_registry_node("registry_$scope", member => 0, max_borrow => '2s');
	my $member = new_uidgen_node("member_$scope", scope => $scope,
		conf => [ "shared_preload_libraries = 'uidgen'", "uidgen.max_borrow = '2s'" ]);
	my $ids = 'CREATE TABLE ids (n bigserial, id bigint, source text, at timestamptz)';
	$member->safe_psql('postgres', $ids);
	$member->safe_psql('postgres', 'CREATE DATABASE other');
	$member->safe_psql('other', "CREATE EXTENSION uidgen; $ids");

	# A session of database postgres whose statement commits as it goes,
	# started before the server has a registry (so it never processes the
	# reload), then takes one more ID in a command of its own.
	my $file = $member->basedir . '/statement.sql';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh q{
		DO $$ DECLARE t0 timestamptz := clock_timestamp();
		BEGIN
			WHILE clock_timestamp() < t0 + interval '40 s' AND NOT EXISTS (SELECT FROM ids WHERE source = 'stop') LOOP
				INSERT INTO ids (id, source, at) SELECT uid_next(), 'old', clock_timestamp() FROM generate_series(1, 100);
				COMMIT;
			END LOOP;
		END $$;
		SELECT 'next', uid_next();
	};
	close $fh;
	my ($out, $err) = ('', '');
	my $old = IPC::Run::start(
		[ 'psql', '-X', '-At', '-v', 'VERBOSITY=verbose', '-d', $member->connstr('postgres'), '-f', $file ],
		'>', \$out, '2>', \$err);
	$member->poll_query_until('postgres', q{SELECT count(*) > 0 FROM ids WHERE source = 'old'})
	  or die 'the old statement did not get going';
	my $old_worker = $member->safe_psql('postgres', q{SELECT min(uid_worker_id(id)) FROM ids WHERE source = 'old'});

	# The reload: the server works for the registry from now on.
	$member->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
	$member->reload;
	wait_for_registry($member);
	my $ready_at = $member->safe_psql('postgres', 'SELECT clock_timestamp()');

	# Database other joins and writes on.
	my $writer = start_sql_loop($member,
		q{DO $$ BEGIN LOOP INSERT INTO ids (id, source, at) SELECT uid_next(), 'other', clock_timestamp() FROM generate_series(1, 100); COMMIT; END LOOP; END $$},
		db => 'other', until => q{SELECT count(*) > 0 FROM ids});

	# Long enough for a worker that went on to reach a raise of its
	# reservation (max_borrow, 2 s) after other's join: 4 s of other's IDs.
	$member->poll_query_until('other', q{SELECT max(at) > min(at) + interval '4 s' FROM ids})
	  or die 'database other did not write for 4 s';
	$member->safe_psql('postgres', q{INSERT INTO ids (source) VALUES ('stop')});
	$old->finish;
	$member->safe_psql('other', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%DO $$%'});
	finish_sql_loops($writer);

	# The statement's IDs of the old worker: at or below the join floor of
	# database postgres, or all of them while it has not joined.  Its first
	# grant (in scope server, its keeper's) may have the same number.
	my $pre_registry = q{source = 'old' AND (id >> (SELECT worker_bits + seq_bits FROM uidgen.config))
		<= coalesce((SELECT join_floor FROM uidgen.membership), 9223372036854775807)};
	my $after = $member->safe_psql('postgres', "SELECT count(*) FROM ids WHERE $pre_registry AND at > '$ready_at'");
	my $old_ids = $member->safe_psql('postgres', q{SELECT id FROM ids WHERE source = 'old'});
	my $other_ids = $member->safe_psql('other', 'SELECT id FROM ids');
	my $duplicates = duplicate_ids($old_ids, $other_ids);
	note("scope $scope: $after IDs of worker $old_worker after the agent was ready, $duplicates also issued by "
		  . 'database other, which was granted workers '
		  . $member->safe_psql('other', q{SELECT string_agg(DISTINCT uid_worker_id(id)::text, ',') FROM ids}));
	is($after, '0', "scope $scope: no ID under worker $old_worker after the agent was ready");
	is($duplicates, 0, "scope $scope: no ID of the statement was issued by database other too");

	# The session's IDs increase across the end of the old worker.
	my ($next) = $out =~ /^next\|(\d+)$/m;
	ok(defined $next, "scope $scope: the session's next command issued") or diag("stdout: $out\nstderr: $err");
	my $max_old = $member->safe_psql('postgres', q{SELECT max(id) FROM ids WHERE source = 'old'});
	cmp_ok($next // 0, '>', $max_old, "scope $scope: above the statement's last ID");
	is($member->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT id <= lag(id) OVER (ORDER BY n) AS back FROM ids WHERE source = 'old') s WHERE back}),
		'0', "scope $scope: the statement's IDs strictly increase");

	if ($scope eq 'backend')
	{
		like($err, qr/ERROR:  08006: uidgen worker $old_worker was claimed before this server joined a registry/,
			'scope backend: the statement stopped with 08006');
	}
	else
	{
		unlike($err, qr/ERROR/, 'scope server: the statement went on without an error');
		cmp_ok($member->safe_psql('postgres', "SELECT count(*) FROM ids WHERE source = 'old' AND NOT ($pre_registry)"),
			'>', 0, 'scope server: the statement went on under a grant');
	}
	$member->stop;
	$registry->stop;
	return;
}

1;
