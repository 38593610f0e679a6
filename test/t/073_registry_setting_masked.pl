# uidgen.registry may hold a password.  GUC_SUPERUSER_ONLY lets roles with
# pg_read_all_settings (pg_monitor among them) read it: for them SHOW,
# current_setting() and pg_settings mask the secrets and show the rest.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# No registry answers at this port: the agent only fails to connect.
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $node = new_uidgen_node('registry_masked', conf => ["shared_preload_libraries = 'uidgen'",
	"uidgen.registry = 'host=127.0.0.1 port=$port dbname=registry user=member password=''s3cr et'' sslpassword=k3y application_name=fleet'"]);
$node->safe_psql('postgres', 'CREATE ROLE monitor LOGIN IN ROLE pg_monitor; CREATE ROLE nobody LOGIN');

like($node->safe_psql('postgres', 'SHOW uidgen.registry'), qr/password='s3cr et'/,
	'a superuser sees the value as set');

for my $query ('SHOW uidgen.registry', "SELECT current_setting('uidgen.registry')",
	"SELECT setting FROM pg_settings WHERE name = 'uidgen.registry'")
{
	my $shown = $node->safe_psql('postgres', "SET ROLE monitor; $query");
	unlike($shown, qr/s3cr|k3y/, "pg_monitor does not see the secrets in: $query");
	my %shown = $shown =~ /(\w+)='([^']*)'/g;
	is_deeply(\%shown, { host => '127.0.0.1', port => $port, dbname => 'registry', user => 'member',
			password => '********', sslpassword => '********', application_name => 'fleet' },
		"pg_monitor sees every other keyword, and that the secrets are set, in: $query");
}

like(psql_error($node, 'postgres', 'SET ROLE nobody; SHOW uidgen.registry'), qr/42501/,
	'a role without pg_read_all_settings sees nothing');

$node->stop;
done_testing();
