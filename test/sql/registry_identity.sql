-- A registry's identity: a random UUID drawn by CREATE EXTENSION, one row.
-- A new registry leases nothing for registry_holder_bound() after its
-- creation (it may replace a lost one whose members still issue), unless
-- its owner says no earlier fleet exists.
SET client_min_messages = warning;
SELECT count(*) AS rows, bool_and(registry_id IS NOT NULL) AS has_id,
       bool_and(fleet_started_at IS NULL) AS not_started
  FROM uidgen.registry_identity;
-- Not a sequence: version 4, random.
SELECT substr(registry_id::text, 15, 1) AS version FROM uidgen.registry_identity;
-- Not dumped: a restored dump is another registry.
SELECT count(*) AS dumped FROM pg_extension
 WHERE extname = 'uidgen' AND 'uidgen.registry_identity'::regclass = ANY (extconfig);
SELECT uidgen.registry_holder_bound();
SELECT quarantined, quarantine_until = (SELECT created_at + uidgen.registry_holder_bound()
                                          FROM uidgen.registry_identity) AS until_bound
  FROM uidgen.registry_check_state();
SELECT uid_registry_start_fleet() = registry_id AS returns_identity FROM uidgen.registry_identity;
SELECT fleet_started_at IS NOT NULL AS started FROM uidgen.registry_identity;
SELECT quarantined FROM uidgen.registry_check_state();
-- Running it again changes nothing.
SELECT uid_registry_start_fleet() = registry_id AS same_identity FROM uidgen.registry_identity;
-- Moving needs a registry.
SELECT regress.try($$SELECT uid_registry_move()$$);
