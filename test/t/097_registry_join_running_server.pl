# A statement that runs across the reload setting uidgen.registry, in scope
# server (INV-19 of docs/design.md): test/perl/JoinAcrossReload.pm.
use strict;
use warnings;

use Test::More;
use JoinAcrossReload;

statement_across_join('server');

done_testing();
